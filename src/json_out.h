/*-------------------------------------------------------------------------
 *
 * json_out.h
 *	  The jsonb primitives: building the results (scalar helpers, ISO-8601
 *	  timestamps as JavaScript's toISOString() writes them, StoredEvent /
 *	  Event objects from a2_events rows selected with A2_EVENT_COLUMNS) and
 *	  the two field readers everything else builds on.  It depends on no
 *	  other a2 module but clock.h (a wait's timeout); validate.h builds on it.
 *
 *	  Every helper takes a key: non-NULL pushes a key/value pair into the
 *	  open object, NULL pushes an element into the open array.
 *
 * IDENTIFICATION
 *	  src/json_out.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_JSON_OUT_H
#define A2_JSON_OUT_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"

#include "pg_compat.h"

/*
 * The select list every event-returning statement starts with, its column
 * names (statements.h checks them), and the 1-based column numbers in it.
 * A2_EVENT_COLUMNS_0_1 serves objects older than 0.3.0, which have no
 * not_before column; A2_EVENT_COLUMNS_0_3 objects older than 0.4.0, which
 * have no queue, priority, concurrency_key, cancelled_at, cancel_reason,
 * wait_for and wait_result: the missing columns are selected as NULL.
 */
#define A2_EVENT_COLUMNS_BASE \
	"e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at, " \
	"e.cause, e.lane, e.processed_at, e.processed_by_attempt, " \
	"e.returned_event_ids, e.first_claimed_at, e.last_claimed_at, " \
	"e.attempt_count, e.failure_count, e.last_failed_at, " \
	"e.last_failed_attempt, e.last_error, e.failed_at, e.claim_holder, " \
	"e.claim_expires_at, "
#define A2_EVENT_COLUMNS_0_4_ONLY \
	", NULL::pg_catalog.text AS queue, NULL::pg_catalog.int4 AS priority, " \
	"NULL::pg_catalog.text AS concurrency_key, " \
	"NULL::pg_catalog.int8 AS cancelled_at, NULL::pg_catalog.text AS cancel_reason, " \
	"NULL::pg_catalog.jsonb AS wait_for, NULL::pg_catalog.jsonb AS wait_result"
#define A2_EVENT_COLUMNS A2_EVENT_COLUMNS_BASE \
	"e.not_before, e.queue, e.priority, e.concurrency_key, e.cancelled_at, e.cancel_reason, " \
	"e.wait_for, e.wait_result"
#define A2_EVENT_COLUMNS_0_3 A2_EVENT_COLUMNS_BASE "e.not_before" A2_EVENT_COLUMNS_0_4_ONLY
#define A2_EVENT_COLUMNS_0_1 A2_EVENT_COLUMNS_BASE "NULL::pg_catalog.int8 AS not_before" \
	A2_EVENT_COLUMNS_0_4_ONLY

#define A2_EVENT_COLUMN_NAMES \
	"session_id", "idx", "event_type", "payload", "event_id", "created_at", \
	"cause", "lane", "processed_at", "processed_by_attempt", \
	"returned_event_ids", "first_claimed_at", "last_claimed_at", \
	"attempt_count", "failure_count", "last_failed_at", \
	"last_failed_attempt", "last_error", "failed_at", "claim_holder", \
	"claim_expires_at", "not_before", "queue", "priority", "concurrency_key", \
	"cancelled_at", "cancel_reason", "wait_for", "wait_result"

typedef enum A2EventCol
{
	A2C_SESSION_ID = 1,
	A2C_IDX,
	A2C_EVENT_TYPE,
	A2C_PAYLOAD,
	A2C_EVENT_ID,
	A2C_CREATED_AT,
	A2C_CAUSE,
	A2C_LANE,
	A2C_PROCESSED_AT,
	A2C_PROCESSED_BY_ATTEMPT,
	A2C_RETURNED_EVENT_IDS,
	A2C_FIRST_CLAIMED_AT,
	A2C_LAST_CLAIMED_AT,
	A2C_ATTEMPT_COUNT,
	A2C_FAILURE_COUNT,
	A2C_LAST_FAILED_AT,
	A2C_LAST_FAILED_ATTEMPT,
	A2C_LAST_ERROR,
	A2C_FAILED_AT,
	A2C_CLAIM_HOLDER,
	A2C_CLAIM_EXPIRES_AT,
	A2C_NOT_BEFORE,				/* 0.3.0; NULL on 0.2.0 objects */
	A2C_QUEUE,					/* 0.4.0; NULL on older objects */
	A2C_PRIORITY,
	A2C_CONCURRENCY_KEY,
	A2C_CANCELLED_AT,			/* 0.4.0 (a2_cancel); NULL on older objects */
	A2C_CANCEL_REASON,
	A2C_WAIT_FOR,				/* 0.4.0 (durable waits); NULL on older objects */
	A2C_WAIT_RESULT,
	A2C_NUM_EVENT_COLS = A2C_WAIT_RESULT
} A2EventCol;

typedef a2_jsonb_builder A2Json;	/* the builder being filled (pg_compat.h) */

extern void a2j_begin_object(A2Json *js, const char *key);
extern JsonbValue *a2j_end_object(A2Json *js);
extern void a2j_begin_array(A2Json *js, const char *key);
extern JsonbValue *a2j_end_array(A2Json *js);

extern void a2j_string(A2Json *js, const char *key, const char *value);
extern void a2j_int(A2Json *js, const char *key, int64 value);
extern void a2j_bool(A2Json *js, const char *key, bool value);
extern void a2j_null(A2Json *js, const char *key);
extern void a2j_iso(A2Json *js, const char *key, int64 epoch_ms);
extern void a2j_jsonb(A2Json *js, const char *key, Jsonb *value);

/*
 * A StoredEvent's fields by A2EventCol, filled from a row or by the code
 * that inserted the event, and printed by the one writer below (so every
 * result agrees key for key).  present[col] false: JSON null, except the
 * 0.4.0 keys and notBefore, which are absent (cancelReason is null on a
 * cancelled event).  The cause is kept parsed.  For a waiting event
 * (docs/semantics.md, "Waits") a2_stored_from_row already holds the
 * printed shapes: notBefore the event's own, json[A2C_WAIT_FOR] the public
 * {types, timeoutMs}, json[A2C_WAIT_RESULT] the result or
 * {"timedOut": true} derived at the store clock.
 */
typedef struct A2StoredEvent
{
	bool		present[A2C_NUM_EVENT_COLS + 1];
	const char *text[A2C_NUM_EVENT_COLS + 1];
	int64		num[A2C_NUM_EVENT_COLS + 1];
	Jsonb	   *json[A2C_NUM_EVENT_COLS + 1];
	int64		cause_index;
	int64		cause_attempt;
	int64		cause_batch;	/* < 1: absent */
} A2StoredEvent;

/* From a row of A2_EVENT_COLUMNS; an invalid stored cause is XX001. */
extern void a2_stored_from_row(A2StoredEvent *ev, HeapTuple tuple,
							   TupleDesc desc, bool full);

/* Set the cause from normalized {index, attempt[, batchSize]} (NULL: none). */
extern void a2_stored_set_cause(A2StoredEvent *ev, Jsonb *cause);

/* Print a StoredEvent (full) or an Event (!full). */
extern void a2j_stored_event(A2Json *js, const char *key,
							 const A2StoredEvent *ev, bool full);

/* a StoredEvent (full) or an Event (!full) from a row of A2_EVENT_COLUMNS */
extern void a2j_event_row(A2Json *js, const char *key, HeapTuple tuple,
						  TupleDesc desc, bool full);

/*
 * Close the outermost container (a2j_end_* of the last open one) and
 * return the jsonb, allocated in `ctx`.
 */
extern Jsonb *a2j_finish(JsonbValue *root, MemoryContext ctx);

/* Format epoch milliseconds as YYYY-MM-DDTHH:MM:SS.mmmZ into buf[32]. */
extern void a2_format_iso(int64 epoch_ms, char *buf);

/* Build {index, attempt[, batchSize]} as jsonb (batch_size < 1: absent). */
extern Jsonb *a2_make_cause(int64 index, int64 attempt, int64 batch_size);

/* A JSON number that is an integer (2.0 counts) fitting int64. */
extern bool a2_json_int64(const JsonbValue *v, int64 *result);

/*
 * Field lookup in a JSON object: false when absent or JSON null (docs/json.md: a
 * null optional field means absent).
 */
extern bool a2_json_field(JsonbContainer *obj, const char *key, JsonbValue *out);

#endif							/* A2_JSON_OUT_H */
