/*-------------------------------------------------------------------------
 *
 * validate.h
 *	  Argument and JSON-shape validation (docs/errors.md, "What is checked").  Everything here
 *	  runs before an operation writes anything; each failure is an
 *	  ereport(ERROR) with 22004 (a required NULL) or 22023 (bad shape,
 *	  number or size).
 *
 * IDENTIFICATION
 *	  src/validate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_VALIDATE_H
#define A2_VALIDATE_H

#include "fmgr.h"
#include "utils/jsonb.h"

#include "json_out.h"			/* a2_json_field, a2_json_int64 */
#include "pg_compat.h"			/* pg_noreturn */

/* One element of an append or complete batch, validated and normalized. */
typedef struct A2EventInput
{
	char	   *id;				/* NULL: generate one */
	char	   *type;
	Jsonb	   *payload;		/* JSON null when absent */
	Jsonb	   *cause;			/* normalized {index, attempt[, batchSize]}, or NULL */
	int64		cause_index;
	int64		cause_attempt;
	char	   *lane;			/* NULL: no lane */
	bool		settled;
	bool		has_not_before; /* notBefore given (docs/semantics.md, "Scheduling") */
	int64		not_before;		/* epoch ms, when has_not_before */
	char	   *queue;			/* NULL: 'default' (stored as NULL) */
	int32		priority;		/* 0: default (stored as NULL) */
	char	   *concurrency_key;	/* NULL: no key */
	/* waitFor (docs/semantics.md, "Waits"; src/waits.h) */
	Jsonb	   *wait_types;		/* the awaited types, a JSON array; NULL: no wait */
	bool		has_wait_timeout;
	int64		wait_timeout_ms;
	Jsonb	   *wait_stored;	/* the wait_for column (a2_waits_prepare) */
	int64		wait_gate;		/* its not_before while waiting (a2_waits_prepare) */
} A2EventInput;

/* The most types one waitFor may name (docs/json.md). */
#define A2_MAX_WAIT_TYPES	100

/*
 * The largest waitFor.timeoutMs accepted before the clock is read: the span
 * of the times a2 stores (±8.64e15 ms).  A smaller one that takes now past
 * the last of them is refused when the event is inserted (22023 either way).
 */
#define A2_MAX_WAIT_TIMEOUT_MS	INT64CONST(17280000000000000)

/* The bounds of an event's "priority" (docs/json.md). */
#define A2_MIN_PRIORITY (-32768)
#define A2_MAX_PRIORITY 32767

/* Required arguments: NULL raises 22004 naming the argument. */
extern void a2_require_arg(FunctionCallInfo fcinfo, int argno, const char *name);

/* A required name (session id, holder, ...): non-empty, at most 1024 bytes. */
extern char *a2_name_arg(FunctionCallInfo fcinfo, int argno, const char *name);

/* A required integer argument >= min (a nullable one: check PG_ARGISNULL first). */
extern int64 a2_int8_arg(FunctionCallInfo fcinfo, int argno, const char *name, int64 min);
extern int64 a2_int4_arg(FunctionCallInfo fcinfo, int argno, const char *name, int64 min);
extern void a2_check_min(int64 value, int64 min, const char *name);

/* A required jsonb argument that must be an array; returns its length. */
extern Jsonb *a2_array_arg(FunctionCallInfo fcinfo, int argno, const char *name,
						   int *count);

/* Report a malformed argument: 22023 with a detail naming the JSON path. */
pg_noreturn extern void a2_invalid(const char *argname, const char *session_id,
								   const char *fmt,...) pg_attribute_printf(3, 4);

/*
 * Refuse (22023) any key of a JSON object not in `accepted`, a
 * NULL-terminated list; the message names the key and `path` (the
 * element), the hint lists the accepted keys.
 */
extern void a2_json_check_keys(JsonbContainer *obj, const char *const *accepted,
							   const char *argname, const char *session_id,
							   const char *path);

/* Element i of a JSON array, which must be an object (else 22023). */
extern JsonbContainer *a2_json_object_elem(JsonbContainer *arr, int i,
										   const char *argname,
										   const char *session_id);

/* Integer / name fields with range checks; `path` names them in errors. */
extern int64 a2_json_int_field(JsonbValue *v, int64 min, const char *argname,
							   const char *session_id, const char *path);
extern char *a2_json_name_field(JsonbValue *v, const char *argname,
								const char *session_id, const char *path);

/*
 * Validate an append (for_complete = false) or complete batch.  Returns a
 * palloc'd array of *count inputs.
 */
extern A2EventInput *a2_parse_events(Jsonb *events, const char *session_id,
									 bool for_complete, int *count);

/* Fail with Z2001 if two inputs carry the same id. */
extern void a2_check_duplicate_ids(A2EventInput *events, int count,
								   const char *session_id);

#endif							/* A2_VALIDATE_H */
