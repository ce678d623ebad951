/*-------------------------------------------------------------------------
 *
 * retire.c
 *	  a2_drop_session(session_id, force) and
 *	  a2_drop_finished_sessions(idle_ms, max_sessions).
 *
 *	  A session is unfinished while it has an event that is neither
 *	  processed nor dead-lettered; a plain drop refuses it (Z2010).  The
 *	  drop deletes the session's rows from every session-keyed a2 table
 *	  (presence is keyed by namespace, not session, and is left alone) and
 *	  records max(idx) in a2_retired_sessions, keeping the greater of an
 *	  earlier mark.  a2_insert_events reads that mark only when the session
 *	  has no event rows, so a later append continues after it.
 *
 *	  a2_retired_last_index(session_id) reads that mark for appends.  It is
 *	  SECURITY INVOKER and executable by PUBLIC, and answers a role that may
 *	  INSERT into a2_events (anything else gets 42501); it then reads
 *	  a2_retired_sessions as the function's owner.  So the privilege to
 *	  append is all an appender needs, however it was granted (by hand, to
 *	  PUBLIC, after a dump and restore), and no grant has to follow it.
 *
 *	  Locking: the session lock first (appends, completions and failures
 *	  wait), then every event row of the session FOR UPDATE in index order,
 *	  which waits for a claim or renewal in flight and makes the
 *	  "unfinished" check see the latest row versions; then the deletes.
 *	  The batch form finds candidates with a lock-free walk over the
 *	  primary key, then try-locks each one, re-checks it under its locks
 *	  and skips it when busy or no longer finished and idle, so a scheduled
 *	  call never waits behind a live session.
 *
 * IDENTIFICATION
 *	  src/retire.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "extension.h"
#include "json_out.h"
#include "key_park.h"
#include "retire.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_drop_session);
PG_FUNCTION_INFO_V1(a2_drop_finished_sessions);
PG_FUNCTION_INFO_V1(a2_retired_last_index);

/* Lock the session's events in index order and summarize them. */
enum
{
	LOCK_EVENTS_EVENTS = 1,
	LOCK_EVENTS_UNFINISHED,
	LOCK_EVENTS_MAX_INDEX,
	LOCK_EVENTS_LAST_CREATED_AT
};

static A2Statement lock_events = {
	.name = "retire.lock_events",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT pg_catalog.count(*) AS events,"
				"       pg_catalog.count(*) FILTER (WHERE l.unfinished) AS unfinished,"
				"       pg_catalog.max(l.idx) AS max_index, pg_catalog.max(l.created_at) AS last_created_at"
				"  FROM (SELECT e.idx, e.created_at,"
				"               e.processed_at IS NULL AND e.failed_at IS NULL AS unfinished"
				"          FROM @extschema@.a2_events e WHERE e.session_id OPERATOR(pg_catalog.=) $1"
				"         ORDER BY e.idx FOR UPDATE) l"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1,
	.columns = A2_COLUMNS("events", "unfinished", "max_index", "last_created_at")
};

/*
 * Delete everything of the session and raise its high-water mark ($2, NULL
 * when it has no events).  Returns events deleted, snapshot rows deleted
 * (heads and history) and the mark now stored.
 */
enum
{
	DELETE_SESSION_EVENTS = 1,
	DELETE_SESSION_SNAPSHOTS,
	DELETE_SESSION_LAST_INDEX
};

static A2Statement delete_session = {
	.name = "retire.delete_session",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_2,
				"WITH ev AS (DELETE FROM @extschema@.a2_events e"
				"              WHERE e.session_id OPERATOR(pg_catalog.=) $1 RETURNING 1),"
				" pins AS (DELETE FROM @extschema@.a2_snapshot_pins p"
				"              WHERE p.session_id OPERATOR(pg_catalog.=) $1 RETURNING 1),"
				" heads AS (DELETE FROM @extschema@.a2_snapshots s"
				"              WHERE s.session_id OPERATOR(pg_catalog.=) $1 RETURNING 1),"
				" hist AS (DELETE FROM @extschema@.a2_snapshot_history h"
				"              WHERE h.session_id OPERATOR(pg_catalog.=) $1 RETURNING 1),"
				" mark AS (INSERT INTO @extschema@.a2_retired_sessions AS r"
				"              (session_id, last_index, retired_at)"
				"          SELECT $1, $2, $3 WHERE $2 IS NOT NULL"
				"          ON CONFLICT (session_id) DO UPDATE"
				"             SET last_index = GREATEST(r.last_index, EXCLUDED.last_index),"
				"                 retired_at = EXCLUDED.retired_at"
				"          RETURNING r.last_index)"
				" SELECT (SELECT pg_catalog.count(*) FROM ev) AS events,"
				"        (SELECT pg_catalog.count(*) FROM heads)"
				"          OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM hist) AS snapshots,"
				"        COALESCE((SELECT m.last_index FROM mark m),"
				"                 (SELECT o.last_index FROM @extschema@.a2_retired_sessions o"
				"                   WHERE o.session_id OPERATOR(pg_catalog.=) $1)) AS last_index"),
	},
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("last_index", INT8OID),
	A2_PARAM("now", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS("events", "snapshots", "last_index")
};

/*
 * Candidates for the batch drop, without locks: walk the distinct session
 * ids on the primary key (one descent each) and keep those with no
 * unfinished event (a2_events_unprocessed) whose last event is older than
 * the cutoff.  The walk is lazy: it stops once $2 candidates are found.
 */
/*
 * Distributed mode: grouped by the distribution column, so each shard
 * answers for its own sessions (reading all their events) and the
 * coordinator merges; the last event is the one with the greatest index.
 */
static A2Statement finished_candidates = {
	.name = "retire.finished_candidates",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1,
				"WITH RECURSIVE walk(sid) AS ("
				"  SELECT (SELECT e.session_id FROM @extschema@.a2_events e"
				"           ORDER BY e.session_id LIMIT 1)"
				"  UNION ALL"
				"  SELECT (SELECT e.session_id FROM @extschema@.a2_events e"
				"           WHERE e.session_id OPERATOR(pg_catalog.>) w.sid ORDER BY e.session_id LIMIT 1)"
				"    FROM walk w WHERE w.sid IS NOT NULL"
				")"
				" SELECT w.sid AS session_id FROM walk w"
				"  WHERE w.sid IS NOT NULL"
				"    AND NOT EXISTS (SELECT 1 FROM @extschema@.a2_events u"
				"                     WHERE u.session_id OPERATOR(pg_catalog.=) w.sid AND u.processed_at IS NULL"
				"                       AND u.failed_at IS NULL)"
				"    AND (SELECT l.created_at FROM @extschema@.a2_events l"
				"          WHERE l.session_id OPERATOR(pg_catalog.=) w.sid ORDER BY l.idx DESC LIMIT 1) OPERATOR(pg_catalog.<=) $1"
				"  LIMIT $2"),
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT e.session_id FROM @extschema@.a2_events e"
				" GROUP BY e.session_id"
				" HAVING pg_catalog.bool_and(e.processed_at IS NOT NULL OR e.failed_at IS NOT NULL)"
				"    AND (pg_catalog.array_agg(e.created_at ORDER BY e.idx DESC))[1] OPERATOR(pg_catalog.<=) $1"
				" ORDER BY e.session_id LIMIT $2"),
	},
	.nparams = 2, .params = {A2_PARAM("cutoff", INT8OID), A2_PARAM("max_sessions", INT8OID)},
	.columns = A2_COLUMNS("session_id")
};

/* A dropped session's mark, read by a2_retired_last_index as its owner. */
static A2Statement retired_mark = {
	.name = "retire.mark",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_2,
				"SELECT r.last_index FROM @extschema@.a2_retired_sessions r"
				" WHERE r.session_id OPERATOR(pg_catalog.=) $1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("last_index")
};

A2_STATEMENT_GROUP(retire, &lock_events, &delete_session, &finished_candidates, &retired_mark);

typedef struct DropOutcome
{
	bool		dropped;		/* rows were deleted */
	bool		skipped;		/* batch form: no longer finished and idle */
	int64		events;
	int64		snapshots;
	int64		last_index;
	bool		has_last_index;
} DropOutcome;

/*
 * Drop one session; the caller holds its session lock and is inside SPI.
 * force: drop unfinished events too.  cutoff_ms >= 0 (batch form): skip,
 * instead of failing, a session that is unfinished or had an append after
 * the cutoff.
 */
static void
drop_locked(const char *session_id, bool force, int64 cutoff_ms,
			int64 now_ms, DropOutcome *out)
{
	A2Args		a;
	int64		unfinished;
	bool		isnull;
	Datum		max_idx;

	memset(out, 0, sizeof(*out));
	a2_args_init(&a, &lock_events);
	a2_bind_text(&a, 1, session_id);
	a2_exec_latest(&a, SPI_OK_SELECT);
	unfinished = a2_col_int64(0, LOCK_EVENTS_UNFINISHED);
	max_idx = a2_col(0, LOCK_EVENTS_MAX_INDEX, &isnull);
	a2_args_init(&a, &delete_session);
	a2_bind_text(&a, 1, session_id);
	if (isnull)
		a2_bind_null(&a, 2);
	else
		a2_bind(&a, 2, INT8OID, max_idx);

	if (cutoff_ms >= 0)
	{
		bool		last_isnull;
		int64		last_at = DatumGetInt64(a2_col(0, LOCK_EVENTS_LAST_CREATED_AT, &last_isnull));

		if (unfinished > 0 || last_isnull || last_at > cutoff_ms)
		{
			out->skipped = true;
			return;
		}
	}
	else if (unfinished > 0 && !force)
		ereport(ERROR,
				(errcode(ERRCODE_A2_SESSION_UNFINISHED),
				 errmsg("session \"%s\" has unfinished events", session_id),
				 errdetail_plural(INT64_FORMAT " event is neither processed nor dead-lettered.",
								  INT64_FORMAT " events are neither processed nor dead-lettered.",
								  (unsigned long) unfinished, unfinished),
				 errhint("Complete or fail them first, or call a2_drop_session with force => true.")));

	a2_bind_int8(&a, 3, now_ms);
	if (unfinished > 0)
		a2_key_park_release_all();	/* leased events may go: any key's slots */
	a2_exec_latest(&a, SPI_OK_SELECT);
	out->events = a2_col_int64(0, DELETE_SESSION_EVENTS);
	out->snapshots = a2_col_int64(0, DELETE_SESSION_SNAPSHOTS);
	out->dropped = out->events > 0 || out->snapshots > 0;
	max_idx = a2_col(0, DELETE_SESSION_LAST_INDEX, &isnull);
	out->has_last_index = !isnull;
	out->last_index = isnull ? 0 : DatumGetInt64(max_idx);
}

static Jsonb *
drop_session(const char *session_id, bool force)
{
	int64		now_ms = a2_clock_now_ms();
	A2Call		call;
	DropOutcome out;
	A2Json		js = NULL;
	Jsonb	   *result;

	a2_lock_session(session_id);
	a2_call_begin(&call, session_id);
	drop_locked(session_id, force, -1, now_ms, &out);

	a2j_begin_object(&js, NULL);
	a2j_string(&js, "sessionId", session_id);
	a2j_bool(&js, "dropped", out.dropped);
	a2j_int(&js, "events", out.events);
	a2j_int(&js, "snapshots", out.snapshots);
	if (out.has_last_index)
		a2j_int(&js, "lastIndex", out.last_index);
	else
		a2j_null(&js, "lastIndex");
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_drop_session(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	bool		force;

	a2_require_arg(fcinfo, 1, "force");
	force = PG_GETARG_BOOL(1);
	PG_RETURN_JSONB_P(drop_session(session_id, force));
}

static int64
drop_finished_sessions(int64 idle_ms, int max_sessions)
{
	int64		now_ms = a2_clock_now_ms();
	int64		cutoff_ms;
	A2Call		call;
	A2Args		a;
	uint64		n;
	char	  **ids;
	int64		dropped = 0;

	/* an idle time reaching before the epoch means: nothing is idle enough */
	if (pg_sub_s64_overflow(now_ms, idle_ms, &cutoff_ms) || cutoff_ms < 0)
		return 0;

	a2_call_begin(&call, NULL);
	a2_args_init(&a, &finished_candidates);
	a2_bind_int8(&a, 1, cutoff_ms);
	a2_bind_int8(&a, 2, max_sessions);
	n = a2_exec(&a, true, SPI_OK_SELECT);
	/* copied out: the next statements replace SPI_tuptable */
	ids = palloc(sizeof(char *) * Max(n, 1));
	for (uint64 r = 0; r < n; r++)
		ids[r] = a2_col_text(r, 1);

	for (uint64 r = 0; r < n; r++)
	{
		DropOutcome out;

		/* busy (an append or a completion holds it): leave it for next time */
		if (!a2_try_lock_session(ids[r]))
			continue;
		drop_locked(ids[r], false, cutoff_ms, now_ms, &out);
		if (out.dropped)
			dropped++;
	}
	a2_call_end(&call);
	return dropped;
}

Datum
a2_drop_finished_sessions(PG_FUNCTION_ARGS)
{
	int64		idle_ms = a2_int8_arg(fcinfo, 0, "idle_ms", 0);
	int64		max_sessions = a2_int4_arg(fcinfo, 1, "max_sessions", 1);

	if (max_sessions > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_sessions\" must be at most %d, not " INT64_FORMAT,
						A2_MAX_LIST_ITEMS, max_sessions)));
	PG_RETURN_INT64(drop_finished_sessions(idle_ms, (int) max_sessions));
}

/*
 * a2_retired_last_index(session_id): the mark of a dropped session, NULL if
 * it was never dropped.  The caller must be allowed to INSERT into
 * a2_events (on the table or on a column of it): an appender learns the
 * mark anyway, from the index its append gets.  The row is then read as
 * the function's owner, in a restricted security context (as a SECURITY
 * DEFINER function would), with the caller's snapshot (STABLE): inside an
 * append that is the statement's latest one, under the session lock.
 */
Datum
a2_retired_last_index(PG_FUNCTION_ARGS)
{
	Oid			user = GetUserId();
	Oid			events;
	Oid			owner;
	Oid			save_user;
	int			save_sec;
	HeapTuple	proc;
	A2Args		a;
	bool		isnull = true;
	int64		mark = 0;

	a2_extension_refresh();
	events = a2_relid("a2_events");
	if (pg_class_aclcheck(events, user, ACL_INSERT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(events, user, ACL_INSERT, ACLMASK_ANY) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function a2_retired_last_index"),
				 errdetail("It answers roles that may insert into a2_events."),
				 errhint("Grant INSERT on a2_events, for instance with a2_grant_worker.")));

	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	owner = ((Form_pg_proc) GETSTRUCT(proc))->proowner;
	ReleaseSysCache(proc);

	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	a2_args_init(&a, &retired_mark);
	a2_bind(&a, 1, TEXTOID, PG_GETARG_DATUM(0));
	if (a2_exec(&a, true, SPI_OK_SELECT) > 0)
	{
		Datum		d = a2_col(0, 1, &isnull);

		if (!isnull)
			mark = DatumGetInt64(d);
	}
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	/* on an error, transaction abort restores the user and context */
	SetUserIdAndSecContext(save_user, save_sec);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_INT64(mark);
}
