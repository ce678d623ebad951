/*-------------------------------------------------------------------------
 *
 * events.c
 *	  Inserting events, shared by a2_append and a2_complete's returned
 *	  events (events.h).
 *
 *	  Two transactions appending the same new id to different sessions race
 *	  on the unique index a2_events_event_id: the insert uses ON CONFLICT DO
 *	  NOTHING (which waits for the other transaction) and the loser raises
 *	  Z2001 instead of a unique violation.
 *
 * IDENTIFICATION
 *	  src/events.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "a2.h"
#include "events.h"
#include "layer.h"
#include "notify.h"
#include "spi_util.h"
#include "statements.h"
#include "uuid7.h"
#include "waits.h"

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
	.name = "events.find_existing_id",
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
	.name = "events.by_ids",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1, EVENTS_BY_IDS_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_3, EVENTS_BY_IDS_SQL(A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, EVENTS_BY_IDS_SQL(A2_EVENT_COLUMNS)),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1, EVENTS_BY_IDS_DIST_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_3, EVENTS_BY_IDS_DIST_SQL(A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_4, EVENTS_BY_IDS_DIST_SQL(A2_EVENT_COLUMNS)),
	},
	.nparams = 2,
	.params = {A2_PARAM("event_ids", TEXTARRAYOID), A2_PARAM("session_id", TEXTOID)},
	.session_param = 2, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)
};

A2_STATEMENT_GROUP(events, &find_existing_id, &events_by_ids);

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
 * A replay repeats notBefore too (docs/json.md): both absent, or equal.  Only
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
	bool		handled;
	bool		claimed = a2_col_int64(row, A2C_ATTEMPT_COUNT) > 0;

	/* a waiting row's not_before is its gate: waits.c compares its own */
	if (!a2_wait_matches(row, ev, !claimed, &handled))
		return false;
	if (handled || claimed)
		return true;

	if (isnull != !ev->has_not_before)
		return false;
	return isnull || DatumGetInt64(stored) == ev->not_before;
}

/* A replay repeats queue, priority and concurrencyKey (0.4.0) too. */
static bool
same_text(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

static bool
dispatch_matches(uint64 row, const A2EventInput *ev)
{
	bool		isnull;
	Datum		prio = a2_col(row, A2C_PRIORITY, &isnull);

	if ((isnull ? 0 : DatumGetInt32(prio)) != ev->priority)
		return false;
	return same_text(a2_col_text(row, A2C_QUEUE), ev->queue) &&
		same_text(a2_col_text(row, A2C_CONCURRENCY_KEY), ev->concurrency_key);
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
	if (!dispatch_matches(row, ev))
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


/* The StoredEvent of an event just inserted, without reading it back. */
static void
put_new_event(A2Json *js, const char *session_id, int64 idx,
			  const A2EventInput *ev, int64 now_ms, Jsonb *wait_result)
{
	A2StoredEvent stored;

	memset(stored.present, 0, sizeof(stored.present));
	stored.present[A2C_EVENT_ID] = true;
	stored.text[A2C_EVENT_ID] = ev->id;
	stored.present[A2C_EVENT_TYPE] = true;
	stored.text[A2C_EVENT_TYPE] = ev->type;
	stored.present[A2C_PAYLOAD] = true;
	stored.json[A2C_PAYLOAD] = ev->payload;
	stored.present[A2C_IDX] = true;
	stored.num[A2C_IDX] = idx;
	stored.present[A2C_SESSION_ID] = true;
	stored.text[A2C_SESSION_ID] = session_id;
	stored.present[A2C_CREATED_AT] = true;
	stored.num[A2C_CREATED_AT] = now_ms;
	a2_stored_set_cause(&stored, ev->cause);
	stored.present[A2C_LANE] = ev->lane != NULL;
	stored.text[A2C_LANE] = ev->lane;
	stored.present[A2C_PROCESSED_AT] = ev->settled;
	stored.num[A2C_PROCESSED_AT] = now_ms;
	stored.present[A2C_ATTEMPT_COUNT] = true;
	stored.num[A2C_ATTEMPT_COUNT] = 0;
	stored.present[A2C_FAILURE_COUNT] = true;
	stored.num[A2C_FAILURE_COUNT] = 0;
	stored.present[A2C_NOT_BEFORE] = ev->has_not_before;
	stored.num[A2C_NOT_BEFORE] = ev->not_before;
	stored.present[A2C_QUEUE] = ev->queue != NULL;
	stored.text[A2C_QUEUE] = ev->queue;
	stored.present[A2C_PRIORITY] = ev->priority != 0;
	stored.num[A2C_PRIORITY] = ev->priority;
	stored.present[A2C_CONCURRENCY_KEY] = ev->concurrency_key != NULL;
	stored.text[A2C_CONCURRENCY_KEY] = ev->concurrency_key;
	if (ev->wait_types)
	{
		A2Json		w = NULL;

		a2j_begin_object(&w, NULL);
		a2j_jsonb(&w, "types", ev->wait_types);
		if (ev->has_wait_timeout)
			a2j_int(&w, "timeoutMs", ev->wait_timeout_ms);
		stored.present[A2C_WAIT_FOR] = true;
		stored.json[A2C_WAIT_FOR] = JsonbValueToJsonb(a2j_end_object(&w));
		stored.present[A2C_WAIT_RESULT] = wait_result != NULL;
		stored.json[A2C_WAIT_RESULT] = wait_result;
		/* a timeout of 0 ends the wait at once */
		if (!wait_result && ev->has_wait_timeout && ev->wait_timeout_ms == 0)
		{
			a2j_begin_object(&w, NULL);
			a2j_bool(&w, "timedOut", true);
			stored.present[A2C_WAIT_RESULT] = true;
			stored.json[A2C_WAIT_RESULT] = JsonbValueToJsonb(a2j_end_object(&w));
		}
	}
	a2j_stored_event(js, NULL, &stored, true);
}



static bool
batch_waits(const A2EventInput *events, int count)
{
	for (int i = 0; i < count; i++)
		if (events[i].wait_stored)
			return true;
	return false;
}

void
a2_insert_events(const char *session_id, A2EventInput *events, int count,
				 int64 now_ms, A2Json *js, bool *had_pending)
{
	Datum		session = CStringGetTextDatum(session_id);
	bool		all_generated = true;
	A2InsertOutcome out;
	int64		base;
	Jsonb	  **wait_results;

	for (int i = 0; i < count; i++)
	{
		if (events[i].id == NULL)
			events[i].id = a2_uuid7(now_ms);
		else
			all_generated = false;
		if (events[i].has_not_before)
			a2_require_not_before();
		if (events[i].queue || events[i].priority != 0 || events[i].concurrency_key)
			a2_require_dispatch();
	}
	a2_waits_prepare(events, count, now_ms);
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

	/*
	 * The waits this batch ends, its own included (waits.h): none when
	 * the session had no waiting event and the batch brings none.
	 */
	wait_results = NULL;
	if (out.waiting || batch_waits(events, count))
		wait_results = a2_waits_satisfy(session_id, events, count, base, now_ms);
	for (int i = 0; i < count; i++)
	{
		Jsonb	   *wait_result = wait_results ? wait_results[i] : NULL;

		put_new_event(js, session_id, base + 1 + i, &events[i], now_ms,
					  wait_result);
		if (events[i].settled)
			continue;
		if (events[i].wait_types && !wait_result)
		{
			if (events[i].wait_gate < A2_WAIT_FOREVER)
				a2_notify_due(events[i].wait_gate);
		}
		else if (events[i].has_not_before)
			a2_notify_due(events[i].not_before);
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
 * queue, priority and concurrencyKey need 0.4.0's columns: refuse them
 * (0A000) while a 0.3.0 database waits for ALTER EXTENSION a2 UPDATE, and
 * in distributed mode (docs/distributed.md).
 */
void
a2_require_dispatch(void)
{
	if (!a2_has_dispatch())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("queues, priorities and concurrency keys need the a2 0.4.0 tables"),
				 errdetail("They are stored in a2_events.queue, priority and concurrency_key, which this database does not have yet; nothing was written."),
				 errhint("Run ALTER EXTENSION a2 UPDATE.")));
	if (a2_distributed())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("queues, priorities and concurrency keys are not supported in distributed mode"),
				 errdetail("Nothing was written; see docs/distributed.md.")));
}
