/*-------------------------------------------------------------------------
 *
 * append.c
 *	  a2_append(session_id, events): append a batch of events to a session.
 *
 *	  Order of work (SPEC sections 4 and 5): validate the whole batch; take
 *	  the session lock; detect an idempotent replay (every id already stored
 *	  in this session, unchanged) and return it without writing; check the
 *	  attempt-currency fence with the parent rows locked in index order;
 *	  then insert the batch after max(idx) in one statement.
 *
 *	  Two transactions appending the same new id to different sessions race
 *	  on the unique index a2_events_event_id: the insert uses ON CONFLICT DO
 *	  NOTHING (which waits for the other transaction) and the loser raises
 *	  Z2001 instead of a unique violation.
 *
 * IDENTIFICATION
 *	  src/append.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "port.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "a2.h"
#include "append.h"
#include "call.h"
#include "clock.h"
#include "layer.h"
#include "notify.h"
#include "scheduler.h"
#include "session.h"
#include "spi_util.h"
#include "statements.h"
#include "uuid7.h"

PG_FUNCTION_INFO_V1(a2_append);

/*
 * The first batch id stored by someone else (not by the insert just run).
 * Distributed mode: ids are unique per session, so only this session's
 * rows can hold them (and a query across sessions would touch every shard).
 */
enum
{
	FIND_EXISTING_ID_EVENT_ID = 1
};

static A2Statement find_existing_id = {
	.name = "append.find_existing_id",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1,
				"SELECT e.event_id FROM pg_catalog.unnest($1) WITH ORDINALITY AS i(id, ord)"
				"  JOIN @extschema@.a2_events e ON e.event_id OPERATOR(pg_catalog.=) i.id"
				" WHERE NOT (e.session_id OPERATOR(pg_catalog.=) $2 AND e.idx OPERATOR(pg_catalog.>) $3)"
				" ORDER BY i.ord LIMIT 1"),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT e.event_id FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $2 AND e.idx OPERATOR(pg_catalog.<=) $3"
				"   AND e.event_id OPERATOR(pg_catalog.=) ANY ($1)"
				" ORDER BY pg_catalog.array_position($1, e.event_id) LIMIT 1"),
	},
	.nparams = 3,
	.params = {A2_PARAM("event_ids", TEXTARRAYOID), A2_PARAM("session_id", TEXTOID),
	A2_PARAM("base", INT8OID)},
	.session_param = 2, .columns = A2_COLUMNS("event_id")
};

/* $2, the session, only narrows the distributed form (see above) */
#define EVENTS_BY_IDS_SQL(columns) \
	"SELECT " columns \
	"  FROM pg_catalog.unnest($1) WITH ORDINALITY AS i(id, ord)" \
	"  JOIN @extschema@.a2_events e ON e.event_id OPERATOR(pg_catalog.=) i.id" \
	" ORDER BY i.ord"
#define EVENTS_BY_IDS_DIST_SQL(columns) \
	"SELECT " columns \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $2 AND e.event_id OPERATOR(pg_catalog.=) ANY ($1)" \
	" ORDER BY pg_catalog.array_position($1, e.event_id)"

static A2Statement events_by_ids = {
	.name = "append.events_by_ids",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1, EVENTS_BY_IDS_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_3, EVENTS_BY_IDS_SQL(A2_EVENT_COLUMNS)),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1, EVENTS_BY_IDS_DIST_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_3, EVENTS_BY_IDS_DIST_SQL(A2_EVENT_COLUMNS)),
	},
	.nparams = 2,
	.params = {A2_PARAM("event_ids", TEXTARRAYOID), A2_PARAM("session_id", TEXTOID)},
	.session_param = 2, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)
};

enum
{
	LOCK_PARENTS_IDX = 1,
	LOCK_PARENTS_ATTEMPT_COUNT,
	LOCK_PARENTS_DEAD_LETTERED
};

static A2Statement lock_parents = {
	.name = "append.lock_parents",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT e.idx, e.attempt_count, e.failed_at IS NOT NULL AS dead_lettered"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"
				" ORDER BY e.idx FOR UPDATE"),
	},
	.nparams = 2,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("parent_indexes", INT8ARRAYOID)},
	.session_param = 1, .columns = A2_COLUMNS("idx", "attempt_count", "dead_lettered")
};

A2_STATEMENT_GROUP(append, &find_existing_id, &events_by_ids, &lock_parents);

uint64
a2_fetch_events_by_ids(const char *session_id, char **ids, int count)
{
	A2Args		a;

	a2_args_init(&a, &events_by_ids);
	a2_bind(&a, 1, TEXTARRAYOID, a2_text_array(ids, count));
	a2_bind_text(&a, 2, session_id);
	return a2_exec_latest(&a, SPI_OK_SELECT);
}

static bool
jsonb_equal(Datum a, Jsonb *b)
{
	return DatumGetBool(DirectFunctionCall2(jsonb_eq, a, JsonbPGetDatum(b)));
}

/*
 * A replay repeats notBefore too (SPEC 7.1): both absent, or equal.  Only
 * while the event was never claimed: a backoff (a2_fail's retry_after_ms)
 * and a redrive rewrite not_before, so the stored value no longer says what
 * was appended, and an exact retry must still be recognised (found by the
 * stress suite's replay probe).
 */
static bool
not_before_matches(uint64 row, const A2EventInput *ev)
{
	bool		isnull;
	Datum		stored = a2_col(row, A2C_NOT_BEFORE, &isnull);

	if (a2_col_int64(row, A2C_ATTEMPT_COUNT) > 0)
		return true;

	if (isnull != !ev->has_not_before)
		return false;
	return isnull || DatumGetInt64(stored) == ev->not_before;
}

bool
a2_stored_matches(uint64 row, const A2EventInput *ev, bool check_cause)
{
	bool		isnull;
	char	   *type = a2_col_text(row, A2C_EVENT_TYPE);
	char	   *lane = a2_col_text(row, A2C_LANE);
	Datum		payload = a2_col(row, A2C_PAYLOAD, &isnull);
	Datum		cause;

	if (strcmp(type, ev->type) != 0)
		return false;
	if ((lane == NULL) != (ev->lane == NULL) ||
		(lane != NULL && strcmp(lane, ev->lane) != 0))
		return false;
	if (isnull || !jsonb_equal(payload, ev->payload))
		return false;
	if (!not_before_matches(row, ev))
		return false;
	if (check_cause)
	{
		cause = a2_col(row, A2C_CAUSE, &isnull);
		if (isnull != (ev->cause == NULL))
			return false;
		if (!isnull && !jsonb_equal(cause, ev->cause))
			return false;
	}
	return true;
}


static void
put_new_event(A2Json *js, const char *session_id, int64 idx,
			  const A2EventInput *ev, int64 now_ms)
{
	a2j_begin_object(js, NULL);
	a2j_string(js, "id", ev->id);
	a2j_string(js, "type", ev->type);
	a2j_jsonb(js, "payload", ev->payload);
	a2j_int(js, "index", idx);
	a2j_string(js, "sessionId", session_id);
	a2j_iso(js, "createdAt", now_ms);
	if (ev->cause)
		a2j_jsonb(js, "cause", ev->cause);
	else
		a2j_null(js, "cause");
	a2j_string(js, "lane", ev->lane);
	if (ev->settled)
		a2j_iso(js, "processedAt", now_ms);
	else
		a2j_null(js, "processedAt");
	a2j_null(js, "processedByAttempt");
	a2j_null(js, "returnedEventIds");
	a2j_null(js, "firstClaimedAt");
	a2j_null(js, "lastClaimedAt");
	a2j_int(js, "attemptCount", 0);
	a2j_int(js, "failureCount", 0);
	a2j_null(js, "lastFailedAt");
	a2j_null(js, "lastFailedAttempt");
	a2j_null(js, "lastError");
	a2j_null(js, "failedAt");
	a2j_null(js, "claimHolder");
	a2j_null(js, "claimExpiresAt");
	if (ev->has_not_before)
		a2j_iso(js, "notBefore", ev->not_before);
	a2j_end_object(js);
}



void
a2_insert_events(const char *session_id, A2EventInput *events, int count,
				 int64 now_ms, A2Json *js, bool *had_pending)
{
	Datum		session = CStringGetTextDatum(session_id);
	bool		all_generated = true;
	A2InsertOutcome out;
	int64		base;

	for (int i = 0; i < count; i++)
	{
		if (events[i].id == NULL)
			events[i].id = a2_uuid7(now_ms);
		else
			all_generated = false;
		if (events[i].has_not_before)
			a2_require_not_before();
	}
	a2_layer()->insert_events(session_id, events, count, now_ms, all_generated,
							   had_pending != NULL, &out);
	base = out.base;
	if (had_pending)
		*had_pending = out.pending;

	/*
	 * A row skipped by ON CONFLICT means another transaction committed (or
	 * we waited for it to commit) an event with one of these ids.
	 */
	if (out.inserted != count)
	{
		char	  **ids = palloc(sizeof(char *) * count);
		A2Args		a;
		char	   *taken;

		for (int i = 0; i < count; i++)
			ids[i] = events[i].id;
		a2_args_init(&a, &find_existing_id);
		a2_bind(&a, 1, TEXTARRAYOID, a2_text_array(ids, count));
		a2_bind(&a, 2, TEXTOID, session);
		a2_bind_int8(&a, 3, base);
		a2_exec_latest(&a, SPI_OK_SELECT);
		taken = SPI_processed > 0 ? a2_col_text(0, FIND_EXISTING_ID_EVENT_ID) : "?";
		ereport(ERROR,
				(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
				 errmsg("event id \"%s\" already exists", taken),
				 errdetail("Appending to session \"%s\"; an event with this id was stored first.",
						   session_id)));
	}

	for (int i = 0; i < count; i++)
	{
		put_new_event(js, session_id, base + 1 + i, &events[i], now_ms);
		if (events[i].has_not_before && !events[i].settled)
			a2_sched_note_due(events[i].not_before);
	}
	if (count > 0)
		a2_notify_session(session_id, base + count);
}

/*
 * notBefore needs 0.3.0's a2_events.not_before: refuse it (0A000) while a
 * new library serves 0.2.0 objects, rather than drop it silently.
 */
void
a2_require_not_before(void)
{
	if (!a2_has_not_before())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("scheduling needs the a2 0.3.0 tables"),
				 errdetail("notBefore and retry_after_ms are stored in a2_events.not_before, which this database does not have yet; nothing was written."),
				 errhint("Run ALTER EXTENSION a2 UPDATE.")));
}

/*
 * Replay detection.  Returns true (and fills `js`) when every event of the
 * batch is already stored in this session with the same content.
 */
static bool
detect_replay(const char *session_id, A2EventInput *events, int count,
			  A2Json *js)
{
	char	  **ids = palloc(sizeof(char *) * count);
	int			nids = 0;
	uint64		found;

	for (int i = 0; i < count; i++)
		if (events[i].id)
			ids[nids++] = events[i].id;
	if (nids == 0)
		return false;

	found = a2_fetch_events_by_ids(session_id, ids, nids);
	if (found == 0)
		return false;

	for (uint64 r = 0; r < found; r++)
	{
		char	   *stored_session = a2_col_text(r, A2C_SESSION_ID);

		if (strcmp(stored_session, session_id) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
					 errmsg("event id \"%s\" already exists in another session",
							a2_col_text(r, A2C_EVENT_ID)),
					 errdetail("Appending to session \"%s\"; the id belongs to session \"%s\".",
							   session_id, stored_session)));
	}
	if (found != (uint64) count)
		ereport(ERROR,
				(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
				 errmsg("batch for session \"%s\" mixes %llu already-appended and %llu fresh events",
						session_id, (unsigned long long) found,
						(unsigned long long) (count - found)),
				 errhint("Replay the whole stored batch, or append only fresh events.")));

	/* every event has an id and rows are in batch order */
	for (int i = 0; i < count; i++)
		if (!a2_stored_matches(i, &events[i], true))
			ereport(ERROR,
					(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
					 errmsg("replayed event \"%s\" differs from stored event %lld of session \"%s\"",
							events[i].id,
							(long long) a2_col_int64(i, A2C_IDX), session_id),
					 errdetail("A replay must repeat the stored type, payload, lane, cause and notBefore.")));

	for (uint64 r = 0; r < found; r++)
		a2j_event_row(js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
	return true;
}

/* The attempt-currency fence, parents locked in index order. */
static void
check_fence(const char *session_id, A2EventInput *events, int count)
{
	int64	   *idxs = palloc(sizeof(int64) * count);
	int			n = 0;
	A2Args		a;
	uint64		found;

	for (int i = 0; i < count; i++)
		if (events[i].cause)
			idxs[n++] = events[i].cause_index;
	if (n == 0)
		return;

	a2_args_init(&a, &lock_parents);
	a2_bind_text(&a, 1, session_id);
	a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(idxs, NULL, n));
	found = a2_exec_latest(&a, SPI_OK_SELECT);

	for (int i = 0; i < count; i++)
	{
		A2EventInput *ev = &events[i];
		bool		matched = false;

		if (!ev->cause)
			continue;
		for (uint64 r = 0; r < found; r++)
		{
			if (a2_col_int64(r, LOCK_PARENTS_IDX) != ev->cause_index)
				continue;
			matched = true;
			if (a2_col_bool(r, LOCK_PARENTS_DEAD_LETTERED))
				ereport(ERROR,
						(errcode(ERRCODE_A2_SUPERSEDED_ATTEMPT),
						 errmsg("attempt %lld no longer owns event %lld in session \"%s\"",
								(long long) ev->cause_attempt,
								(long long) ev->cause_index, session_id),
						 errdetail("The event was dead-lettered.")));
			if (a2_col_int64(r, LOCK_PARENTS_ATTEMPT_COUNT) != ev->cause_attempt)
				ereport(ERROR,
						(errcode(ERRCODE_A2_SUPERSEDED_ATTEMPT),
						 errmsg("attempt %lld no longer owns event %lld in session \"%s\"",
								(long long) ev->cause_attempt,
								(long long) ev->cause_index, session_id),
						 errdetail("The event's current attempt is %lld.",
								   (long long) a2_col_int64(r, LOCK_PARENTS_ATTEMPT_COUNT))));
			break;
		}
		if (!matched)
			ereport(ERROR,
					(errcode(ERRCODE_A2_NOT_FOUND),
					 errmsg("no event at index %lld in session \"%s\"",
							(long long) ev->cause_index, session_id),
					 errdetail("events[%d].cause names a parent that does not exist.", i)));
	}
}

static Jsonb *
append_batch(const char *session_id, A2EventInput *events, int count)
{
	A2Call		call;
	A2Json		js = NULL;
	bool		has_pending;
	JsonbValue *root;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "events");
	if (count == 0)
		has_pending = a2_session_has_pending(session_id);
	else
	{
		int64		now_ms;

		a2_check_duplicate_ids(events, count, session_id);
		a2_lock_session(session_id);
		if (detect_replay(session_id, events, count, &js))
			has_pending = a2_session_has_pending(session_id);
		else
		{
			bool		any_unsettled = false;

			check_fence(session_id, events, count);
			now_ms = a2_clock_now_ms();
			for (int i = 0; i < count; i++)
				any_unsettled |= !events[i].settled;
			/* an unsettled new event makes the session pending anyway */
			has_pending = true;
			a2_insert_events(session_id, events, count, now_ms, &js,
							 any_unsettled ? NULL : &has_pending);
		}
	}
	a2j_end_array(&js);
	a2j_bool(&js, "hasPending", has_pending);
	root = a2j_end_object(&js);
	result = a2j_finish(root, call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_append(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	A2EventInput *events;
	int			count;

	a2_require_arg(fcinfo, 1, "events");
	events = a2_parse_events(PG_GETARG_JSONB_P(1), session_id, false, &count);
	PG_RETURN_JSONB_P(append_batch(session_id, events, count));
}
