/*-------------------------------------------------------------------------
 *
 * statements.h
 *	  The SQL a2 runs: every statement is an A2Statement, declared next to
 *	  the code that runs it, listed in one registry (statement_groups.h),
 *	  and shown expanded, variant by variant, by SELECT * FROM
 *	  a2_statements() (the regression test "statements" holds that
 *	  output, so a change to any text is a SQL diff in review).
 *
 *	  A statement has one text per mode it runs in and per version of the
 *	  installed objects that needs its own text; no text is assembled at
 *	  run time except @extschema@ (the extension's schema) and, in shard
 *	  mode, each table's shard name.  Modes:
 *
 *	    single   one PostgreSQL server; a kept generic plan.
 *	    routed   distributed mode, through Citus's planner (a custom plan,
 *	             so Citus can route by the session id).
 *	    local    distributed mode, naming no distributed table (Citus
 *	             catalogs, shard tables by name); a kept generic plan.
 *	    shard    distributed mode, for a session the transaction pinned to
 *	             a shard group of this node (citus_shards.h): the text with
 *	             each table named by its shard; a kept generic plan per
 *	             shard group.
 *
 *	  Each text says which modes it serves (a bit mask), so the registry
 *	  shows exactly the text each mode runs.  Which mode: single on one
 *	  server; in distributed mode, shard for a pinned session when the
 *	  statement has a shard text, else local when it has a local text,
 *	  else routed.  Of the texts for that mode, the one with the greatest
 *	  `since` not newer than the installed objects (extension.h).
 *
 *	  Parameters are named ($1 is params[0]) and bound through A2Args,
 *	  which checks each value's type against the declaration and that every
 *	  parameter was bound; the text's $N are checked against the
 *	  declaration when the statement is prepared.  Result columns are read
 *	  by the enum each module declares for its statement, and the names
 *	  the statement declares are checked against the first result.
 *
 * IDENTIFICATION
 *	  src/statements.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_STATEMENTS_H
#define A2_STATEMENTS_H

#include "executor/spi.h"

#include "extension.h"

#define A2_MAX_STMT_ARGS	16
#define A2_MAX_TEXTS		10

/* The modes a text serves: a bit mask. */
#define A2_SINGLE	0x01
#define A2_ROUTED	0x02
#define A2_LOCAL	0x04
#define A2_SHARD	0x08
#define A2_MODE_COUNT 4
/* a session-keyed statement of an operation: every mode but local */
#define A2_EVERYWHERE (A2_SINGLE | A2_ROUTED | A2_SHARD)

typedef struct A2Text
{
	int			modes;			/* A2_SINGLE | ... */
	A2Objects	since;			/* the oldest installed objects it serves */
	const char *sql;			/* NULL ends the list */
} A2Text;

typedef struct A2Param
{
	const char *name;
	Oid			type;
} A2Param;

typedef struct A2Statement
{
	const char *name;			/* "claim.eligible": unique */
	A2Text		texts[A2_MAX_TEXTS];
	int			nparams;
	A2Param		params[A2_MAX_STMT_ARGS];

	/*
	 * Distributed mode: params[session_param - 1] is a session id and the
	 * statement reads and writes only that session's rows of the
	 * session-keyed tables, so it may run in shard mode.  0: it may not.
	 */
	int			session_param;
	/* result column names, in order, or NULL: not checked */
	const char *const *columns;

	/*
	 * Its writes to a2_events make entries of a2_events_default_available
	 * only at keys its caller reports to a2_walk_mark_lower() (or none):
	 * any other write to a2_events drops the walk marks (walk_mark.h).
	 */
	bool		walk_keys;

	/*
	 * The one index its plan reads its table through (plan_floor.c), or
	 * NULL: the planner chooses.  For the probes whose index is the point.
	 * Only over objects at least index_since: the index of that name may
	 * exist before its text is used (a2-prepare builds 0.4.0's indexes
	 * while 0.3.0's texts run), and must not be forced on an older text.
	 */
	const char *index;
	A2Objects	index_since;

	/*
	 * Text set at run time (a2_set_statement_text): for statements whose
	 * text depends on the node's shards; texts[] gives a sample to show.
	 */
	bool		dynamic;

	/* filled in by statements.c */
	const char *dynamic_sql;
	SPIPlanPtr	plan;
	uint64		generation;
	bool		columns_checked;
	bool		registered;
} A2Statement;

/* texts[] entries */
#define A2_TEXT(modes, since, sql) {(modes), (since), (sql)}
#define A2_PARAM(name, type) {(name), (type)}
#define A2_COLUMNS(...) ((const char *const[]) {__VA_ARGS__, NULL})

/*
 * One module's statements, for the registry: A2_STATEMENT_GROUP(claim,
 * &claim_eligible, ...) defines a2_statements_claim, which
 * statement_groups.h lists.
 */
#define A2_STATEMENT_GROUP(group, ...) \
	extern A2Statement *const a2_statements_##group[]; \
	A2Statement *const a2_statements_##group[] = {__VA_ARGS__, NULL}

/* The arguments of one execution. */
typedef struct A2Args
{
	const A2Statement *stmt;
	Datum		values[A2_MAX_STMT_ARGS];
	char		nulls[A2_MAX_STMT_ARGS + 1];
	uint32		bound;			/* bit i: params[i] has a value */
} A2Args;

extern void a2_args_init(A2Args *args, const A2Statement *stmt);

/* Bind parameter `param` (1-based, as $param in the text). */
extern void a2_bind(A2Args *args, int param, Oid type, Datum value);
extern void a2_bind_null(A2Args *args, int param);
extern void a2_bind_text(A2Args *args, int param, const char *value);	/* NULL: SQL NULL */
extern void a2_bind_int8(A2Args *args, int param, int64 value);
extern void a2_bind_int4(A2Args *args, int param, int32 value);
extern void a2_bind_bool(A2Args *args, int param, bool value);

extern void a2_statements_init(void);

/*
 * Execute; errors unless SPI returns `expected`.  Returns SPI_processed.
 * Every parameter must be bound.
 */
extern uint64 a2_exec(A2Args *args, bool read_only, int expected);

/*
 * Execute a writing statement that must see the latest committed state of
 * the session (the caller holds the session lock), even under REPEATABLE
 * READ or SERIALIZABLE.
 */
extern uint64 a2_exec_latest(A2Args *args, int expected);

/*
 * Give a dynamic statement new text; copied to TopMemoryContext.  Its plan
 * is replaced on next use when the text changed (the old one retires at
 * pre-commit).
 */
extern void a2_set_statement_text(A2Statement *stmt, const char *sql);

/* a2_has_not_before(): the installed objects have a2_events.not_before */
static inline bool
a2_has_not_before(void)
{
	return a2_installed_objects() >= A2_OBJECTS_0_3;
}

/* a2_has_dispatch(): a2_events has 0.4.0's queue, priority, concurrency_key */
static inline bool
a2_has_dispatch(void)
{
	return a2_installed_objects() >= A2_OBJECTS_0_4;
}

#endif							/* A2_STATEMENTS_H */
