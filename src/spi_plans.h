/*-------------------------------------------------------------------------
 *
 * spi_plans.h
 *	  The SPI plan cache.  Each module declares its statements as static
 *	  A2Statement values; the SQL names the extension's tables as
 *	  @extschema@.a2_events and is prepared once per backend (SPI_keepplan)
 *	  on first use.  a2_spi_begin()/a2_spi_end() bracket every operation
 *	  (they connect SPI).  Statement text names everything schema-qualified
 *	  (relations, functions, OPERATOR(pg_catalog.=), types), so nothing a
 *	  caller puts on search_path (or in pg_temp) can change what it
 *	  resolves to, and no search_path is imposed on user code it fires.
 *
 * IDENTIFICATION
 *	  src/spi_plans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SPI_PLANS_H
#define A2_SPI_PLANS_H

#include "executor/spi.h"
#include "utils/jsonb.h"

#define A2_MAX_STMT_ARGS	16

/*
 * In a statement's text: the high-water mark of session $1 if it was
 * dropped (a bigint, NULL otherwise); see expand_schema() in spi_plans.c.
 */
#define A2_RETIRED_MARK_TOKEN "@retired_last_index@"

/*
 * In a statement's text: A2_NB("THEN", "ELSE") is THEN once a2_events has
 * 0.3.0's not_before column, ELSE before (see expand_conditionals()).
 */
#define A2_NB_OPEN "{{nb:"
#define A2_NB(then_sql, else_sql) A2_NB_OPEN then_sql "|" else_sql "}}"

typedef struct A2Statement
{
	const char *sql;			/* text with @extschema@ placeholders */
	/*
	 * Distributed mode (a2_events is a Citus table): the text to run there
	 * instead, when `sql` is not a single-shard router query.  NULL: `sql`.
	 */
	const char *dist_sql;
	/*
	 * Names no distributed table (a Citus shard, a catalog): prepared with a
	 * generic plan in distributed mode too.
	 */
	bool		local_only;
	/*
	 * Distributed mode: $session_param (1-based; 0 none) is a session id,
	 * and the statement reads and writes only that session's rows of the
	 * session-keyed tables.  Once the transaction has pinned the session to
	 * a shard of this node (shard_pin.h), the statement runs straight on
	 * the shard tables with a kept generic plan: its dist_sql if it has one,
	 * else its sql.
	 */
	int			session_param;
	int			nargs;
	Oid			argtypes[A2_MAX_STMT_ARGS];
	/* filled in by the cache */
	SPIPlanPtr	plan;
	uint64		generation;
} A2Statement;

extern void a2_plans_init(void);

/*
 * Give a statement whose text is built at run time (sql NULL in its
 * initializer) new text; copied to TopMemoryContext.  Its plan is replaced
 * on next use when the text changed (the old one retires at pre-commit).
 */
extern void a2_set_statement_text(A2Statement *stmt, const char *sql);

/*
 * Distributed mode: a2_events is a Citus distributed table.  Looked up with
 * the schema and kept until a2_events' relcache entry is invalidated (Citus
 * invalidates it when it distributes the table).  In this mode statements
 * use their dist_sql text and custom plans, which Citus can route to one
 * shard; a2_distributed() lets a module pick a different code path.
 */
extern bool a2_distributed(void);

/* a2_events has 0.3.0's not_before column (scheduling, SPEC 7.1) */
extern bool a2_has_not_before(void);

/* OID of one of the extension's relations (InvalidOid if missing). */
extern Oid	a2_relid(const char *relname);

/* Connect SPI; returns the caller's context. */
extern MemoryContext a2_spi_begin(void);
extern void a2_spi_end(void);

/*
 * Execute a statement; errors unless SPI returns `expected`.  Returns
 * SPI_processed.
 */
extern uint64 a2_exec(A2Statement *stmt, Datum *values, const char *nulls,
					  bool read_only, int expected);

/*
 * Execute a writing statement that must see the latest committed state of
 * the session (the caller holds the session lock), even under REPEATABLE
 * READ or SERIALIZABLE.
 */
extern uint64 a2_exec_latest(A2Statement *stmt, Datum *values,
							 const char *nulls, int expected);

/* Column helpers over SPI_tuptable */
extern Datum a2_col(uint64 row, int col, bool *isnull);
extern int64 a2_col_int64(uint64 row, int col);
extern char *a2_col_text(uint64 row, int col);	/* NULL when SQL NULL */
extern bool a2_col_bool(uint64 row, int col);



/* Array parameters: NULL entries (or nulls[i], for int8) become SQL NULL elements. */
extern Datum a2_text_array(char **values, int count);
extern Datum a2_jsonb_array(Jsonb **values, int count);
extern Datum a2_int8_array(int64 *values, bool *nulls, int count);
extern Datum a2_bool_array(bool *values, int count);

#endif							/* A2_SPI_PLANS_H */
