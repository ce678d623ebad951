/*-------------------------------------------------------------------------
 *
 * fail.c
 *	  a2_fail(session_id, event_index, attempt, error, max_failures,
 *	  retry_after_ms = NULL): record a failed attempt.
 *
 *	  Lock order: session lock, then the event row (read without its
 *	  lock where it can be, and locked by the update, as complete.c
 *	  reads its event).  When the event is
 *	  unprocessed, alive, at this attempt and held, the failure is counted,
 *	  the lease cleared and, at max_failures, the event dead-lettered, which
 *	  releases its snapshot pins as completion does.  A "failed" outcome is
 *	  re-claimable at once, or with retry_after_ms > 0 from now +
 *	  retry_after_ms (docs/semantics.md, "Scheduling"): that becomes the
 *	  event's not_before.  A dead-lettered event stays unprocessed, so its lane stays blocked.
 *	  Otherwise: superseded when processed or another attempt holds it,
 *	  dead_lettered when already dead-lettered, failed when this attempt
 *	  failed it before, which makes a repeated fail of the same attempt
 *	  idempotent (docs/functions.md, "a2_fail").
 *
 * IDENTIFICATION
 *	  src/fail.c
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
#include "events.h"
#include "clock.h"
#include "direct.h"
#include "json_out.h"
#include "key_park.h"
#include "layer.h"
#include "notify.h"
#include "snapshot_pins.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_fail);

enum
{
	LOCK_EVENT_PROCESSED = 1,
	LOCK_EVENT_DEAD_LETTERED,
	LOCK_EVENT_ATTEMPT_COUNT,
	LOCK_EVENT_HELD,
	LOCK_EVENT_FAILURE_COUNT,
	LOCK_EVENT_FAILED_BY_THIS,
	LOCK_EVENT_CONCURRENCY_KEY,
	LOCK_EVENT_ROW_ID
};

/*
 * Where a direct read cannot stand in for it (direct.h), or a writer
 * without the session lock changed the row between that read and the
 * update.  On one server it also gives the locked row version, for a
 * direct write.
 */
#define LOCK_EVENT_SQL(key, row_id) \
	"SELECT e.processed_at IS NOT NULL AS processed, e.failed_at IS NOT NULL AS dead_lettered," \
	"       e.attempt_count, e.claim_holder IS NOT NULL AS held, e.failure_count," \
	"       COALESCE(e.last_failed_attempt OPERATOR(pg_catalog.=) $3," \
	"                e.last_failed_attempt IS NULL AND $3 IS NULL) AS failed_by_this," \
	"       " key ", " row_id \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2 FOR UPDATE"

static A2Statement lock_event = {
	.name = "fail.lock_event",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				LOCK_EVENT_SQL("NULL::pg_catalog.text AS concurrency_key", "NULL::pg_catalog.tid AS row_id")),
		/* 0.4.0: the key whose slot a failure frees (key_park.h) */
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_4,
				LOCK_EVENT_SQL("e.concurrency_key", "NULL::pg_catalog.tid AS row_id")),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, LOCK_EVENT_SQL("e.concurrency_key", "e.ctid AS row_id")),
	},
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID),
	A2_PARAM("attempt", INT4OID)},
	.session_param = 1,
	.columns = A2_COLUMNS("processed", "dead_lettered", "attempt_count", "held",
						  "failure_count", "failed_by_this", "concurrency_key", "row_id")
};

#define RECORD_FAILURE_SQL(backoff) \
	"UPDATE @extschema@.a2_events e SET" \
	"  failure_count = e.failure_count OPERATOR(pg_catalog.+) 1, last_error = $3," \
	"  last_failed_at = $4, last_failed_attempt = $5," \
	"  failed_at = CASE WHEN $6 THEN $4 END," \
	"  claim_holder = NULL, claim_expires_at = NULL" \
	backoff \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2"

/* $7, the retry time, needs 0.3.0's not_before: older objects ignore it */
static A2Statement record_failure = {
	.name = "fail.record_failure",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, RECORD_FAILURE_SQL("")),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3,
				RECORD_FAILURE_SQL(", not_before = COALESCE($7, e.not_before)")),
		/* 0.4.0: the event's new key, for the walk marks (walk_mark.h) */
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4,
				RECORD_FAILURE_SQL(", not_before = COALESCE($7, e.not_before)")
				" RETURNING " A2_AVAILABLE_KEY " AS available_at"),
	},
	.walk_keys = true,
	.nparams = 7,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID),
		A2_PARAM("error", TEXTOID), A2_PARAM("now", INT8OID),
		A2_PARAM("attempt", INT4OID), A2_PARAM("dead_letter", BOOLOID),
	A2_PARAM("retry_at", INT8OID)},
	.session_param = 1
};

A2_STATEMENT_GROUP(fail, &lock_event, &record_failure);

typedef struct FailArgs
{
	char	   *session_id;
	int64		index;
	int32		attempt;
	char	   *error;			/* NULL: stored as null */
	int64		max_failures;
	int64		now_ms;
	bool		backoff;		/* retry_after_ms > 0 */
	int64		retry_at_ms;	/* now + retry_after_ms, when backoff */
} FailArgs;

/*
 * record_failure's update, written directly (direct.h) to row version
 * `row_id`, locked or (not `locked`) the one a2_direct_read_event read.
 * False, nothing written: the statement is to run, or, not locked, the
 * row is to be locked first.
 */
static bool
record_directly(FailArgs *args, Datum session, A2DirectEvent *ev, bool locked,
				bool dead_letter, int64 *available_at)
{
	A2DirectFailure f;

	if (!ItemPointerIsValid(&ev->tid))
		return false;
	f.error = args->error;
	f.now_ms = args->now_ms;
	f.attempt = args->attempt;
	f.dead_letter = dead_letter;
	f.has_retry_at = args->backoff && !dead_letter;
	f.retry_at = args->retry_at_ms;
	return a2_direct_record_failure(session, args->index, &ev->tid, locked, &f,
									available_at);
}

/* The event, locked by the lock_event statement; false: no such event. */
static bool
lock_row(FailArgs *args, Datum session, A2DirectEvent *ev)
{
	A2Args		a;

	a2_args_init(&a, &lock_event);
	a2_bind(&a, 1, TEXTOID, session);
	a2_bind_int8(&a, 2, args->index);
	a2_bind_int4(&a, 3, args->attempt);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		return false;
	ev->processed = a2_col_bool(0, LOCK_EVENT_PROCESSED);
	ev->dead_lettered = a2_col_bool(0, LOCK_EVENT_DEAD_LETTERED);
	ev->attempt_count = (int32) a2_col_int64(0, LOCK_EVENT_ATTEMPT_COUNT);
	ev->held = a2_col_bool(0, LOCK_EVENT_HELD);
	ev->failure_count = (int32) a2_col_int64(0, LOCK_EVENT_FAILURE_COUNT);
	/* the statement compares it: as this attempt, or as nothing */
	ev->has_last_failed = a2_col_bool(0, LOCK_EVENT_FAILED_BY_THIS);
	ev->last_failed_attempt = args->attempt;
	ev->concurrency_key = a2_col_text(0, LOCK_EVENT_CONCURRENCY_KEY);
	if (!a2_col_tid(0, LOCK_EVENT_ROW_ID, &ev->tid))
		ItemPointerSetInvalid(&ev->tid);
	return true;
}

/* This attempt is the event's current one, held and alive: it fails. */
static bool
fails(FailArgs *args, A2DirectEvent *ev)
{
	return !ev->processed && !ev->dead_lettered &&
		ev->attempt_count == args->attempt && ev->held;
}

/* This failure reaches max_failures: the event is dead-lettered. */
static bool
dead_letters(FailArgs *args, A2DirectEvent *ev)
{
	return (int64) ev->failure_count + 1 >= args->max_failures;
}

/* record_failure through its statement. */
static void
record_by_statement(FailArgs *args, Datum session, bool dead_letter)
{
	A2Args		a;

	a2_args_init(&a, &record_failure);
	a2_bind(&a, 1, TEXTOID, session);
	a2_bind_int8(&a, 2, args->index);
	a2_bind_text(&a, 3, args->error);
	a2_bind_int8(&a, 4, args->now_ms);
	a2_bind_int4(&a, 5, args->attempt);
	a2_bind_bool(&a, 6, dead_letter);
	if (args->backoff && !dead_letter)
		a2_bind_int8(&a, 7, args->retry_at_ms);
	else
		a2_bind_null(&a, 7);
	if (a2_has_dispatch())
	{
		a2_exec_latest(&a, SPI_OK_UPDATE_RETURNING);
		if (!dead_letter)
		{
			int64		at = a2_col_int64(0, 1);

			a2_walk_mark_lower(at, at);
		}
	}
	else
		a2_exec_latest(&a, SPI_OK_UPDATE);
}

static Jsonb *
fail_attempt(FailArgs *args)
{
	A2Call		call;
	A2Json		js = NULL;
	A2DirectEvent ev;
	int			found;
	bool		locked = false;
	bool		recorded = false;
	int64		failures;
	const char *outcome;
	int64		at;
	Jsonb	   *result;

	a2_call_begin(&call, args->session_id);
	a2_lock_session(args->session_id);

	/*
	 * As a completion reads its event (complete.c): without the row lock
	 * where it can, the update finding out whether a writer without the
	 * session lock changed the row since; otherwise, and then, locked.
	 */
	found = a2_direct_read_event(call.session, args->index, &ev);
	for (;;)
	{
		if (found < 0)
		{
			found = lock_row(args, call.session, &ev) ? 1 : 0;
			locked = true;
		}
		if (found == 0)
			ereport(ERROR,
					(errcode(ERRCODE_A2_NOT_FOUND),
					 errmsg("no event at index %lld in session \"%s\"",
							(long long) args->index, args->session_id)));
		if (!fails(args, &ev))
			break;
		recorded = record_directly(args, call.session, &ev, locked,
								   dead_letters(args, &ev), &at);
		if (recorded || locked)
			break;
		found = -1;
	}

	failures = ev.failure_count;
	if (fails(args, &ev))
	{
		bool		dead_letter = dead_letters(args, &ev);

		if (!recorded)
			record_by_statement(args, call.session, dead_letter);
		else if (!dead_letter)
			a2_walk_mark_lower(at, at);
		/* backoff (docs/semantics.md): a failed attempt's event is due again later */
		if (args->backoff && !dead_letter)
		{
			/*
			 * Due later by the wall clock: the scheduler announces it then.
			 * Already due by it (a2.now set back, so the retry time is
			 * past): no scheduler would look back that far, so the commit
			 * announces it at once, as an append does.
			 */
			if (args->retry_at_ms > a2_wall_clock_ms())
				a2_notify_due(args->retry_at_ms);
			else
				a2_notify_session(args->session_id, args->index);
		}
		if (ev.concurrency_key != NULL)
			a2_key_park_release(ev.concurrency_key);	/* its lease ends: a slot frees */
		failures += 1;
		if (dead_letter)
			a2_release_pins(args->session_id, args->index);
		outcome = dead_letter ? "dead_lettered" : "failed";
	}
	else if (!ev.processed && ev.attempt_count == args->attempt && ev.dead_lettered)
		outcome = "dead_lettered";
	else if (!ev.processed && ev.attempt_count == args->attempt && !ev.held &&
			 ev.has_last_failed && ev.last_failed_attempt == args->attempt)
		outcome = "failed";		/* the same attempt failed before */
	else
		outcome = "superseded"; /* processed, or another attempt */

	a2j_begin_object(&js, NULL);
	a2j_string(&js, "outcome", outcome);
	a2j_int(&js, "failureCount", failures);
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_fail(PG_FUNCTION_ARGS)
{
	FailArgs	args;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.index = a2_int8_arg(fcinfo, 1, "event_index", 1);
	args.attempt = (int32) a2_int4_arg(fcinfo, 2, "attempt", 1);
	args.error = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	args.max_failures = a2_int4_arg(fcinfo, 4, "max_failures", 1);
	args.now_ms = a2_clock_now_ms();
	args.backoff = false;
	args.retry_at_ms = 0;
	/* retry_after_ms: 0.3.0's sixth argument; NULL or 0, no backoff */
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
	{
		int64		retry_after_ms = a2_int8_arg(fcinfo, 5, "retry_after_ms", 0);

		args.retry_at_ms = a2_add_ms(args.now_ms, retry_after_ms, "retry_after_ms");
		args.backoff = retry_after_ms > 0;
		if (args.backoff)
			a2_require_not_before();
	}
	PG_RETURN_JSONB_P(fail_attempt(&args));
}
