/*-------------------------------------------------------------------------
 *
 * inspect.c
 *	  a2_list_sessions(prefix, cursor, max_sessions) and
 *	  a2_list_snapshots(session_id, include_history).
 *
 *	  A page of sessions costs in proportion to the page: the distinct
 *	  session ids are walked on the primary key with one index descent per
 *	  session (a "loose index scan" written as a recursive CTE), and only
 *	  the page's sessions are aggregated.  When session_id sorts bytewise
 *	  (the C, POSIX or C.UTF-8 collation) the ids that start with the prefix
 *	  are one contiguous key range, so the walk starts at the prefix and
 *	  stops after it.  Under a linguistic collation they need not be
 *	  contiguous ("a-b" < "ab" < "a-c" in en_US), so the walk visits every
 *	  session id after the cursor until the page is full: still one probe
 *	  per session, never one row per event.
 *
 *	  The cursor is the last session id of the page (opaque to callers).
 *	  No locks are taken.
 *
 * IDENTIFICATION
 *	  src/inspect.c
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
#include "inspect.h"
#include "json_out.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_list_sessions);
PG_FUNCTION_INFO_V1(a2_list_snapshots);

#define DEFAULT_PAGE	100

/*
 * Whether a2_events.session_id compares bytewise, so that every id with a
 * given prefix lies in one key range that starts at the prefix.
 */
static A2Statement bytewise_ids = {
	.name = "inspect.bytewise_ids",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT COALESCE(c.collprovider, d.datlocprovider) OPERATOR(pg_catalog.=) 'c'"
				"   AND COALESCE(c.collcollate, d.datcollate)"
				"       OPERATOR(pg_catalog.=) ANY ('{C,POSIX,C.UTF-8,C.utf8}'::pg_catalog.text[]) AS bytewise"
				"  FROM pg_catalog.pg_attribute a"
				"  JOIN pg_catalog.pg_database d"
				"    ON d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()"
				"  LEFT JOIN pg_catalog.pg_collation c"
				"    ON c.oid OPERATOR(pg_catalog.=) a.attcollation"
				"   AND a.attcollation OPERATOR(pg_catalog.<>) 100"
				" WHERE a.attrelid OPERATOR(pg_catalog.=) $1"
				"   AND a.attname OPERATOR(pg_catalog.=) 'session_id'"),
	},
	.nparams = 1, .params = {A2_PARAM("a2_events", OIDOID)},
	.columns = A2_COLUMNS("bytewise")
};

/*
 * $1 start key, $2 prefix, $3 rows wanted, $4 bytewise.  `first_op` is >=
 * for a first page (start = prefix, or '' which sorts first everywhere)
 * and > after a cursor.
 */
#define LIST_SESSIONS_SQL(first_op, failed, cancelled, named, by_queue) \
	"WITH RECURSIVE walk(sid) AS (" \
	"  SELECT (SELECT e.session_id FROM @extschema@.a2_events e" \
	"           WHERE e.session_id " first_op " $1 ORDER BY e.session_id LIMIT 1)" \
	"  UNION ALL" \
	"  SELECT (SELECT e.session_id FROM @extschema@.a2_events e" \
	"           WHERE e.session_id OPERATOR(pg_catalog.>) w.sid ORDER BY e.session_id LIMIT 1)" \
	"    FROM walk w" \
	"   WHERE w.sid IS NOT NULL" \
	"     AND NOT ($4 AND w.sid OPERATOR(pg_catalog.>) $2 AND NOT pg_catalog.starts_with(w.sid, $2))" \
	"), page AS (" \
	"  SELECT w.sid FROM walk w" \
	"   WHERE w.sid IS NOT NULL AND pg_catalog.starts_with(w.sid, $2)" \
	"   LIMIT $3" \
	")" \
	" SELECT p.sid AS session_id, a.event_count, a.pending_count, a.failed_count," \
	"        a.attempt_count, a.failure_count, a.first_event_at, a.updated_at, a.cancelled_count," \
	"        " by_queue " AS pending_by_queue" \
	"   FROM page p CROSS JOIN LATERAL (" \
	"     SELECT pg_catalog.count(*) AS event_count," \
	"            pg_catalog.count(*) FILTER (WHERE e.processed_at IS NULL" \
	"                                 AND e.failed_at IS NULL) AS pending_count," \
	"            pg_catalog.count(*) FILTER (WHERE " failed ") AS failed_count," \
	"            COALESCE(pg_catalog.sum(e.attempt_count), 0)::pg_catalog.int8 AS attempt_count," \
	"            COALESCE(pg_catalog.sum(e.failure_count), 0)::pg_catalog.int8 AS failure_count," \
	"            pg_catalog.min(e.created_at) AS first_event_at," \
	"            pg_catalog.max(GREATEST(e.created_at, e.first_claimed_at, e.last_claimed_at," \
	"                                    e.last_failed_at, e.processed_at, e.failed_at)) AS updated_at," \
	"            " cancelled " AS cancelled_count," \
	"            " named " AS named_pending" \
	"       FROM @extschema@.a2_events e WHERE e.session_id OPERATOR(pg_catalog.=) p.sid) a" \
	"  ORDER BY p.sid"

/*
 * Distributed mode: the walk above is not a query Citus can run across
 * shards.  Grouped by the distribution column, this one runs whole on each
 * shard (the ordered primary-key scan stops after $3 sessions there) and
 * the coordinator merges the shards' pages in session-id order.  Each
 * shard reads the events of its first $3 matching sessions.
 */
#define LIST_SESSIONS_DIST_SQL(first_op, failed, cancelled) \
	"SELECT e.session_id, pg_catalog.count(*) AS event_count," \
	"       pg_catalog.count(*) FILTER (WHERE e.processed_at IS NULL AND e.failed_at IS NULL) AS pending_count," \
	"       pg_catalog.count(*) FILTER (WHERE " failed ") AS failed_count," \
	"       COALESCE(pg_catalog.sum(e.attempt_count), 0)::pg_catalog.int8 AS attempt_count," \
	"       COALESCE(pg_catalog.sum(e.failure_count), 0)::pg_catalog.int8 AS failure_count," \
	"       pg_catalog.min(e.created_at) AS first_event_at," \
	"       pg_catalog.max(GREATEST(e.created_at, e.first_claimed_at, e.last_claimed_at," \
	"                               e.last_failed_at, e.processed_at, e.failed_at)) AS updated_at," \
	"       " cancelled " AS cancelled_count," \
	"       NULL::pg_catalog.jsonb AS pending_by_queue" \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id " first_op " $1 AND pg_catalog.starts_with(e.session_id, $2)" \
	"   AND $4 IS NOT NULL" \
	" GROUP BY e.session_id ORDER BY e.session_id LIMIT $3"

enum
{
	LIST_SESSION_ID = 1,
	LIST_EVENT_COUNT,
	LIST_PENDING_COUNT,
	LIST_FAILED_COUNT,
	LIST_ATTEMPT_COUNT,
	LIST_FAILURE_COUNT,
	LIST_FIRST_EVENT_AT,
	LIST_UPDATED_AT,
	LIST_CANCELLED_COUNT,
	LIST_PENDING_BY_QUEUE
};

/*
 * Cancelled events (a2_cancel, 0.4.0); none on older objects.  A cancelled
 * dead letter keeps its failed_at but is no longer counted as failed.
 */
#define FAILED_V1 "e.failed_at IS NOT NULL"
#define CANCELLED_V1 "0::pg_catalog.int8"
#define FAILED_V4 "e.failed_at IS NOT NULL AND e.cancelled_at IS NULL"
#define CANCELLED_V4 "pg_catalog.count(*) FILTER (WHERE e.cancelled_at IS NOT NULL)"

/*
 * Pending events per queue (0.4.0, docs/json.md): only for a session with
 * a pending event outside the default queue, so a session that uses the
 * default queue alone lists as before, and its page costs what it did.
 * The breakdown reads the session's pending rows once more, through
 * a2_events_unprocessed.  Distributed mode refuses queues
 * (docs/distributed.md): every event is in the default queue there.
 */
#define NAMED_V1 "NULL::pg_catalog.bool"
#define BY_QUEUE_V1 "NULL::pg_catalog.jsonb"
#define NAMED_V4 \
	"pg_catalog.bool_or(COALESCE(e.queue, 'default') OPERATOR(pg_catalog.<>) 'default')" \
	" FILTER (WHERE e.processed_at IS NULL AND e.failed_at IS NULL)"
#define BY_QUEUE_V4 \
	"CASE WHEN a.named_pending THEN" \
	"  (SELECT pg_catalog.jsonb_object_agg(b.queue, b.pending)" \
	"     FROM (SELECT COALESCE(x.queue, 'default') AS queue, pg_catalog.count(*) AS pending" \
	"             FROM @extschema@.a2_events x" \
	"            WHERE x.session_id OPERATOR(pg_catalog.=) p.sid" \
	"              AND x.processed_at IS NULL AND x.failed_at IS NULL" \
	"            GROUP BY 1) b) END"

#define LIST_SESSIONS_PARAMS \
	.columns = A2_COLUMNS("session_id", "event_count", "pending_count", "failed_count", \
						  "attempt_count", "failure_count", "first_event_at", "updated_at", \
						  "cancelled_count", "pending_by_queue"), \
	.nparams = 4, \
	.params = {A2_PARAM("start", TEXTOID), A2_PARAM("prefix", TEXTOID), \
	A2_PARAM("rows", INT8OID), A2_PARAM("bytewise", BOOLOID)}

static A2Statement list_first = {
	.name = "inspect.list_first",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1,
				LIST_SESSIONS_SQL("OPERATOR(pg_catalog.>=)", FAILED_V1, CANCELLED_V1, NAMED_V1, BY_QUEUE_V1)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				LIST_SESSIONS_SQL("OPERATOR(pg_catalog.>=)", FAILED_V4, CANCELLED_V4, NAMED_V4, BY_QUEUE_V4)),
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				LIST_SESSIONS_DIST_SQL("OPERATOR(pg_catalog.>=)", FAILED_V1, CANCELLED_V1)),
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_4,
				LIST_SESSIONS_DIST_SQL("OPERATOR(pg_catalog.>=)", FAILED_V4, CANCELLED_V4)),
	},
	LIST_SESSIONS_PARAMS
};

static A2Statement list_after = {
	.name = "inspect.list_after",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1,
				LIST_SESSIONS_SQL("OPERATOR(pg_catalog.>)", FAILED_V1, CANCELLED_V1, NAMED_V1, BY_QUEUE_V1)),
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				LIST_SESSIONS_SQL("OPERATOR(pg_catalog.>)", FAILED_V4, CANCELLED_V4, NAMED_V4, BY_QUEUE_V4)),
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				LIST_SESSIONS_DIST_SQL("OPERATOR(pg_catalog.>)", FAILED_V1, CANCELLED_V1)),
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_4,
				LIST_SESSIONS_DIST_SQL("OPERATOR(pg_catalog.>)", FAILED_V4, CANCELLED_V4)),
	},
	LIST_SESSIONS_PARAMS
};

enum
{
	SNAPSHOTS_REDUCER_NAME = 1,
	SNAPSHOTS_UP_TO_INDEX,
	SNAPSHOTS_UPDATED_AT,
	SNAPSHOTS_HEAD
};

static A2Statement list_snapshots = {
	.name = "inspect.list_snapshots",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT s.reducer_name, s.up_to_index, s.updated_at, true AS head"
				"  FROM @extschema@.a2_snapshots s WHERE s.session_id OPERATOR(pg_catalog.=) $1"
				" UNION ALL"
				" SELECT h.reducer_name, h.up_to_index, h.updated_at, false"
				"  FROM @extschema@.a2_snapshot_history h"
				" WHERE $2 AND h.session_id OPERATOR(pg_catalog.=) $1"
				" ORDER BY 1, 2"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("include_history", BOOLOID)},
	.session_param = 1,
	.columns = A2_COLUMNS("reducer_name", "up_to_index", "updated_at", "head")
};

A2_STATEMENT_GROUP(inspect, &bytewise_ids, &list_first, &list_after, &list_snapshots);

/* A text argument that may be empty (a prefix) but not longer than a name. */
static char *
bounded_text_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	text	   *t = PG_GETARG_TEXT_PP(argno);

	if (VARSIZE_ANY_EXHDR(t) > A2_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("argument \"%s\" is longer than %d byte",
							   "argument \"%s\" is longer than %d bytes",
							   A2_MAX_NAME_BYTES, name, A2_MAX_NAME_BYTES)));
	return text_to_cstring(t);
}

static Jsonb *
list_sessions(const char *prefix, const char *cursor, int max_sessions)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	bool		bytewise;
	uint64		n;
	uint64		shown;
	Datum		by_queue;
	bool		isnull;
	Jsonb	   *result;

	a2_call_begin(&call, NULL);
	a2_args_init(&a, &bytewise_ids);
	a2_bind(&a, 1, OIDOID, ObjectIdGetDatum(a2_relid("a2_events")));
	if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
		elog(ERROR, "a2_events.session_id not found");
	bytewise = a2_col_bool(0, 1);

	a2_args_init(&a, cursor ? &list_after : &list_first);
	a2_bind_text(&a, 1, cursor ? cursor : (bytewise ? prefix : ""));
	a2_bind_text(&a, 2, prefix);
	a2_bind_int8(&a, 3, (int64) max_sessions + 1);
	a2_bind_bool(&a, 4, bytewise);
	n = a2_exec(&a, true, SPI_OK_SELECT);
	shown = Min(n, (uint64) max_sessions);

	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "sessions");
	for (uint64 r = 0; r < shown; r++)
	{
		a2j_begin_object(&js, NULL);
		a2j_string(&js, "sessionId", a2_col_text(r, LIST_SESSION_ID));
		a2j_int(&js, "eventCount", a2_col_int64(r, LIST_EVENT_COUNT));
		a2j_int(&js, "pendingCount", a2_col_int64(r, LIST_PENDING_COUNT));
		a2j_int(&js, "failedCount", a2_col_int64(r, LIST_FAILED_COUNT));
		a2j_int(&js, "attemptCount", a2_col_int64(r, LIST_ATTEMPT_COUNT));
		a2j_int(&js, "failureCount", a2_col_int64(r, LIST_FAILURE_COUNT));
		a2j_iso(&js, "firstEventAt", a2_col_int64(r, LIST_FIRST_EVENT_AT));
		a2j_iso(&js, "updatedAt", a2_col_int64(r, LIST_UPDATED_AT));
		a2j_int(&js, "cancelledCount", a2_col_int64(r, LIST_CANCELLED_COUNT));
		by_queue = a2_col(r, LIST_PENDING_BY_QUEUE, &isnull);
		if (!isnull)
			a2j_jsonb(&js, "pendingByQueue", DatumGetJsonbP(by_queue));
		a2j_end_object(&js);
	}
	a2j_end_array(&js);
	if (n > shown)
		a2j_string(&js, "cursor", a2_col_text(shown - 1, LIST_SESSION_ID));
	else
		a2j_null(&js, "cursor");
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_list_sessions(PG_FUNCTION_ARGS)
{
	char	   *prefix;
	char	   *cursor = NULL;
	int64		max_sessions = DEFAULT_PAGE;

	a2_require_arg(fcinfo, 0, "prefix");
	prefix = bounded_text_arg(fcinfo, 0, "prefix");
	if (!PG_ARGISNULL(1))
		cursor = a2_name_arg(fcinfo, 1, "cursor");
	if (!PG_ARGISNULL(2))
	{
		max_sessions = PG_GETARG_INT32(2);
		a2_check_min(max_sessions, 1, "max_sessions");
		if (max_sessions > A2_MAX_LIST_ITEMS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"max_sessions\" must be at most %d, not " INT64_FORMAT,
							A2_MAX_LIST_ITEMS, max_sessions)));
	}
	PG_RETURN_JSONB_P(list_sessions(prefix, cursor, (int) max_sessions));
}

static Jsonb *
list_session_snapshots(const char *session_id, bool include_history)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	uint64		n;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2_args_init(&a, &list_snapshots);
	a2_bind(&a, 1, TEXTOID, call.session);
	a2_bind_bool(&a, 2, include_history);
	n = a2_exec(&a, true, SPI_OK_SELECT);

	a2j_begin_array(&js, NULL);
	for (uint64 r = 0; r < n; r++)
	{
		a2j_begin_object(&js, NULL);
		a2j_string(&js, "reducerName", a2_col_text(r, SNAPSHOTS_REDUCER_NAME));
		a2j_int(&js, "index", a2_col_int64(r, SNAPSHOTS_UP_TO_INDEX));
		a2j_iso(&js, "updatedAt", a2_col_int64(r, SNAPSHOTS_UPDATED_AT));
		/* the 0.5 shape has no flag: only a listing with history gets one */
		if (include_history)
			a2j_bool(&js, "head", a2_col_bool(r, SNAPSHOTS_HEAD));
		a2j_end_object(&js);
	}
	result = a2j_finish(a2j_end_array(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_list_snapshots(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	bool		include_history;

	a2_require_arg(fcinfo, 1, "include_history");
	include_history = PG_GETARG_BOOL(1);
	PG_RETURN_JSONB_P(list_session_snapshots(session_id, include_history));
}
