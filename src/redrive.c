/*-------------------------------------------------------------------------
 *
 * redrive.c
 *	  a2_redrive(session_id, event_index) and a2_redrive(session_id): put
 *	  dead-lettered events back in play.
 *
 *	  A redrive clears failed_at and the lease and starts a new failure
 *	  budget: failure_count goes back to 0, while last_error,
 *	  last_failed_at and last_failed_attempt keep the history of the death.
 *	  attempt_count is kept, so the next claim is a new attempt and the
 *	  attempt fence still refuses the dead one.  lane_ready is untouched: a
 *	  dead-lettered event is the head of its lane, and stays so, its lane
 *	  blocked behind it until it is processed.  The event is claimable at
 *	  once.  Snapshot pins released at the dead-lettering are not restored.
 *
 *	  A redriven event that has not failed since (failure_count 0 and a
 *	  last_failed_at) is "already_redriven": a second redrive writes
 *	  nothing and succeeds.  Any other event that is not dead-lettered
 *	  (processed, or unfinished and never dead-lettered since its last
 *	  redrive) is refused with Z2004 (ERRCODE_A2_NOT_DEAD_LETTERED).
 *
 *	  Lock order: the session lock first, then the event rows in index
 *	  order (FOR UPDATE).  A redrive that changed something notifies like
 *	  an append does, with the session's greatest index, so listeners look
 *	  at the session again.
 *
 * IDENTIFICATION
 *	  src/redrive.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "json_out.h"
#include "notify.h"
#include "spi_plans.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_redrive);
PG_FUNCTION_INFO_V1(a2_redrive_session);

/* Column after A2_EVENT_COLUMNS in lock_event: redriven and not failed since */
#define COL_REDRIVEN	(A2C_NUM_EVENT_COLS + 1)

static A2Statement lock_event = {
	.sql = "SELECT " A2_EVENT_COLUMNS ","
	"       e.failure_count OPERATOR(pg_catalog.=) 0 AND e.last_failed_at IS NOT NULL"
	"  FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2 FOR UPDATE",
	.session_param = 1, .nargs = 2, .argtypes = {TEXTOID, INT8OID}
};

/* Dead letters of a session, locked in index order. */
static A2Statement lock_dead_letters = {
	.sql = "SELECT e.idx FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
	"   AND e.failed_at IS NOT NULL"
	" ORDER BY e.idx FOR UPDATE",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

/* The rows were locked by one of the statements above. */
static A2Statement redrive_listed = {
	.sql = "WITH redriven AS ("
	"  UPDATE @extschema@.a2_events e SET"
	"    failed_at = NULL, failure_count = 0,"
	"    claim_holder = NULL, claim_expires_at = NULL"
	A2_NB(", not_before = NULL", "")	/* SPEC 7.1: due at once */
	"   WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"
	"     AND e.processed_at IS NULL AND e.failed_at IS NOT NULL"
	"  RETURNING " A2_EVENT_COLUMNS
	") SELECT * FROM redriven ORDER BY idx",
	.session_param = 1, .nargs = 2, .argtypes = {TEXTOID, INT8ARRAYOID}
};

static A2Statement max_index = {
	.sql = "SELECT pg_catalog.max(e.idx) FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

/*
 * Redrive the listed (locked, dead-lettered) events.  Returns their number
 * and sets *rows to the redriven rows (A2_EVENT_COLUMNS, by index), which
 * live until SPI_finish.
 */
static uint64
redrive_events(const char *session_id, int64 *indexes, int count,
			   SPITupleTable **rows)
{
	Datum		values[2];
	uint64		n;

	values[0] = CStringGetTextDatum(session_id);
	values[1] = a2_int8_array(indexes, NULL, count);
	n = a2_exec_latest(&redrive_listed, values, NULL, SPI_OK_SELECT);
	*rows = SPI_tuptable;
	if (n > 0)
	{
		/* wake listeners as an append would: the session's greatest index */
		a2_exec_latest(&max_index, values, NULL, SPI_OK_SELECT);
		a2_notify_session(session_id, a2_col_int64(0, 1));
	}
	return n;
}

static void
not_dead_lettered(const char *session_id, int64 index, bool processed)
{
	ereport(ERROR,
			(errcode(ERRCODE_A2_NOT_DEAD_LETTERED),
			 errmsg("event %lld of session \"%s\" is not dead-lettered",
					(long long) index, session_id),
			 processed ?
			 errdetail("The event is processed.") :
			 errdetail("The event is unfinished and has not been dead-lettered since it was appended or last redriven."),
			 errhint("Only an event that a2_fail dead-lettered can be redriven.")));
}

static Jsonb *
redrive_one(const char *session_id, int64 index)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	Datum		values[2];
	bool		isnull;
	bool		processed,
				dead;
	SPITupleTable *row;
	Jsonb	   *result;

	a2_lock_session(session_id);
	values[0] = CStringGetTextDatum(session_id);
	values[1] = Int64GetDatum(index);
	if (a2_exec_latest(&lock_event, values, NULL, SPI_OK_SELECT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_A2_NOT_FOUND),
				 errmsg("no event at index %lld in session \"%s\"",
						(long long) index, session_id)));
	(void) a2_col(0, A2C_PROCESSED_AT, &isnull);
	processed = !isnull;
	(void) a2_col(0, A2C_FAILED_AT, &isnull);
	dead = !isnull;
	row = SPI_tuptable;

	a2j_begin_object(&js, NULL);
	if (!processed && dead)
	{
		if (redrive_events(session_id, &index, 1, &row) != 1)
			elog(ERROR, "redrive of locked dead letter %lld in session \"%s\" updated no row",
				 (long long) index, session_id);
		a2j_string(&js, "outcome", "redriven");
	}
	else if (!processed && a2_col_bool(0, COL_REDRIVEN))
		a2j_string(&js, "outcome", "already_redriven");
	else
		not_dead_lettered(session_id, index, processed);
	a2j_event_row(&js, "event", row->vals[0], row->tupdesc, true);
	result = a2j_finish(a2j_end_object(&js), caller);
	a2_spi_end();
	return result;
}

static Jsonb *
redrive_session(const char *session_id)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	Datum		value;
	uint64		n;
	int64	   *indexes;
	SPITupleTable *rows;
	Jsonb	   *result;

	a2_lock_session(session_id);
	value = CStringGetTextDatum(session_id);
	n = a2_exec_latest(&lock_dead_letters, &value, NULL, SPI_OK_SELECT);
	indexes = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 r = 0; r < n; r++)
		indexes[r] = a2_col_int64(r, 1);

	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "events");
	if (n > 0)
	{
		n = redrive_events(session_id, indexes, (int) n, &rows);
		for (uint64 r = 0; r < n; r++)
			a2j_event_row(&js, NULL, rows->vals[r], rows->tupdesc, true);
	}
	a2j_end_array(&js);
	result = a2j_finish(a2j_end_object(&js), caller);
	a2_spi_end();
	return result;
}

Datum
a2_redrive(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	int64		index = a2_int8_arg(fcinfo, 1, "event_index", 1);

	PG_RETURN_JSONB_P(redrive_one(session_id, index));
}

Datum
a2_redrive_session(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");

	PG_RETURN_JSONB_P(redrive_session(session_id));
}
