/*-------------------------------------------------------------------------
 *
 * local.c
 *	  The single-node layer (layer.h): a2 on one PostgreSQL server.
 *
 *	  Session lock: a transaction advisory lock keyed by hashtext(session_id)
 *	  widened to bigint, the key the TypeScript backend takes with
 *	  pg_advisory_xact_lock(hashtext($1)), so a TypeScript worker and SQL
 *	  callers serialize against each other.  Presence participant lock: the
 *	  two-key advisory space (key 1 = A2_PRESENCE_LOCK_CLASS, key 2 =
 *	  hashtext(ns || ':' || participant)), which never collides with the
 *	  one-key session locks.
 *
 *	  Writes are set-based: a batch of events is one INSERT ... SELECT from
 *	  unnest() (one INSERT ... VALUES for a single event, or no statement
 *	  at all where direct_insert.h may write it), a presence write two
 *	  statements whatever its number of fields.
 *
 *	  Lock order: the one of layer.h.  Calls nothing above the layer.
 *
 * IDENTIFICATION
 *	  src/local.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "call.h"
#include "direct.h"
#include "layer.h"
#include "session.h"
#include "spi_util.h"
#include "statements.h"
#include "walk_mark.h"

/* ---- session lock ---------------------------------------------------- */

/* The advisory lock key of a session: hashtext(session_id) widened to bigint. */
static Datum
session_lock_key(const char *session_id)
{
	Datum		key = DirectFunctionCall1Coll(hashtext, DEFAULT_COLLATION_OID,
											  CStringGetTextDatum(session_id));

	return Int64GetDatum((int64) DatumGetInt32(key));
}

static void
local_lock_session(const char *session_id)
{
	DirectFunctionCall1(pg_advisory_xact_lock_int8, session_lock_key(session_id));
}

static bool
local_try_lock_session(const char *session_id)
{
	return DatumGetBool(DirectFunctionCall1(pg_try_advisory_xact_lock_int8,
											session_lock_key(session_id)));
}

/* ---- appending events ------------------------------------------------ */

/*
 * One statement: read the session's greatest index (and, when $10 asks,
 * whether it has an unprocessed event), then insert the batch after it.  An
 * event with a lane is lane-ready when no unprocessed event of that lane
 * exists already and no earlier unsettled event of the batch has it ($8,
 * computed in C).  Without rows, the base is a dropped session's high-water
 * mark (MARK_* below, retire.c; COALESCE stops at its first
 * non-null argument), so indexes continue after a drop and are never
 * reused.  The subqueries see the statement's snapshot, i.e. the
 * log before the insert.  Two variants: supplied ids go through ON CONFLICT
 * so a concurrent append of the same id becomes Z2001; a batch whose ids
 * were all generated here (time-ordered UUIDs, src/uuid7.c) skips the speculative insertion.
 */
#define INSERT_BATCH_SQL(on_conflict, mark, nb_column, nb_value) \
	INSERT_BATCH_SQL_X(on_conflict, mark, nb_column, nb_value, "", "", NO_WAITING)
#define INSERT_BATCH_SQL_X(on_conflict, mark, nb_column, nb_value, more_unnest, more_alias, waiting) \
	"WITH st AS MATERIALIZED (" \
	"  SELECT COALESCE((SELECT e.idx FROM @extschema@.a2_events e" \
	"                    WHERE e.session_id OPERATOR(pg_catalog.=) $1 ORDER BY e.idx DESC LIMIT 1)," \
	"                  " mark ", 0) AS base," \
	"         CASE WHEN $10 THEN EXISTS (SELECT 1 FROM @extschema@.a2_events e" \
	"                  WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL) END AS pending" \
	"), ins AS (" \
	"  INSERT INTO @extschema@.a2_events" \
	"    (session_id, idx, event_type, payload, event_id, created_at," \
	"     cause, lane, lane_ready, processed_at" nb_column ")" \
	"  SELECT $1, st.base OPERATOR(pg_catalog.+) i.ord, i.event_type, i.payload, i.event_id, $2," \
	"         i.cause, i.lane," \
	"         i.lane IS NULL OR (NOT i.batch_blocked AND NOT EXISTS (" \
	"           SELECT 1 FROM @extschema@.a2_events p" \
	"            WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.lane OPERATOR(pg_catalog.=) i.lane AND p.processed_at IS NULL))," \
	"         CASE WHEN i.settled THEN $2 END" nb_value \
	"    FROM st, ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)," \
	"                        pg_catalog.unnest($7), pg_catalog.unnest($8), pg_catalog.unnest($9)," \
	"                        pg_catalog.unnest($11)" more_unnest ") WITH ORDINALITY" \
	"         AS i(event_type, payload, event_id, cause, lane, batch_blocked, settled, not_before" more_alias ", ord)" \
	on_conflict \
	"  RETURNING 1" \
	") SELECT st.base, st.pending, (SELECT pg_catalog.count(*) FROM ins) AS inserted," \
	"         " waiting " AS waiting FROM st"

/*
 * Whether the session had a waiting event before the insert (waits.c reads
 * it to skip its probe): from 0.4.0 on, on one server; NULL before.
 */
#define NO_WAITING "NULL::pg_catalog.bool"
#define WAITING(alias) \
	"EXISTS (SELECT 1 FROM @extschema@.a2_events " alias \
	"         WHERE " alias ".session_id OPERATOR(pg_catalog.=) $1 AND " alias ".wait_for IS NOT NULL" \
	"           AND " alias ".wait_result IS NULL AND " alias ".processed_at IS NULL)"

/*
 * The high-water mark of a dropped session (retire.c): none before 0.2.0;
 * read through a2_retired_last_index(), which answers whoever may INSERT
 * into a2_events (from 0.4.0; SECURITY DEFINER with EXECUTE granted
 * before), so appenders need no grant on a2_retired_sessions; on a pinned shard straight from
 * the shard of a2_retired_sessions (the function would plan its query
 * through Citus; in distributed mode a2_grant_worker grants SELECT on it).
 */
#define MARK_NONE "NULL::pg_catalog.int8"
#define MARK_FUNCTION "@extschema@.a2_retired_last_index($1)"
#define MARK_SHARD \
	"(SELECT r.last_index FROM @extschema@.a2_retired_sessions r" \
	"  WHERE r.session_id OPERATOR(pg_catalog.=) $1)"

/* Supplied ids conflict on event_id, in distributed mode per session. */
#define ON_EVENT_ID "  ON CONFLICT (event_id) DO NOTHING"
#define ON_SESSION_EVENT_ID "  ON CONFLICT (session_id, event_id) DO NOTHING"

/*
 * The texts of one insert statement: `sql` is INSERT_BATCH_SQL or
 * INSERT_ONE_SQL, `single` and `distributed` the conflict clauses.  From
 * 0.4.0 on, on one server, the row also stores its wait (waits.c: w_column
 * and w_value, and for the batch form w_unnest and w_alias); distributed
 * mode refuses waits, so its texts stay.
 */
#define INSERT_TEXTS(sql, single, distributed, nb_column, nb_value, sql_0_4) \
	A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1, sql(single, MARK_NONE, "", "")), \
	A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, sql_0_4), \
	A2_TEXT(A2_SINGLE, A2_OBJECTS_0_2, sql(single, MARK_FUNCTION, "", "")), \
	A2_TEXT(A2_SINGLE, A2_OBJECTS_0_3, sql(single, MARK_FUNCTION, nb_column, nb_value)), \
	A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1, sql(distributed, MARK_NONE, "", "")), \
	A2_TEXT(A2_ROUTED, A2_OBJECTS_0_2, sql(distributed, MARK_FUNCTION, "", "")), \
	A2_TEXT(A2_ROUTED, A2_OBJECTS_0_3, sql(distributed, MARK_FUNCTION, nb_column, nb_value)), \
	A2_TEXT(A2_SHARD, A2_OBJECTS_0_2, sql(distributed, MARK_SHARD, "", "")), \
	A2_TEXT(A2_SHARD, A2_OBJECTS_0_3, sql(distributed, MARK_SHARD, nb_column, nb_value))

#define INSERT_BATCH_PARAMS \
	.nparams = 15, \
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("now", INT8OID), \
		A2_PARAM("event_types", TEXTARRAYOID), A2_PARAM("payloads", JSONBARRAYOID), \
		A2_PARAM("event_ids", TEXTARRAYOID), A2_PARAM("causes", JSONBARRAYOID), \
		A2_PARAM("lanes", TEXTARRAYOID), A2_PARAM("batch_blocked", BOOLARRAYOID), \
		A2_PARAM("settled", BOOLARRAYOID), A2_PARAM("want_pending", BOOLOID), \
	A2_PARAM("not_befores", INT8ARRAYOID), A2_PARAM("queues", TEXTARRAYOID), \
	A2_PARAM("priorities", INT4ARRAYOID), A2_PARAM("concurrency_keys", TEXTARRAYOID), \
	A2_PARAM("wait_fors", JSONBARRAYOID)}, \
	.session_param = 1, .columns = A2_COLUMNS("base", "pending", "inserted", "waiting")

enum
{
	INSERT_BATCH_BASE = 1,
	INSERT_BATCH_PENDING,
	INSERT_BATCH_INSERTED,
	INSERT_BATCH_WAITING
};

/*
 * 0.4.0 (single node only: distributed mode refuses the dispatch fields
 * and waitFor, events.c): queue, priority and concurrency_key, NULL for
 * the defaults, and wait_for (src/waits.c; not_before then holds the
 * wait's gate).
 */
#define A2_APPLY(macro, ...) macro(__VA_ARGS__)
#define BATCH_DISPATCH_X \
	", not_before, queue, priority, concurrency_key, wait_for", \
	", i.not_before, i.queue, i.priority, i.concurrency_key, i.wait_for", \
	", pg_catalog.unnest($12), pg_catalog.unnest($13), pg_catalog.unnest($14), pg_catalog.unnest($15)", \
	", queue, priority, concurrency_key, wait_for", \
	WAITING("w")
#define ONE_DISPATCH_X \
	", not_before, queue, priority, concurrency_key, wait_for", ", $10, $11, $12, $13, $14", \
	WAITING("w")

/* In distributed mode event ids are unique per session (a pinned shard). */
static A2Statement insert_batch = {
	.name = "local.insert_batch",
	.walk_keys = true,
	.texts = {INSERT_TEXTS(INSERT_BATCH_SQL, ON_EVENT_ID, ON_SESSION_EVENT_ID,
						   ", not_before", ", i.not_before",
						   A2_APPLY(INSERT_BATCH_SQL_X, ON_EVENT_ID, MARK_FUNCTION, BATCH_DISPATCH_X))},
	INSERT_BATCH_PARAMS
};

static A2Statement insert_generated = {
	.name = "local.insert_generated",
	.walk_keys = true,
	.texts = {INSERT_TEXTS(INSERT_BATCH_SQL, "", "", ", not_before", ", i.not_before",
						   A2_APPLY(INSERT_BATCH_SQL_X, "", MARK_FUNCTION, BATCH_DISPATCH_X))},
	INSERT_BATCH_PARAMS
};

/*
 * The same for a batch of one event with scalar parameters: no function
 * scan, no CTEs, a fifth cheaper to start up.  RETURNING's subquery sees
 * the statement's snapshot, i.e. the log before this row.
 */
#define INSERT_ONE_SQL(on_conflict, mark, nb_column, nb_value) \
	INSERT_ONE_SQL_X(on_conflict, mark, nb_column, nb_value, NO_WAITING)
#define INSERT_ONE_SQL_X(on_conflict, mark, nb_column, nb_value, waiting) \
	"INSERT INTO @extschema@.a2_events AS e" \
	"  (session_id, idx, event_type, payload, event_id, created_at," \
	"   cause, lane, lane_ready, processed_at" nb_column ")" \
	" VALUES ($1," \
	"   COALESCE((SELECT x.idx FROM @extschema@.a2_events x" \
	"              WHERE x.session_id OPERATOR(pg_catalog.=) $1 ORDER BY x.idx DESC LIMIT 1)," \
	"            " mark ", 0) OPERATOR(pg_catalog.+) 1," \
	"   $3, $4, $5, $2, $6, $7," \
	"   $7 IS NULL OR NOT EXISTS (SELECT 1 FROM @extschema@.a2_events p" \
	"              WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.lane OPERATOR(pg_catalog.=) $7 AND p.processed_at IS NULL)," \
	"   CASE WHEN $8 THEN $2 END" nb_value ")" \
	on_conflict \
	" RETURNING e.idx, CASE WHEN $9 THEN EXISTS (SELECT 1 FROM @extschema@.a2_events q" \
	"              WHERE q.session_id OPERATOR(pg_catalog.=) $1 AND q.processed_at IS NULL) END AS pending," \
	"   " waiting " AS waiting"

#define INSERT_ONE_PARAMS \
	.nparams = 14, \
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("now", INT8OID), \
		A2_PARAM("event_type", TEXTOID), A2_PARAM("payload", JSONBOID), \
		A2_PARAM("event_id", TEXTOID), A2_PARAM("cause", JSONBOID), \
		A2_PARAM("lane", TEXTOID), A2_PARAM("settled", BOOLOID), \
	A2_PARAM("want_pending", BOOLOID), A2_PARAM("not_before", INT8OID), \
	A2_PARAM("queue", TEXTOID), A2_PARAM("priority", INT4OID), \
	A2_PARAM("concurrency_key", TEXTOID), A2_PARAM("wait_for", JSONBOID)}, \
	.session_param = 1, .columns = A2_COLUMNS("idx", "pending", "waiting")

enum
{
	INSERT_ONE_IDX = 1,
	INSERT_ONE_PENDING,
	INSERT_ONE_WAITING
};

static A2Statement insert_one = {
	.name = "local.insert_one",
	.walk_keys = true,
	.texts = {INSERT_TEXTS(INSERT_ONE_SQL, " ON CONFLICT (event_id) DO NOTHING",
						   " ON CONFLICT (session_id, event_id) DO NOTHING",
						   ", not_before", ", $10",
						   A2_APPLY(INSERT_ONE_SQL_X, " ON CONFLICT (event_id) DO NOTHING", MARK_FUNCTION, ONE_DISPATCH_X))},
	INSERT_ONE_PARAMS
};

static A2Statement insert_one_generated = {
	.name = "local.insert_one_generated",
	.walk_keys = true,
	.texts = {INSERT_TEXTS(INSERT_ONE_SQL, "", "", ", not_before", ", $10",
						   A2_APPLY(INSERT_ONE_SQL_X, "", MARK_FUNCTION, ONE_DISPATCH_X))},
	INSERT_ONE_PARAMS
};

/*
 * The walk marks (walk_mark.h): an event's key in a2_events_default_available
 * is greatest(not_before, created_at), created_at being now.
 */
static void
report_keys(A2EventInput *events, int count, int64 now_ms)
{
	int64		kmin = PG_INT64_MAX;
	int64		kmax = PG_INT64_MIN;

	for (int i = 0; i < count; i++)
	{
		int64		key = now_ms;

		if (events[i].wait_stored)
			key = Max(key, events[i].wait_gate);
		else if (events[i].has_not_before)
			key = Max(key, events[i].not_before);
		kmin = Min(kmin, key);
		kmax = Max(kmax, key);
	}
	if (count > 0)
		a2_walk_mark_lower(kmin, kmax);
}

/* The statement's "waiting" column: unknown (NULL, before 0.4.0) counts as true. */
static bool
waiting_col(int col)
{
	bool		isnull;
	Datum		d = a2_col(0, col, &isnull);

	return isnull || DatumGetBool(d);
}

static void
insert_single(Datum session, A2EventInput *ev, int64 now_ms, bool generated,
			  bool need_pending, A2InsertOutcome *out)
{
	A2Args		a;

	report_keys(ev, 1, now_ms);
	if (a2_direct_insert_one(session, ev, now_ms, generated, need_pending, out))
		return;
	a2_args_init(&a, generated ? &insert_one_generated : &insert_one);
	a2_bind(&a, 1, TEXTOID, session);
	a2_bind_int8(&a, 2, now_ms);
	a2_bind_text(&a, 3, ev->type);
	a2_bind(&a, 4, JSONBOID, JsonbPGetDatum(ev->payload));
	a2_bind_text(&a, 5, ev->id);
	if (ev->cause)
		a2_bind(&a, 6, JSONBOID, JsonbPGetDatum(ev->cause));
	else
		a2_bind_null(&a, 6);
	a2_bind_text(&a, 7, ev->lane);
	a2_bind_bool(&a, 8, ev->settled);
	a2_bind_bool(&a, 9, need_pending);
	if (ev->wait_stored)
		a2_bind_int8(&a, 10, ev->wait_gate);
	else if (ev->has_not_before)
		a2_bind_int8(&a, 10, ev->not_before);
	else
		a2_bind_null(&a, 10);
	a2_bind_text(&a, 11, ev->queue);
	if (ev->priority != 0)
		a2_bind_int4(&a, 12, ev->priority);
	else
		a2_bind_null(&a, 12);
	a2_bind_text(&a, 13, ev->concurrency_key);
	if (ev->wait_stored)
		a2_bind(&a, 14, JSONBOID, JsonbPGetDatum(ev->wait_stored));
	else
		a2_bind_null(&a, 14);

	out->inserted = a2_exec_latest(&a, SPI_OK_INSERT_RETURNING);
	/* nothing of ours was written when the id was taken */
	out->base = out->inserted ? a2_col_int64(0, INSERT_ONE_IDX) - 1 : PG_INT64_MAX;
	out->pending = out->inserted && a2_col_bool(0, INSERT_ONE_PENDING);
	out->waiting = !out->inserted || waiting_col(INSERT_ONE_WAITING);
}

static void
insert_batch_rows(Datum session, A2EventInput *events, int count,
				  int64 now_ms, bool generated, bool need_pending,
				  A2InsertOutcome *out)
{
	A2Args		a;
	char	  **types = palloc(sizeof(char *) * count);
	char	  **ids = palloc(sizeof(char *) * count);
	char	  **lanes = palloc(sizeof(char *) * count);
	Jsonb	  **payloads = palloc(sizeof(Jsonb *) * count);
	Jsonb	  **causes = palloc(sizeof(Jsonb *) * count);
	bool	   *blocked = palloc(sizeof(bool) * count);
	bool	   *settled = palloc(sizeof(bool) * count);
	int64	   *not_before = palloc(sizeof(int64) * count);
	bool	   *no_not_before = palloc(sizeof(bool) * count);
	char	  **queues = palloc(sizeof(char *) * count);
	int32	   *priorities = palloc(sizeof(int32) * count);
	bool	   *no_priority = palloc(sizeof(bool) * count);
	char	  **keys = palloc(sizeof(char *) * count);
	Jsonb	  **wait_fors = palloc(sizeof(Jsonb *) * count);

	a2_batch_blocked_lanes(events, count, blocked);
	for (int i = 0; i < count; i++)
	{
		types[i] = events[i].type;
		ids[i] = events[i].id;
		lanes[i] = events[i].lane;
		payloads[i] = events[i].payload;
		causes[i] = events[i].cause;
		settled[i] = events[i].settled;
		not_before[i] = events[i].wait_stored ? events[i].wait_gate : events[i].not_before;
		no_not_before[i] = !events[i].has_not_before && !events[i].wait_stored;
		queues[i] = events[i].queue;
		priorities[i] = events[i].priority;
		no_priority[i] = events[i].priority == 0;
		keys[i] = events[i].concurrency_key;
		wait_fors[i] = events[i].wait_stored;
	}
	a2_args_init(&a, generated ? &insert_generated : &insert_batch);
	a2_bind(&a, 1, TEXTOID, session);
	a2_bind_int8(&a, 2, now_ms);
	a2_bind(&a, 3, TEXTARRAYOID, a2_text_array(types, count));
	a2_bind(&a, 4, JSONBARRAYOID, a2_jsonb_array(payloads, count));
	a2_bind(&a, 5, TEXTARRAYOID, a2_text_array(ids, count));
	a2_bind(&a, 6, JSONBARRAYOID, a2_jsonb_array(causes, count));
	a2_bind(&a, 7, TEXTARRAYOID, a2_text_array(lanes, count));
	a2_bind(&a, 8, BOOLARRAYOID, a2_bool_array(blocked, count));
	a2_bind(&a, 9, BOOLARRAYOID, a2_bool_array(settled, count));
	a2_bind_bool(&a, 10, need_pending);
	a2_bind(&a, 11, INT8ARRAYOID, a2_int8_array(not_before, no_not_before, count));
	a2_bind(&a, 12, TEXTARRAYOID, a2_text_array(queues, count));
	a2_bind(&a, 13, INT4ARRAYOID, a2_int4_array(priorities, no_priority, count));
	a2_bind(&a, 14, TEXTARRAYOID, a2_text_array(keys, count));
	a2_bind(&a, 15, JSONBARRAYOID, a2_jsonb_array(wait_fors, count));
	report_keys(events, count, now_ms);
	a2_exec_latest(&a, SPI_OK_SELECT);
	out->base = a2_col_int64(0, INSERT_BATCH_BASE);
	out->pending = a2_col_bool(0, INSERT_BATCH_PENDING);
	out->inserted = a2_col_int64(0, INSERT_BATCH_INSERTED);
	out->waiting = waiting_col(INSERT_BATCH_WAITING);
}

static void
local_insert_events(const char *session_id, A2EventInput *events, int count,
					int64 now_ms, bool generated, bool need_pending,
					A2InsertOutcome *out)
{
	Datum		session = CStringGetTextDatum(session_id);

	if (count == 1)
		insert_single(session, &events[0], now_ms, generated, need_pending, out);
	else
		insert_batch_rows(session, events, count, now_ms, generated,
						  need_pending, out);
}

/* ---- presence -------------------------------------------------------- */

#define A2_PRESENCE_LOCK_CLASS	0x61320050	/* "a2" "P" */

static A2Statement delete_fields = {
	.name = "local.delete_fields",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"WITH win AS ("
				"  SELECT f.field FROM pg_catalog.unnest($3) AS f(field)"
				"   WHERE NOT EXISTS (SELECT 1 FROM @extschema@.a2_presence p"
				"                      WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) f.field"
				"                        AND p.expires_at OPERATOR(pg_catalog.>) $5 AND p.at OPERATOR(pg_catalog.>) $4)"
				"     AND NOT EXISTS (SELECT 1 FROM @extschema@.a2_presence_tombstones t"
				"                      WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) f.field"
				"                        AND t.expires_at OPERATOR(pg_catalog.>) $5 AND t.at OPERATOR(pg_catalog.>) $4)"
				"), gone AS ("
				"  DELETE FROM @extschema@.a2_presence p USING win"
				"   WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) win.field"
				") INSERT INTO @extschema@.a2_presence_tombstones"
				"    (ns, participant, field, at, expires_at)"
				"  SELECT $1, $2, win.field, $4, $6 FROM win"
				"  ON CONFLICT (ns, participant, field) DO UPDATE"
				"    SET at = excluded.at, expires_at = excluded.expires_at"),
	},
	.nparams = 6,
	.params = {A2_PARAM("ns", TEXTOID), A2_PARAM("participant", TEXTOID),
		A2_PARAM("fields", TEXTARRAYOID), A2_PARAM("at", INT8OID),
		A2_PARAM("now", INT8OID), A2_PARAM("expires_at", INT8OID)},
};

static A2Statement set_fields = {
	.name = "local.set_fields",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"WITH win AS ("
				"  SELECT f.field, f.value FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4)) AS f(field, value)"
				"   WHERE NOT EXISTS (SELECT 1 FROM @extschema@.a2_presence p"
				"                      WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) f.field"
				"                        AND p.expires_at OPERATOR(pg_catalog.>) $7 AND p.at OPERATOR(pg_catalog.>) $6)"
				"     AND NOT EXISTS (SELECT 1 FROM @extschema@.a2_presence_tombstones t"
				"                      WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) f.field"
				"                        AND t.expires_at OPERATOR(pg_catalog.>) $7 AND t.at OPERATOR(pg_catalog.>) $6)"
				"), unburied AS ("
				"  DELETE FROM @extschema@.a2_presence_tombstones t USING win"
				"   WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) win.field"
				") INSERT INTO @extschema@.a2_presence"
				"    (ns, participant, field, value, seen, at, expires_at)"
				"  SELECT $1, $2, win.field, win.value, $5, $6, $8 FROM win"
				"  ON CONFLICT (ns, participant, field) DO UPDATE"
				"    SET value = excluded.value, seen = excluded.seen,"
				"        at = excluded.at, expires_at = excluded.expires_at"),
	},
	.nparams = 8,
	.params = {A2_PARAM("ns", TEXTOID), A2_PARAM("participant", TEXTOID),
		A2_PARAM("fields", TEXTARRAYOID), A2_PARAM("values", JSONBARRAYOID),
		A2_PARAM("seen", INT8OID), A2_PARAM("at", INT8OID), A2_PARAM("now", INT8OID),
		A2_PARAM("expires_at", INT8OID)},
};

static Datum
participant_key(const char *ns, const char *participant)
{
	char	   *key = psprintf("%s:%s", ns, participant);

	return DirectFunctionCall1Coll(hashtext, DEFAULT_COLLATION_OID,
								   CStringGetTextDatum(key));
}

static void
local_lock_participant(const char *ns, const char *participant)
{
	DirectFunctionCall2(pg_advisory_xact_lock_int4,
						Int32GetDatum(A2_PRESENCE_LOCK_CLASS),
						participant_key(ns, participant));
}

static bool
local_try_lock_participant(const char *ns, const char *participant)
{
	return DatumGetBool(DirectFunctionCall2(pg_try_advisory_xact_lock_int4,
											Int32GetDatum(A2_PRESENCE_LOCK_CLASS),
											participant_key(ns, participant)));
}

static void
local_presence_write(const A2PresenceWrite *w)
{
	A2Call		call;
	A2Args		a;

	/* the call's "session" is the namespace: presence is keyed by ns */
	a2_call_begin(&call, w->ns);
	local_lock_participant(w->ns, w->participant);
	if (w->ndel > 0)
	{
		a2_args_init(&a, &delete_fields);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_bind_text(&a, 2, w->participant);
		a2_bind(&a, 3, TEXTARRAYOID, a2_text_array(w->del_fields, w->ndel));
		a2_bind_int8(&a, 4, w->at_ms);
		a2_bind_int8(&a, 5, w->now_ms);
		a2_bind_int8(&a, 6, w->expires_ms);
		a2_exec_latest(&a, SPI_OK_INSERT);
	}
	if (w->nset > 0)
	{
		a2_args_init(&a, &set_fields);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_bind_text(&a, 2, w->participant);
		a2_bind(&a, 3, TEXTARRAYOID, a2_text_array(w->set_fields, w->nset));
		a2_bind(&a, 4, JSONBARRAYOID, a2_jsonb_array(w->set_values, w->nset));
		a2_bind_int8(&a, 5, w->seen);
		a2_bind_int8(&a, 6, w->at_ms);
		a2_bind_int8(&a, 7, w->now_ms);
		a2_bind_int8(&a, 8, w->expires_ms);
		a2_exec_latest(&a, SPI_OK_INSERT);
	}
	a2_call_end(&call);
}


/* ---- snapshots (snapshots.c) ----------------------------------------- */

static A2Statement insert_pins = {
	.name = "local.insert_pins",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshot_pins"
				"  (session_id, event_index, reducer_name, up_to_index)"
				" SELECT $1, i.idx, $2, $3 FROM pg_catalog.unnest($4) AS i(idx)"
				" ON CONFLICT DO NOTHING"),
	},
	.nparams = 4,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID), A2_PARAM("event_indexes", INT8ARRAYOID)},
	.session_param = 1,
};

static A2Statement head_to_history = {
	.name = "local.head_to_history",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshot_history"
				"  (session_id, reducer_name, up_to_index, state, updated_at)"
				" SELECT s.session_id, s.reducer_name, s.up_to_index, s.state, s.updated_at"
				"   FROM @extschema@.a2_snapshots s"
				"  WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $2"
				" ON CONFLICT (session_id, reducer_name, up_to_index) DO UPDATE"
				"   SET state = excluded.state, updated_at = excluded.updated_at"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID)},
	.session_param = 1,
};

static void
local_insert_pins(const char *session_id, const char *reducer, int64 index,
				  const int64 *pins, int n)
{
	A2Args		a;

	a2_args_init(&a, &insert_pins);
	a2_bind_text(&a, 1, session_id);
	a2_bind_text(&a, 2, reducer);
	a2_bind_int8(&a, 3, index);
	a2_bind(&a, 4, INT8ARRAYOID, a2_int8_array(unconstify(int64 *, pins), NULL, n));
	a2_exec_latest(&a, SPI_OK_INSERT);
}

static void
local_head_to_history(const char *session_id, const char *reducer)
{
	A2Args		a;

	a2_args_init(&a, &head_to_history);
	a2_bind_text(&a, 1, session_id);
	a2_bind_text(&a, 2, reducer);
	a2_exec_latest(&a, SPI_OK_INSERT);
}

/* ---- state reads (state.c): every request in one statement ----------- */

static A2Statement read_states = {
	.name = "local.read_states",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"WITH req AS ("
				"  SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3))"
				"    WITH ORDINALITY AS r(session_id, through, snap_through, ord)"
				"), sel AS MATERIALIZED ("
				"  SELECT r.ord, r.session_id, r.through, h.up_to_index AS head_index,"
				"         c.up_to_index AS snap_index, c.state AS snap_state"
				"    FROM req r"
				"    LEFT JOIN @extschema@.a2_snapshots h"
				"      ON h.session_id OPERATOR(pg_catalog.=) r.session_id AND h.reducer_name OPERATOR(pg_catalog.=) $4"
				"    LEFT JOIN LATERAL ("
				"      SELECT u.up_to_index, u.state FROM ("
				"        (SELECT s.up_to_index, s.state FROM @extschema@.a2_snapshots s"
				"          WHERE s.session_id OPERATOR(pg_catalog.=) r.session_id AND s.reducer_name OPERATOR(pg_catalog.=) $4"
				"            AND s.up_to_index OPERATOR(pg_catalog.<=) COALESCE(r.snap_through, 9223372036854775807))"
				"        UNION ALL"
				"        (SELECT x.up_to_index, x.state FROM @extschema@.a2_snapshot_history x"
				"          WHERE x.session_id OPERATOR(pg_catalog.=) r.session_id AND x.reducer_name OPERATOR(pg_catalog.=) $4"
				"            AND x.up_to_index OPERATOR(pg_catalog.<=) COALESCE(r.snap_through, 9223372036854775807)"
				"          ORDER BY x.up_to_index DESC LIMIT 1)"
				"      ) u ORDER BY u.up_to_index DESC LIMIT 1"
				"    ) c ON true"
				") "
				"SELECT NULL::pg_catalog.text AS session_id, NULL::bigint AS idx,"
				"       NULL::pg_catalog.text AS event_type, NULL::pg_catalog.jsonb AS payload,"
				"       NULL::pg_catalog.text AS event_id, NULL::bigint AS created_at,"
				"       sel.ord, 0 AS kind, sel.head_index, sel.snap_index, sel.snap_state"
				"  FROM sel "
				"UNION ALL "
				"SELECT e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at,"
				"       sel.ord, 1, NULL, NULL, NULL"
				"  FROM sel CROSS JOIN LATERAL ("
				"    SELECT x.session_id, x.idx, x.event_type, x.payload, x.event_id, x.created_at"
				"      FROM @extschema@.a2_events x"
				"     WHERE x.session_id OPERATOR(pg_catalog.=) sel.session_id"
				"       AND x.idx OPERATOR(pg_catalog.>) COALESCE(sel.snap_index, -1)"
				"       AND x.idx OPERATOR(pg_catalog.<=) COALESCE(sel.through, 9223372036854775807)"
				"    OFFSET 0"
				"  ) e "
				"ORDER BY 7, 8, 2"),
	},
	.nparams = 4,
	.params = {A2_PARAM("session_ids", TEXTARRAYOID), A2_PARAM("through_indexes", INT8ARRAYOID),
	A2_PARAM("snapshot_through_indexes", INT8ARRAYOID), A2_PARAM("reducer_name", TEXTOID)},
	.columns = A2_COLUMNS("session_id", "idx", "event_type", "payload", "event_id", "created_at",
						  "ord", "kind", "head_index", "snap_index", "snap_state")
};

static void
local_read_states(const A2StateRequests *req, const char *reducer,
				  A2RowsCallback emit, void *arg)
{
	A2Args		a;

	a2_args_init(&a, &read_states);
	a2_bind(&a, 1, TEXTARRAYOID, a2_text_array(req->sessions, req->count));
	a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(req->through, req->through_null, req->count));
	a2_bind(&a, 3, INT8ARRAYOID, a2_int8_array(req->snap_through, req->snap_null, req->count));
	a2_bind_text(&a, 4, reducer);
	emit(a2_exec(&a, true, SPI_OK_SELECT), arg);
}

/* ---- a2_claim_next's walk (claim_next.c) ----------------------------- */

/*
 * The first entry available at $1 after ($2, $3) in (time, session) order.
 * The LIMIT is a constant so that the generic plan is an ordered index
 * scan.  Routed too: in distributed mode a node without shards (the
 * coordinator) walks the distributed table through Citus with these
 * (citus_walk.c).
 */
#define NEXT_CANDIDATE_SQL(key, plain) \
	"SELECT e.session_id, " key " AS available_at" \
	"  FROM @extschema@.a2_events e" \
	" WHERE " A2_AVAILABLE_PRED plain \
	"   AND " key " OPERATOR(pg_catalog.<=) $1" \
	"   AND (" key ", e.session_id) OPERATOR(pg_catalog.>) ($2, $3)" \
	" ORDER BY " key ", e.session_id" \
	" LIMIT 1"

static A2Statement next_candidate = {
	.name = "local.next_candidate",
	.index = "a2_events_default_available", .index_since = A2_OBJECTS_0_4,
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1, NEXT_CANDIDATE_SQL(A2_AVAILABLE_KEY_0_1, "")),
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_3, NEXT_CANDIDATE_SQL(A2_AVAILABLE_KEY, "")),
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4, NEXT_CANDIDATE_SQL(A2_AVAILABLE_KEY, A2_AVAILABLE_PLAIN)),
	},
	.nparams = 3,
	.params = {A2_PARAM("now", INT8OID), A2_PARAM("after_available_at", INT8OID),
	A2_PARAM("after_session_id", TEXTOID)},
	.columns = A2_COLUMNS("session_id", "available_at")
};

#define NEXT_AFTER_NOW_SQL(key, plain) \
	"SELECT " key " AS available_at FROM @extschema@.a2_events e" \
	" WHERE " A2_AVAILABLE_PRED plain \
	"   AND " key " OPERATOR(pg_catalog.>) $1" \
	" ORDER BY " key \
	" LIMIT 1"

static A2Statement next_after_now = {
	.name = "local.next_after_now",
	.index = "a2_events_default_available", .index_since = A2_OBJECTS_0_4,
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1, NEXT_AFTER_NOW_SQL(A2_AVAILABLE_KEY_0_1, "")),
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_3, NEXT_AFTER_NOW_SQL(A2_AVAILABLE_KEY, "")),
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4, NEXT_AFTER_NOW_SQL(A2_AVAILABLE_KEY, A2_AVAILABLE_PLAIN)),
	},
	.nparams = 1, .params = {A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("available_at")
};

A2_STATEMENT_GROUP(local, &insert_batch, &insert_generated, &insert_one, &insert_one_generated, &delete_fields, &set_fields, &insert_pins, &head_to_history, &read_states, &next_candidate, &next_after_now);

/*
 * Find the next candidate after (*after_at, *after_session) and move the
 * position to it.  False when nothing more is available now.
 */
static bool
local_next_available(int64 now_ms, int64 *after_at, char **after_session)
{
	A2Args		a;
	int			direct = a2_direct_next_available(now_ms, after_at, after_session, NULL,
											  false);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &next_candidate);
	a2_bind_int8(&a, 1, now_ms);
	a2_bind_int8(&a, 2, *after_at);
	a2_bind_text(&a, 3, *after_session);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		return false;
	*after_session = a2_col_text(0, 1);	/* session_id */
	*after_at = a2_col_int64(0, 2); /* available_at */
	return true;
}

static bool
local_next_retry_at(int64 now_ms, int64 *at)
{
	A2Args		a;
	bool		isnull;
	Datum		value;
	int			direct = a2_direct_next_retry_at(now_ms, at);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &next_after_now);
	a2_bind_int8(&a, 1, now_ms);
	if (a2_exec(&a, false, SPI_OK_SELECT) == 0)
		return false;
	value = a2_col(0, 1, &isnull);	/* available_at */
	if (isnull)
		return false;
	*at = DatumGetInt64(value);
	return true;
}

const A2Layer a2_local_layer = {
	.name = "single-node",
	.lock_session = local_lock_session,
	.try_lock_session = local_try_lock_session,
	.lock_participant = local_lock_participant,
	.try_lock_participant = local_try_lock_participant,
	.insert_events = local_insert_events,
	.presence_write = local_presence_write,
	.insert_pins = local_insert_pins,
	.head_to_history = local_head_to_history,
	.read_states = local_read_states,
	.next_available = local_next_available,
	.next_retry_at = local_next_retry_at,
};
