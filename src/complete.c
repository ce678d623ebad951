/*-------------------------------------------------------------------------
 *
 * complete.c
 *	  a2_complete(session_id, event_index, attempt, events): finish an
 *	  attempt.
 *
 *	  In the caller's transaction, so a handler's own writes and its
 *	  completion commit together or not at all.  Lock order: the session
 *	  lock, then the event row (FOR UPDATE; where the completion writes
 *	  that row alone, read without it and locked by its update), then --
 *	  through pin release -- snapshot rows.  (The TypeScript backend locks
 *	  the row first and the session second, the reverse of its append, and
 *	  deadlocks.)
 *
 *	  Outcomes (docs/semantics.md, "Work: claims, leases and attempts"): processed by another attempt: superseded;
 *	  processed by this attempt: an idempotent retry that must repeat the
 *	  stored returned batch; not processed but at another attempt, not held,
 *	  or dead-lettered: superseded.  Otherwise insert the returned events
 *	  with cause {event_index, attempt}, mark the event processed, promote
 *	  its lane's next event and release its snapshot pins.  Completion is
 *	  fenced by attempt, not by lease time.
 *
 * IDENTIFICATION
 *	  src/complete.c
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
#include "snapshot_pins.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_complete);

enum
{
	LOCK_EVENT_PROCESSED = 1,
	LOCK_EVENT_PROCESSED_BY_ATTEMPT,
	LOCK_EVENT_RETURNED_EVENT_IDS,
	LOCK_EVENT_ATTEMPT_COUNT,
	LOCK_EVENT_HELD,
	LOCK_EVENT_DEAD_LETTERED,
	LOCK_EVENT_CONCURRENCY_KEY,
	LOCK_EVENT_HAS_LANE,
	LOCK_EVENT_ROW_ID
};

/*
 * Where a direct read cannot stand in for it (direct.h), or the row is to
 * be locked before the completion writes (a lane, pins to release, a
 * writer without the session lock).  On one server it also gives the
 * locked row version a direct finish writes; elsewhere no direct write
 * runs: NULL.  Whether the pin release has rows to find is read after it
 * (direct_pins.c), not by subqueries here: their index-only scans cost
 * more than the statement.
 */
#define LOCK_EVENT_SQL(key, row_id) \
	"SELECT e.processed_at IS NOT NULL AS processed, e.processed_by_attempt," \
	"       e.returned_event_ids, e.attempt_count," \
	"       e.claim_holder IS NOT NULL AS held, e.failed_at IS NOT NULL AS dead_lettered," \
	"       " key ", e.lane IS NOT NULL AS has_lane, " row_id \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2 FOR UPDATE"
#define LOCK_EVENT_NO_DIRECT "NULL::pg_catalog.tid AS row_id"
#define LOCK_EVENT_DIRECT "e.ctid AS row_id"

static A2Statement lock_event = {
	.name = "complete.lock_event",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				LOCK_EVENT_SQL("NULL::pg_catalog.text AS concurrency_key", LOCK_EVENT_NO_DIRECT)),
		/* 0.4.0: the key whose slot a completion frees (key_park.h) */
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_4,
				LOCK_EVENT_SQL("e.concurrency_key", LOCK_EVENT_NO_DIRECT)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, LOCK_EVENT_SQL("e.concurrency_key", LOCK_EVENT_DIRECT)),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID)},
	.session_param = 1,
	.columns = A2_COLUMNS("processed", "processed_by_attempt", "returned_event_ids",
						  "attempt_count", "held", "dead_lettered", "concurrency_key",
						  "has_lane", "row_id")
};

/*
 * Mark the event processed, make the oldest other unprocessed event of its
 * lane lane-ready, and release its snapshot pins, collecting history rows
 * no other pin references.  All CTEs see the snapshot taken before this
 * statement, so the parent (still unprocessed there) and its own pins are
 * excluded explicitly.  The children were inserted by an earlier statement
 * and are visible.
 */
static A2Statement finish_event = {
	.name = "complete.finish_event",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"WITH done AS ("
				"  UPDATE @extschema@.a2_events e SET"
				"    processed_at = $3, processed_by_attempt = $4, returned_event_ids = $5,"
				"    lane_ready = false, claim_holder = NULL, claim_expires_at = NULL"
				"   WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2"
				"  RETURNING e.lane"
				"), promoted AS ("
				"  UPDATE @extschema@.a2_events e SET lane_ready = true"
				"   WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND NOT e.lane_ready AND e.idx OPERATOR(pg_catalog.=) ("
				"     SELECT p.idx FROM @extschema@.a2_events p, done"
				"      WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.lane OPERATOR(pg_catalog.=) done.lane"
				"        AND p.processed_at IS NULL AND p.idx OPERATOR(pg_catalog.<>) $2"
				"      ORDER BY p.idx LIMIT 1)"
				"), " A2_RELEASE_PINS_SQL),
	},
	.nparams = 5,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID),
		A2_PARAM("now", INT8OID), A2_PARAM("attempt", INT4OID),
	A2_PARAM("returned_event_ids", JSONBOID)},
	.session_param = 1
};

A2_STATEMENT_GROUP(complete, &lock_event, &finish_event);

typedef struct CompleteArgs
{
	char	   *session_id;
	int64		index;
	int32		attempt;
	A2EventInput *events;
	int			count;
	char	  **ids;
	A2Call		call;			/* the call this completion runs in */
} CompleteArgs;

static void
mismatch(CompleteArgs *args, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
			 errmsg("completion of event %lld attempt %d in session \"%s\" does not match the committed batch",
					(long long) args->index, args->attempt, args->session_id),
			 errdetail_internal("%s", detail)));
}

/* The stored returned_event_ids must equal the ids, in order. */
static void
check_returned_ids(CompleteArgs *args, Jsonb *stored)
{
	if (stored == NULL || !JB_ROOT_IS_ARRAY(stored) || JB_ROOT_IS_SCALAR(stored) ||
		JB_ROOT_COUNT(stored) != (uint32) args->count)
		mismatch(args, "The retry returns a different number of events than the completed attempt.");
	for (int i = 0; i < args->count; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(&stored->root, i);

		if (v == NULL || v->type != jbvString ||
			(size_t) v->val.string.len != strlen(args->ids[i]) ||
			memcmp(v->val.string.val, args->ids[i], v->val.string.len) != 0)
			mismatch(args, "The retry's event ids differ from the completed attempt's.");
	}
}

/* Idempotent retry: return the stored children, writing nothing. */
static void
replay_completion(CompleteArgs *args, Jsonb *stored_ids, A2Json *js)
{
	uint64		found;
	Jsonb	   *cause = a2_make_cause(args->index, args->attempt, 0);

	check_returned_ids(args, stored_ids);
	if (args->count == 0)
		return;
	found = a2_fetch_events_by_ids(args->session_id, args->ids, args->count);
	if (found != (uint64) args->count)
		mismatch(args, "A returned event of the completed attempt is missing.");
	for (int i = 0; i < args->count; i++)
	{
		bool		isnull;
		Datum		stored_cause = a2_col(i, A2C_CAUSE, &isnull);

		if (strcmp(a2_col_text(i, A2C_SESSION_ID), args->session_id) != 0 ||
			isnull ||
			!DatumGetBool(DirectFunctionCall2(jsonb_eq, stored_cause,
											  JsonbPGetDatum(cause))))
			mismatch(args, "A stored returned event does not belong to this attempt.");
		if (!a2_stored_matches(i, &args->events[i], false))
			mismatch(args, "A returned event's type, payload or lane differs from the stored one.");
	}
	for (int i = 0; i < args->count; i++)
		a2j_event_row(js, NULL, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, true);
}

static Jsonb *
returned_ids_jsonb(CompleteArgs *args)
{
	A2Json		js = NULL;

	a2j_begin_array(&js, NULL);
	for (int i = 0; i < args->count; i++)
		a2j_string(&js, NULL, args->ids[i]);
	return JsonbValueToJsonb(a2j_end_array(&js));
}

/* The event, locked by the lock_event statement; false: no such event. */
static bool
lock_row(CompleteArgs *args, A2DirectEvent *ev)
{
	A2Args		a;
	bool		isnull;
	Datum		d;

	a2_args_init(&a, &lock_event);
	a2_bind(&a, 1, TEXTOID, args->call.session);
	a2_bind_int8(&a, 2, args->index);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		return false;
	ev->processed = a2_col_bool(0, LOCK_EVENT_PROCESSED);
	(void) a2_col(0, LOCK_EVENT_PROCESSED_BY_ATTEMPT, &isnull);
	ev->has_processed_by = !isnull;
	ev->processed_by = isnull ? 0 : (int32) a2_col_int64(0, LOCK_EVENT_PROCESSED_BY_ATTEMPT);
	d = a2_col(0, LOCK_EVENT_RETURNED_EVENT_IDS, &isnull);
	ev->returned_ids = isnull ? NULL : DatumGetJsonbPCopy(d);
	ev->attempt_count = (int32) a2_col_int64(0, LOCK_EVENT_ATTEMPT_COUNT);
	ev->held = a2_col_bool(0, LOCK_EVENT_HELD);
	ev->dead_lettered = a2_col_bool(0, LOCK_EVENT_DEAD_LETTERED);
	ev->concurrency_key = a2_col_text(0, LOCK_EVENT_CONCURRENCY_KEY);
	ev->has_lane = a2_col_bool(0, LOCK_EVENT_HAS_LANE);
	if (!a2_col_tid(0, LOCK_EVENT_ROW_ID, &ev->tid))
		ItemPointerSetInvalid(&ev->tid);
	return true;
}

/* Processed by this attempt (a retry), or current, held and alive. */
static bool
completes(CompleteArgs *args, A2DirectEvent *ev)
{
	if (ev->processed)
		return ev->has_processed_by && ev->processed_by == args->attempt;
	return ev->attempt_count == args->attempt && ev->held && !ev->dead_lettered;
}

/*
 * finish_event would only mark the event (no lane, no pins to release):
 * do that directly, to row version `ev->tid`, locked or (not `locked`)
 * the one a2_direct_read_event read.  False, nothing written: the
 * statement is to run, or, not locked, the row is to be locked first.
 */
static bool
finish_directly(CompleteArgs *args, A2DirectEvent *ev, bool locked, int64 now_ms)
{
	return !ev->has_lane && ItemPointerIsValid(&ev->tid) &&
		a2_direct_pins_to_release(args->call.session, args->index) == 0 &&
		a2_direct_finish(args->call.session, args->index, &ev->tid, locked,
						 now_ms, args->attempt, returned_ids_jsonb(args));
}

/*
 * The completion itself; the parent is current, and either locked or,
 * `finished`, marked already (complete_attempt).
 */
static void
apply_completion(CompleteArgs *args, A2DirectEvent *ev, int64 now_ms,
				 bool finished, A2Json *js)
{
	A2Args		a;
	Jsonb	   *cause = a2_make_cause(args->index, args->attempt, 0);

	/*
	 * Children before finish_event: the parent, still unprocessed, blocks
	 * its lane, and the lane's promotion sees them.
	 */
	for (int i = 0; i < args->count; i++)
		args->events[i].cause = cause;
	if (args->count > 0)
		a2_insert_events(args->session_id, args->events, args->count, now_ms,
						 js, NULL);
	if (finished || finish_directly(args, ev, true, now_ms))
		return;
	a2_args_init(&a, &finish_event);
	a2_bind(&a, 1, TEXTOID, args->call.session);
	a2_bind_int8(&a, 2, args->index);
	a2_bind_int8(&a, 3, now_ms);
	a2_bind_int4(&a, 4, args->attempt);
	a2_bind(&a, 5, JSONBOID, JsonbPGetDatum(returned_ids_jsonb(args)));
	/* its lane's next event, if any, becomes available at its own key */
	if (ev->has_lane)
		a2_walk_mark_reset();
	a2_exec_latest(&a, SPI_OK_DELETE);
}

static Jsonb *
complete_attempt(CompleteArgs *args)
{
	A2Json		js = NULL;
	A2DirectEvent ev;
	int			found;
	bool		locked = false;
	bool		finished = false;
	bool		completed;
	int64		now_ms;
	Jsonb	   *result;

	a2_call_begin(&args->call, args->session_id);
	a2_lock_session(args->session_id);
	now_ms = a2_clock_now_ms();

	/*
	 * Under the session lock no other a2 call changes the event, so it is
	 * read without its row lock where it can be (direct.h).  A completion
	 * that writes that row alone writes it first, children after: its
	 * update finds out whether a writer without the session lock changed
	 * the row since.  Any other, and one that found so, locks the row and
	 * decides again.
	 */
	found = a2_direct_read_event(args->call.session, args->index, &ev);
	for (;;)
	{
		if (found < 0)
		{
			found = lock_row(args, &ev) ? 1 : 0;
			locked = true;
		}
		if (found == 0)
			ereport(ERROR,
					(errcode(ERRCODE_A2_NOT_FOUND),
					 errmsg("no event at index %lld in session \"%s\"",
							(long long) args->index, args->session_id)));
		a2_check_duplicate_ids(args->events, args->count, args->session_id);
		completed = completes(args, &ev);
		if (!completed || ev.processed || locked)
			break;
		if (finish_directly(args, &ev, false, now_ms))
		{
			finished = true;
			break;
		}
		found = -1;
	}

	a2j_begin_object(&js, NULL);
	a2j_string(&js, "outcome", completed ? "completed" : "superseded");
	if (completed)
	{
		a2j_begin_array(&js, "events");
		if (ev.processed)
			replay_completion(args, ev.returned_ids, &js);
		else
		{
			apply_completion(args, &ev, now_ms, finished, &js);
			if (ev.concurrency_key != NULL)
				a2_key_park_release(ev.concurrency_key);	/* a slot frees */
		}
		a2j_end_array(&js);
	}
	result = a2j_finish(a2j_end_object(&js), args->call.caller);
	a2_call_end(&args->call);
	return result;
}

Datum
a2_complete(PG_FUNCTION_ARGS)
{
	CompleteArgs args;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.index = a2_int8_arg(fcinfo, 1, "event_index", 1);
	args.attempt = (int32) a2_int4_arg(fcinfo, 2, "attempt", 1);
	if (PG_ARGISNULL(3))
	{
		args.events = NULL;
		args.count = 0;
	}
	else
		args.events = a2_parse_events(PG_GETARG_JSONB_P(3), args.session_id,
									  true, &args.count);
	args.ids = palloc(sizeof(char *) * Max(args.count, 1));
	for (int i = 0; i < args.count; i++)
		args.ids[i] = args.events[i].id;
	PG_RETURN_JSONB_P(complete_attempt(&args));
}
