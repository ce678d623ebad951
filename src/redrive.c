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
 *	  redrive) is refused with Z2004 (ERRCODE_A2_NOT_DEAD_LETTERED).  So is
 *	  a cancelled event (a2_cancel, src/cancel.c): cancelled is terminal,
 *	  and a redrive never revives it.
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
#include "call.h"
#include "json_out.h"
#include "notify.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_redrive);
PG_FUNCTION_INFO_V1(a2_redrive_session);

/* Column after A2_EVENT_COLUMNS in lock_event: redriven and not failed since */
#define COL_REDRIVEN	(A2C_NUM_EVENT_COLS + 1)	/* "redriven" */

#define LOCK_EVENT_SQL(columns) \
	"SELECT " columns "," \
	"       e.failure_count OPERATOR(pg_catalog.=) 0 AND e.last_failed_at IS NOT NULL AS redriven" \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2 FOR UPDATE"

static A2Statement lock_event = {
	.name = "redrive.lock_event",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, LOCK_EVENT_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3, LOCK_EVENT_SQL(A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4, LOCK_EVENT_SQL(A2_EVENT_COLUMNS)),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES, "redriven")
};

/* Dead letters of a session, locked in index order. */
static A2Statement lock_dead_letters = {
	.name = "redrive.lock_dead_letters",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT e.idx FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
				"   AND e.failed_at IS NOT NULL"
				" ORDER BY e.idx FOR UPDATE"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("idx")
};

/* The rows were locked by one of the statements above. */
/* 0.3.0 and later: a redriven event is due at once (docs/semantics.md) */
#define REDRIVE_LISTED_SQL(due, columns) \
	"WITH redriven AS (" \
	"  UPDATE @extschema@.a2_events e SET" \
	"    failed_at = NULL, failure_count = 0," \
	"    claim_holder = NULL, claim_expires_at = NULL" \
	due \
	"   WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)" \
	"     AND e.processed_at IS NULL AND e.failed_at IS NOT NULL" \
	"  RETURNING " columns \
	") SELECT * FROM redriven ORDER BY idx"

static A2Statement redrive_listed = {
	.name = "redrive.listed",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, REDRIVE_LISTED_SQL("", A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3,
				REDRIVE_LISTED_SQL(", not_before = NULL", A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4,
				REDRIVE_LISTED_SQL(", not_before = NULL", A2_EVENT_COLUMNS)),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID)},
	.session_param = 1, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)
};

static A2Statement max_index = {
	.name = "redrive.max_index",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT pg_catalog.max(e.idx) AS max_index FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("max_index")
};

A2_STATEMENT_GROUP(redrive, &lock_event, &lock_dead_letters, &redrive_listed, &max_index);

/*
 * Redrive the listed (locked, dead-lettered) events.  Returns their number
 * and sets *rows to the redriven rows (A2_EVENT_COLUMNS, by index), which
 * live until SPI_finish.
 */
static uint64
redrive_events(const char *session_id, int64 *indexes, int count,
			   SPITupleTable **rows)
{
	A2Args		a;
	uint64		n;

	a2_walk_mark_reset();		/* available again at their creation time */
	a2_args_init(&a, &redrive_listed);
	a2_bind_text(&a, 1, session_id);
	a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(indexes, NULL, count));
	n = a2_exec_latest(&a, SPI_OK_SELECT);
	*rows = SPI_tuptable;
	if (n > 0)
	{
		/* wake listeners as an append would: the session's greatest index */
		a2_args_init(&a, &max_index);
		a2_bind_text(&a, 1, session_id);
		a2_exec_latest(&a, SPI_OK_SELECT);
		a2_notify_session(session_id, a2_col_int64(0, 1));
	}
	return n;
}

static void
not_dead_lettered(const char *session_id, int64 index, bool processed,
				  bool cancelled)
{
	ereport(ERROR,
			(errcode(ERRCODE_A2_NOT_DEAD_LETTERED),
			 errmsg("event %lld of session \"%s\" is not dead-lettered",
					(long long) index, session_id),
			 cancelled ?
			 errdetail("The event is cancelled; a cancelled event is never redriven.") :
			 processed ?
			 errdetail("The event is processed.") :
			 errdetail("The event is unfinished and has not been dead-lettered since it was appended or last redriven."),
			 errhint("Only an event that a2_fail dead-lettered can be redriven.")));
}

static Jsonb *
redrive_one(const char *session_id, int64 index)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	bool		isnull;
	bool		processed,
				dead,
				cancelled;
	SPITupleTable *row;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2_lock_session(session_id);
	a2_args_init(&a, &lock_event);
	a2_bind(&a, 1, TEXTOID, call.session);
	a2_bind_int8(&a, 2, index);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_A2_NOT_FOUND),
				 errmsg("no event at index %lld in session \"%s\"",
						(long long) index, session_id)));
	(void) a2_col(0, A2C_PROCESSED_AT, &isnull);
	processed = !isnull;
	(void) a2_col(0, A2C_FAILED_AT, &isnull);
	dead = !isnull;
	(void) a2_col(0, A2C_CANCELLED_AT, &isnull);
	cancelled = !isnull;
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
		not_dead_lettered(session_id, index, processed, cancelled);
	a2j_event_row(&js, "event", row->vals[0], row->tupdesc, true);
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

static Jsonb *
redrive_session(const char *session_id)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	uint64		n;
	int64	   *indexes;
	SPITupleTable *rows;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2_lock_session(session_id);
	a2_args_init(&a, &lock_dead_letters);
	a2_bind(&a, 1, TEXTOID, call.session);
	n = a2_exec_latest(&a, SPI_OK_SELECT);
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
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
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
