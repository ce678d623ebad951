/*-------------------------------------------------------------------------
 *
 * citus_layer.c
 *	  The distributed layer (layer.h): a2 on Citus after a2_distribute().
 *	  The session tables are distributed by session_id (presence by ns) in
 *	  one colocation group, and every session function is delegated to the
 *	  node that holds its shard.  What differs from local.c is everything
 *	  Citus cannot run as one single-shard router query.
 *
 *	  Session lock.  A transaction advisory lock exists only on the node
 *	  that takes it: a call the coordinator runs (a2 inside a larger
 *	  statement, say) and a call delegated to the worker would each lock
 *	  their own node and interleave.  So in distributed mode the session
 *	  lock is a row lock on the session's a2_session_locks row, which lives
 *	  in the shard colocated with the session's events: every path locks
 *	  the same row on the same node.  The row is created on first use
 *	  (INSERT ... ON CONFLICT DO NOTHING waits for a concurrent creator) and
 *	  then locked FOR UPDATE, reading the latest committed version even
 *	  under REPEATABLE READ; the try form is FOR UPDATE SKIP LOCKED.
 *	  Presence participants the same way, on a2_presence_locks
 *	  (distributed by ns), always through Citus.
 *
 *	  Pinned sessions.  On the node that holds the session's shard group
 *	  (every delegated call; a2_claim_next on a worker) the lock first pins
 *	  the session to that group (citus_pin.c): it takes Citus's
 *	  shard-metadata lock on the group, which a shard move must wait for,
 *	  and checks the placement again under it.  From then on, to the end of
 *	  the transaction, every statement of that session runs straight on the
 *	  shard tables with a kept plan -- the lock row, and the operations' own
 *	  statements -- and this layer hands batch inserts and snapshot pins to
 *	  local.c's set-based statements: a delegated call runs no statement
 *	  through Citus, a client's own call on the worker one.  Anywhere else
 *	  (the coordinator, a shard that just moved away) nothing is pinned and
 *	  what follows applies.
 *
 *	  Event insertion through Citus: Citus refuses subqueries inside INSERT
 *	  and would route INSERT ... SELECT from unnest() through the
 *	  coordinator, so the greatest index and the lanes that already have
 *	  unprocessed events are read first (under the session lock nothing
 *	  changes them) and each event is one INSERT ... VALUES.  A unique
 *	  violation there can only mean that the session lock and the insert
 *	  met different copies of the shard -- a call routed by metadata that a
 *	  concurrent shard move had just changed -- and nothing was written:
 *	  statements.c reports it as 40001, a retry (docs/errors.md;
 *	  docs/distributed.md, "Errors to retry"), as it does Citus refusing
 *	  the statements of a call delegated to the shard's old node.
 *	  Presence writes: per field, single-row statements.
 *
 *	  Work discovery (a2_claim_next): citus_walk.c.
 *
 *	  Statements (statements.h): those that go through Citus serve routed
 *	  mode, and those keyed by one session (session_param) shard mode too,
 *	  for a pinned session; those that read Citus's metadata or name shard
 *	  tables serve local mode.  A text serves the oldest installed objects
 *	  that have what it names: 0.2.0 added a2_session_locks,
 *	  a2_presence_locks and a2_retired_sessions (and a2_distribute()), 0.3.0
 *	  a2_events.not_before.
 *
 *	  Lock order: layer.h's, with Citus's shard-metadata lock (shared, as
 *	  every Citus write takes it) before the session's lock row.  Calls
 *	  nothing above the layer.
 *
 * IDENTIFICATION
 *	  src/citus/citus_layer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "citus/citus_pin.h"
#include "citus/citus_shards.h"
#include "citus/citus_walk.h"
#include "layer.h"
#include "session.h"
#include "spi_util.h"
#include "statements.h"

/* ---- the session lock row -------------------------------------------- */

/* Statements of one session's lock row: routed, or on the pinned shard. */
#define SESSION_ROW_STATEMENT(stmt_name, sql) \
	.name = stmt_name, \
	.texts = {A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_2, sql)}, \
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)}, \
	.session_param = 1

static A2Statement create_row = {
	SESSION_ROW_STATEMENT("citus_layer.create_session_row",
						  "INSERT INTO @extschema@.a2_session_locks (session_id) VALUES ($1)"
						  " ON CONFLICT (session_id) DO NOTHING")
};

/* The session's lock row (through Citus, or on the pinned shard). */
static A2Statement lock_row = {
	SESSION_ROW_STATEMENT("citus_layer.lock_session_row",
						  "SELECT 1 AS locked FROM @extschema@.a2_session_locks l"
						  " WHERE l.session_id OPERATOR(pg_catalog.=) $1 FOR UPDATE"),
	.columns = A2_COLUMNS("locked")
};

static A2Statement try_lock_row = {
	SESSION_ROW_STATEMENT("citus_layer.try_lock_session_row",
						  "SELECT 1 AS locked FROM @extschema@.a2_session_locks l"
						  " WHERE l.session_id OPERATOR(pg_catalog.=) $1 FOR UPDATE SKIP LOCKED"),
	.columns = A2_COLUMNS("locked")
};

static A2Statement row_exists = {
	SESSION_ROW_STATEMENT("citus_layer.session_row_exists",
						  "SELECT 1 AS found FROM @extschema@.a2_session_locks l"
						  " WHERE l.session_id OPERATOR(pg_catalog.=) $1"),
	.columns = A2_COLUMNS("found")
};

static A2Statement has_events = {
	.name = "citus_layer.session_has_events",
	.texts = {
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT 1 AS found FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 LIMIT 1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("found")
};

/* ---- event insertion through Citus ----------------------------------- */

/*
 * The statements below until the presence ones run only for a session that
 * is not pinned: a pinned one inserts through local.c's statements.
 */
enum
{
	LAST_INDEX_IDX = 1
};

static A2Statement last_index = {
	.name = "citus_layer.last_index",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT e.idx FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 ORDER BY e.idx DESC LIMIT 1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.columns = A2_COLUMNS("idx")
};

/*
 * A dropped session's high-water mark (src/retire.c), read when it has no
 * event rows.  Read directly: through the SECURITY DEFINER SQL function
 * the single-node statement uses, Citus would have to plan the function's
 * parameterized query, which it cannot route.
 */
enum
{
	RETIRED_MARK_LAST_INDEX = 1
};

static A2Statement retired_mark = {
	.name = "citus_layer.retired_mark",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_2,
				"SELECT r.last_index FROM @extschema@.a2_retired_sessions r"
				" WHERE r.session_id OPERATOR(pg_catalog.=) $1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.columns = A2_COLUMNS("last_index")
};

enum
{
	BUSY_LANES_LANE = 1
};

static A2Statement busy_lanes = {
	.name = "citus_layer.busy_lanes",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT DISTINCT p.lane FROM @extschema@.a2_events p"
				" WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.lane OPERATOR(pg_catalog.=) ANY ($2) AND p.processed_at IS NULL"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("lanes", TEXTARRAYOID)},
	.columns = A2_COLUMNS("lane")
};

/* One event.  Objects older than 0.3.0 have no not_before column ($11). */
#define INSERT_ROW_SQL(not_before_column, not_before_value, on_conflict) \
	"INSERT INTO @extschema@.a2_events" \
	"  (session_id, idx, event_type, payload, event_id, created_at," \
	"   cause, lane, lane_ready, processed_at" not_before_column ")" \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10" not_before_value ")" on_conflict

#define INSERT_ROW_TEXTS(on_conflict) \
	A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1, \
			INSERT_ROW_SQL("", "", on_conflict)), \
	A2_TEXT(A2_ROUTED, A2_OBJECTS_0_3, \
			INSERT_ROW_SQL(", not_before", ", $11", on_conflict))

#define INSERT_ROW_PARAMS \
	.nparams = 11, .params = { \
		A2_PARAM("session_id", TEXTOID), A2_PARAM("idx", INT8OID), \
		A2_PARAM("event_type", TEXTOID), A2_PARAM("payload", JSONBOID), \
		A2_PARAM("event_id", TEXTOID), A2_PARAM("created_at", INT8OID), \
		A2_PARAM("cause", JSONBOID), A2_PARAM("lane", TEXTOID), \
		A2_PARAM("lane_ready", BOOLOID), A2_PARAM("processed_at", INT8OID), \
		A2_PARAM("not_before", INT8OID)}

static A2Statement insert_row = {
	.name = "citus_layer.insert_event",
	.texts = {INSERT_ROW_TEXTS(" ON CONFLICT (session_id, event_id) DO NOTHING")},
	INSERT_ROW_PARAMS
};

static A2Statement insert_row_generated = {
	.name = "citus_layer.insert_event_generated_id",
	.texts = {INSERT_ROW_TEXTS("")},
	INSERT_ROW_PARAMS
};

/* ---- the presence participant lock row ------------------------------- */

/* Statements of one participant's lock row, through Citus. */
#define PARTICIPANT_ROW_STATEMENT(stmt_name, sql) \
	.name = stmt_name, \
	.texts = {A2_TEXT(A2_ROUTED, A2_OBJECTS_0_2, sql)}, \
	.nparams = 2, .params = {A2_PARAM("ns", TEXTOID), A2_PARAM("participant", TEXTOID)}

static A2Statement lock_participant_row = {
	PARTICIPANT_ROW_STATEMENT("citus_layer.lock_participant_row",
							  "SELECT 1 AS locked FROM @extschema@.a2_presence_locks l"
							  " WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2 FOR UPDATE"),
	.columns = A2_COLUMNS("locked")
};

static A2Statement create_participant_row = {
	PARTICIPANT_ROW_STATEMENT("citus_layer.create_participant_row",
							  "INSERT INTO @extschema@.a2_presence_locks (ns, participant) VALUES ($1, $2)"
							  " ON CONFLICT (ns, participant) DO NOTHING")
};

static A2Statement try_lock_participant_row = {
	PARTICIPANT_ROW_STATEMENT("citus_layer.try_lock_participant_row",
							  "SELECT 1 AS locked FROM @extschema@.a2_presence_locks l"
							  " WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2"
							  " FOR UPDATE SKIP LOCKED"),
	.columns = A2_COLUMNS("locked")
};

static A2Statement participant_row_exists = {
	PARTICIPANT_ROW_STATEMENT("citus_layer.participant_row_exists",
							  "SELECT 1 AS found FROM @extschema@.a2_presence_locks l"
							  " WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2"),
	.columns = A2_COLUMNS("found")
};

/* ---- presence writes: single-row statements through Citus ------------ */

#define PRESENCE_FIELD_PARAMS \
	A2_PARAM("ns", TEXTOID), A2_PARAM("participant", TEXTOID), \
	A2_PARAM("field", TEXTOID)

/* a live value or tombstone of the field newer than the write ($4 at, $5 now) */
static A2Statement field_newer = {
	.name = "citus_layer.presence_field_newer",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT 1 AS newer FROM @extschema@.a2_presence p"
				" WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) $3"
				"   AND p.expires_at OPERATOR(pg_catalog.>) $5 AND p.at OPERATOR(pg_catalog.>) $4"
				" UNION ALL "
				"SELECT 1 FROM @extschema@.a2_presence_tombstones t"
				" WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) $3"
				"   AND t.expires_at OPERATOR(pg_catalog.>) $5 AND t.at OPERATOR(pg_catalog.>) $4"
				" LIMIT 1"),
	},
	.nparams = 5, .params = {
		PRESENCE_FIELD_PARAMS, A2_PARAM("at", INT8OID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("newer")
};

static A2Statement drop_value = {
	.name = "citus_layer.presence_drop_value",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"DELETE FROM @extschema@.a2_presence p"
				" WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) $3"),
	},
	.nparams = 3, .params = {PRESENCE_FIELD_PARAMS}
};

static A2Statement drop_tombstone = {
	.name = "citus_layer.presence_drop_tombstone",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"DELETE FROM @extschema@.a2_presence_tombstones t"
				" WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) $3"),
	},
	.nparams = 3, .params = {PRESENCE_FIELD_PARAMS}
};

static A2Statement put_tombstone = {
	.name = "citus_layer.presence_put_tombstone",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_presence_tombstones"
				"  (ns, participant, field, at, expires_at) VALUES ($1, $2, $3, $4, $5)"
				" ON CONFLICT (ns, participant, field) DO UPDATE"
				"   SET at = excluded.at, expires_at = excluded.expires_at"),
	},
	.nparams = 5, .params = {
		PRESENCE_FIELD_PARAMS, A2_PARAM("at", INT8OID), A2_PARAM("expires_at", INT8OID)}
};

static A2Statement put_value = {
	.name = "citus_layer.presence_put_value",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_presence"
				"  (ns, participant, field, value, seen, at, expires_at)"
				" VALUES ($1, $2, $3, $4, $5, $6, $7)"
				" ON CONFLICT (ns, participant, field) DO UPDATE"
				"   SET value = excluded.value, seen = excluded.seen,"
				"       at = excluded.at, expires_at = excluded.expires_at"),
	},
	.nparams = 7, .params = {
		PRESENCE_FIELD_PARAMS, A2_PARAM("value", JSONBOID), A2_PARAM("seen", INT8OID),
		A2_PARAM("at", INT8OID), A2_PARAM("expires_at", INT8OID)}
};

/* ---- snapshots: single-row statements -------------------------------- */

/*
 * Citus runs no INSERT ... SELECT as a single-shard router query, so a pin
 * is one INSERT ... VALUES each and the head moves to history through C
 * (read it, then insert it as snapshots.c's put_history would).  For a
 * session that is not pinned: a pinned one uses local.c's statements.
 */
static A2Statement insert_pin = {
	.name = "citus_layer.insert_snapshot_pin",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshot_pins"
				"  (session_id, event_index, reducer_name, up_to_index)"
				" VALUES ($1, $4, $2, $3) ON CONFLICT DO NOTHING"),
	},
	.nparams = 4, .params = {
		A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID), A2_PARAM("event_index", INT8OID)}
};

enum
{
	READ_HEAD_SESSION_ID = 1,
	READ_HEAD_REDUCER_NAME,
	READ_HEAD_UP_TO_INDEX,
	READ_HEAD_STATE,
	READ_HEAD_UPDATED_AT
};

static A2Statement read_head = {
	.name = "citus_layer.read_snapshot_head",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT s.session_id, s.reducer_name, s.up_to_index, s.state, s.updated_at"
				"  FROM @extschema@.a2_snapshots s"
				" WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $2"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID)},
	.columns = A2_COLUMNS("session_id", "reducer_name", "up_to_index", "state", "updated_at")
};

static A2Statement history_row = {
	.name = "citus_layer.insert_snapshot_history",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshot_history"
				"  (session_id, reducer_name, up_to_index, state, updated_at)"
				" VALUES ($1, $2, $3, $4, $5)"
				" ON CONFLICT (session_id, reducer_name, up_to_index) DO UPDATE"
				"   SET state = excluded.state, updated_at = excluded.updated_at"),
	},
	.nparams = 5, .params = {
		A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID), A2_PARAM("state", JSONBOID),
		A2_PARAM("updated_at", INT8OID)}
};

/* ---- state reads: one routed statement per request ------------------- */

/*
 * a2_read_state(s)' statement for one request ($1 session, $2 through, $3
 * snapshot-through, $4 reducer), every relation filtered on session_id =
 * $1, so Citus routes it whole to the session's shard (one snapshot
 * there).  a2_read_states runs it once per request, in request order.
 * Its rows are state.c's layout (layer.h's read_states).
 */
static A2Statement read_state_one = {
	.name = "citus_layer.read_state",
	.texts = {
		A2_TEXT(A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"WITH sel AS MATERIALIZED ("
				"  SELECT (SELECT h.up_to_index FROM @extschema@.a2_snapshots h"
				"           WHERE h.session_id OPERATOR(pg_catalog.=) $1 AND h.reducer_name OPERATOR(pg_catalog.=) $4) AS head_index,"
				"         c.up_to_index AS snap_index, c.state AS snap_state"
				"    FROM (SELECT 1) AS one"
				"    LEFT JOIN LATERAL ("
				"      SELECT u.up_to_index, u.state FROM ("
				"        (SELECT s.up_to_index, s.state FROM @extschema@.a2_snapshots s"
				"          WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $4"
				"            AND s.up_to_index OPERATOR(pg_catalog.<=) COALESCE($3, 9223372036854775807))"
				"        UNION ALL"
				"        (SELECT x.up_to_index, x.state FROM @extschema@.a2_snapshot_history x"
				"          WHERE x.session_id OPERATOR(pg_catalog.=) $1 AND x.reducer_name OPERATOR(pg_catalog.=) $4"
				"            AND x.up_to_index OPERATOR(pg_catalog.<=) COALESCE($3, 9223372036854775807)"
				"          ORDER BY x.up_to_index DESC LIMIT 1)"
				"      ) u ORDER BY u.up_to_index DESC LIMIT 1"
				"    ) c ON true"
				") "
				"SELECT NULL::pg_catalog.text AS session_id, NULL::bigint AS idx,"
				"       NULL::pg_catalog.text AS event_type, NULL::pg_catalog.jsonb AS payload,"
				"       NULL::pg_catalog.text AS event_id, NULL::bigint AS created_at,"
				"       1 AS ord, 0 AS kind, sel.head_index, sel.snap_index, sel.snap_state"
				"  FROM sel "
				"UNION ALL "
				"SELECT e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at,"
				"       1, 1, NULL, NULL, NULL"
				"  FROM sel, @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1"
				"   AND e.idx OPERATOR(pg_catalog.>) COALESCE(sel.snap_index, -1)"
				"   AND e.idx OPERATOR(pg_catalog.<=) COALESCE($2, 9223372036854775807) "
				"ORDER BY 8, 2"),
	},
	.nparams = 4, .params = {
		A2_PARAM("session_id", TEXTOID), A2_PARAM("through_index", INT8OID),
		A2_PARAM("snapshot_through_index", INT8OID), A2_PARAM("reducer_name", TEXTOID)},
	.session_param = 1,
	.columns = A2_COLUMNS("session_id", "idx", "event_type", "payload", "event_id",
						  "created_at", "ord", "kind", "head_index", "snap_index",
						  "snap_state")
};

A2_STATEMENT_GROUP(citus_layer,
				   &create_row, &lock_row, &try_lock_row, &row_exists, &has_events,
				   &last_index, &retired_mark, &busy_lanes,
				   &insert_row, &insert_row_generated,
				   &lock_participant_row, &create_participant_row,
				   &try_lock_participant_row, &participant_row_exists,
				   &field_newer, &drop_value, &drop_tombstone, &put_tombstone, &put_value,
				   &insert_pin, &read_head, &history_row,
				   &read_state_one);

/* ---- locks ----------------------------------------------------------- */

/*
 * Each lock function connects SPI itself (some callers lock before they
 * connect), as does presence_write; the lock lasts until the transaction
 * ends, and SPI_finish restores the caller's SPI_tuptable.
 */
static void
connect_spi(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
finish_spi(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* A lock row's key: session_id; or ns, participant. */
#define KEY_MAX 2

/*
 * Run one of the lock-row statements, whose parameters are all the row's
 * text key: key[0..nparams), nparams at most KEY_MAX.
 */
static uint64
exec_keyed(A2Statement *stmt, const Datum key[KEY_MAX], bool latest, int expected)
{
	A2Args		a;

	if (stmt->nparams > KEY_MAX)
		elog(ERROR, "statement \"%s\" takes more than a lock row's key", stmt->name);
	a2_args_init(&a, stmt);
	for (int i = 0; i < stmt->nparams && i < KEY_MAX; i++)
		a2_bind(&a, i + 1, TEXTOID, key[i]);
	return latest ? a2_exec_latest(&a, expected) : a2_exec(&a, false, expected);
}

/*
 * Lock the row `lock` finds for `key`, creating it with `create` first when
 * it does not exist yet.
 */
static void
lock_or_create_row(A2Statement *lock, A2Statement *create, const Datum *key,
				   const char *what, const char *name)
{
	if (exec_keyed(lock, key, true, SPI_OK_SELECT) == 0)
	{
		exec_keyed(create, key, false, SPI_OK_INSERT);
		if (exec_keyed(lock, key, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "could not lock %s \"%s\"", what, name);
	}
}

/*
 * The try form: false when the row exists and another transaction holds
 * it.  A row nobody has created yet is created and locked (the INSERT may
 * wait for a concurrent creator of the same row, a first call on the
 * session that has not committed: the only wait, and a short one).
 */
static bool
try_lock_or_create_row(A2Statement *try_lock, A2Statement *exists,
					   A2Statement *create, const Datum *key)
{
	if (exec_keyed(try_lock, key, true, SPI_OK_SELECT) == 1)
		return true;
	if (exec_keyed(exists, key, true, SPI_OK_SELECT) > 0)
		return false;
	exec_keyed(create, key, false, SPI_OK_INSERT);
	return exec_keyed(try_lock, key, true, SPI_OK_SELECT) == 1;
}

/*
 * The session lock: the session's a2_session_locks row FOR UPDATE, created
 * on first use (on the pinned shard, or through Citus, which writes it on
 * the shard's node).
 */
static void
dist_lock_session(const char *session_id)
{
	Datum		key[KEY_MAX] = {CStringGetTextDatum(session_id), (Datum) 0};

	connect_spi();
	a2_pin_local_shard(key[0], session_id);
	lock_or_create_row(&lock_row, &create_row, key, "session", session_id);
	finish_spi();
}

/*
 * The try form, never waiting: false when another transaction holds the
 * row.  A session without a row yet is being created right now (its first
 * call holds the lock while it writes the row), so it is busy too -- unless
 * it has events committed before any row was written (a store distributed
 * with its data): then the row is created here, once.
 */
static bool
try_lock_session(const Datum *key, const char *session_id)
{
	a2_pin_local_shard(key[0], session_id);
	if (exec_keyed(&try_lock_row, key, true, SPI_OK_SELECT) == 1)
		return true;
	if (exec_keyed(&row_exists, key, true, SPI_OK_SELECT) > 0 ||
		exec_keyed(&has_events, key, true, SPI_OK_SELECT) == 0)
		return false;
	exec_keyed(&create_row, key, false, SPI_OK_INSERT);
	return exec_keyed(&try_lock_row, key, true, SPI_OK_SELECT) == 1;
}

static bool
dist_try_lock_session(const char *session_id)
{
	Datum		key[KEY_MAX] = {CStringGetTextDatum(session_id), (Datum) 0};
	bool		locked;

	connect_spi();
	locked = try_lock_session(key, session_id);
	finish_spi();
	return locked;
}

static void
dist_lock_participant(const char *ns, const char *participant)
{
	Datum		key[KEY_MAX] = {CStringGetTextDatum(ns), CStringGetTextDatum(participant)};

	connect_spi();
	lock_or_create_row(&lock_participant_row, &create_participant_row, key,
					   "presence participant", participant);
	finish_spi();
}

static bool
dist_try_lock_participant(const char *ns, const char *participant)
{
	Datum		key[KEY_MAX] = {CStringGetTextDatum(ns), CStringGetTextDatum(participant)};
	bool		locked;

	connect_spi();
	locked = try_lock_or_create_row(&try_lock_participant_row,
									&participant_row_exists,
									&create_participant_row, key);
	finish_spi();
	return locked;
}

/* ---- event insertion ------------------------------------------------- */

/* Lanes of the batch that already have an unprocessed event (sorted names). */
static char **
lanes_in_use(Datum session, A2EventInput *events, int count, int *nbusy)
{
	char	  **lanes = palloc(sizeof(char *) * Max(count, 1));
	char	  **busy;
	int			n = 0;
	uint64		found;
	A2Args		a;

	*nbusy = 0;
	for (int i = 0; i < count; i++)
		if (events[i].lane)
			lanes[n++] = events[i].lane;
	if (n == 0)
		return NULL;
	a2_args_init(&a, &busy_lanes);
	a2_bind(&a, 1, TEXTOID, session);
	a2_bind(&a, 2, TEXTARRAYOID, a2_text_array(lanes, n));
	found = a2_exec_latest(&a, SPI_OK_SELECT);
	busy = palloc(sizeof(char *) * Max(found, 1));
	for (uint64 r = 0; r < found; r++)
		busy[r] = a2_col_text(r, BUSY_LANES_LANE);
	*nbusy = (int) found;
	return busy;
}

static bool
lane_listed(char **lanes, int n, const char *lane)
{
	for (int i = 0; i < n; i++)
		if (strcmp(lanes[i], lane) == 0)
			return true;
	return false;
}

/* The greatest index, else a dropped session's mark, else 0. */
static int64
base_index(Datum session)
{
	A2Args		a;

	a2_args_init(&a, &last_index);
	a2_bind(&a, 1, TEXTOID, session);
	if (a2_exec_latest(&a, SPI_OK_SELECT) > 0)
		return a2_col_int64(0, LAST_INDEX_IDX);
	a2_args_init(&a, &retired_mark);
	a2_bind(&a, 1, TEXTOID, session);
	if (a2_exec_latest(&a, SPI_OK_SELECT) > 0)
		return a2_col_int64(0, RETIRED_MARK_LAST_INDEX);
	return 0;
}

static void
dist_insert_events(const char *session_id, A2EventInput *events, int count,
				   int64 now_ms, bool generated, bool need_pending,
				   A2InsertOutcome *out)
{
	Datum		session = CStringGetTextDatum(session_id);
	char	  **busy;
	int			nbusy;
	int64		inserted = 0;
	bool	   *blocked = palloc(sizeof(bool) * Max(count, 1));
	int64	   *base = &out->base;
	bool	   *pending = &out->pending;

	if (a2_pinned_session(session_id) != NULL)
	{
		/* on the shard tables: one set-based statement, as on one server */
		a2_local_layer.insert_events(session_id, events, count, now_ms,
									 generated, need_pending, out);
		return;
	}
	out->waiting = true;		/* waits are refused in distributed mode */
	a2_batch_blocked_lanes(events, count, blocked);
	*base = base_index(session);
	*pending = need_pending && a2_session_has_pending(session_id);
	busy = lanes_in_use(session, events, count, &nbusy);

	for (int i = 0; i < count; i++)
	{
		A2EventInput *ev = &events[i];
		A2Args		a;

		a2_args_init(&a, generated ? &insert_row_generated : &insert_row);
		a2_bind(&a, 1, TEXTOID, session);
		a2_bind_int8(&a, 2, *base + 1 + i);
		a2_bind_text(&a, 3, ev->type);
		a2_bind(&a, 4, JSONBOID, JsonbPGetDatum(ev->payload));
		a2_bind_text(&a, 5, ev->id);
		a2_bind_int8(&a, 6, now_ms);
		if (ev->cause)
			a2_bind(&a, 7, JSONBOID, JsonbPGetDatum(ev->cause));
		else
			a2_bind_null(&a, 7);
		a2_bind_text(&a, 8, ev->lane);
		a2_bind_bool(&a, 9, ev->lane == NULL ||
					 (!blocked[i] && !lane_listed(busy, nbusy, ev->lane)));
		if (ev->settled)
			a2_bind_int8(&a, 10, now_ms);
		else
			a2_bind_null(&a, 10);
		if (ev->has_not_before)
			a2_bind_int8(&a, 11, ev->not_before);
		else
			a2_bind_null(&a, 11);
		inserted += a2_exec(&a, false, SPI_OK_INSERT);
	}
	out->inserted = inserted;
}

/* ---- presence -------------------------------------------------------- */

/*
 * Bind the field's key ($1 ns, $2 participant, $3 field), which every
 * presence field statement starts with.
 */
static void
bind_field(A2Args *a, A2Statement *stmt, const Datum *key, Datum field)
{
	a2_args_init(a, stmt);
	a2_bind(a, 1, TEXTOID, key[0]);
	a2_bind(a, 2, TEXTOID, key[1]);
	a2_bind(a, 3, TEXTOID, field);
}

/* The write loses when the field has a newer live value or tombstone. */
static bool
field_wins(const Datum *key, Datum field, int64 at_ms, int64 now_ms)
{
	A2Args		a;

	bind_field(&a, &field_newer, key, field);
	a2_bind_int8(&a, 4, at_ms);
	a2_bind_int8(&a, 5, now_ms);
	return a2_exec(&a, false, SPI_OK_SELECT) == 0;
}

static void
dist_presence_write(const A2PresenceWrite *f)
{
	Datum		key[KEY_MAX] = {CStringGetTextDatum(f->ns), CStringGetTextDatum(f->participant)};
	int64		at_ms = f->at_ms;
	int64		now_ms = f->now_ms;
	int64		expires_ms = f->expires_ms;
	int64		seen = f->seen;

	connect_spi();
	lock_or_create_row(&lock_participant_row, &create_participant_row, key,
					   "presence participant", f->participant);
	for (int i = 0; i < f->ndel; i++)
	{
		Datum		field = CStringGetTextDatum(f->del_fields[i]);
		A2Args		a;

		if (!field_wins(key, field, at_ms, now_ms))
			continue;
		bind_field(&a, &drop_value, key, field);
		a2_exec(&a, false, SPI_OK_DELETE);
		bind_field(&a, &put_tombstone, key, field);
		a2_bind_int8(&a, 4, at_ms);
		a2_bind_int8(&a, 5, expires_ms);
		a2_exec(&a, false, SPI_OK_INSERT);
	}
	for (int i = 0; i < f->nset; i++)
	{
		Datum		field = CStringGetTextDatum(f->set_fields[i]);
		A2Args		a;

		if (!field_wins(key, field, at_ms, now_ms))
			continue;
		bind_field(&a, &drop_tombstone, key, field);
		a2_exec(&a, false, SPI_OK_DELETE);
		bind_field(&a, &put_value, key, field);
		a2_bind(&a, 4, JSONBOID, JsonbPGetDatum(f->set_values[i]));
		a2_bind_int8(&a, 5, seen);
		a2_bind_int8(&a, 6, at_ms);
		a2_bind_int8(&a, 7, expires_ms);
		a2_exec(&a, false, SPI_OK_INSERT);
	}
	finish_spi();
}

/* ---- snapshots ------------------------------------------------------- */

static void
dist_insert_pins(const char *session_id, const char *reducer, int64 index,
				 const int64 *pins, int n)
{
	Datum		session;
	Datum		reducer_name;

	if (a2_pinned_session(session_id) != NULL)
	{
		a2_local_layer.insert_pins(session_id, reducer, index, pins, n);
		return;
	}
	session = CStringGetTextDatum(session_id);
	reducer_name = CStringGetTextDatum(reducer);
	for (int j = 0; j < n; j++)
	{
		A2Args		a;

		a2_args_init(&a, &insert_pin);
		a2_bind(&a, 1, TEXTOID, session);
		a2_bind(&a, 2, TEXTOID, reducer_name);
		a2_bind_int8(&a, 3, index);
		a2_bind_int8(&a, 4, pins[j]);
		a2_exec_latest(&a, SPI_OK_INSERT);
	}
}

static void
dist_head_to_history(const char *session_id, const char *reducer)
{
	A2Args		a;
	bool		isnull;

	if (a2_pinned_session(session_id) != NULL)
	{
		a2_local_layer.head_to_history(session_id, reducer);
		return;
	}
	a2_args_init(&a, &read_head);
	a2_bind_text(&a, 1, session_id);
	a2_bind_text(&a, 2, reducer);
	if (a2_exec_latest(&a, SPI_OK_SELECT) != 1)
		return;
	/* the tuple table stays valid until SPI disconnects; no column is null */
	a2_args_init(&a, &history_row);
	a2_bind(&a, 1, TEXTOID, a2_col(0, READ_HEAD_SESSION_ID, &isnull));
	a2_bind(&a, 2, TEXTOID, a2_col(0, READ_HEAD_REDUCER_NAME, &isnull));
	a2_bind(&a, 3, INT8OID, a2_col(0, READ_HEAD_UP_TO_INDEX, &isnull));
	a2_bind(&a, 4, JSONBOID, a2_col(0, READ_HEAD_STATE, &isnull));
	a2_bind(&a, 5, INT8OID, a2_col(0, READ_HEAD_UPDATED_AT, &isnull));
	a2_exec_latest(&a, SPI_OK_INSERT);
}

/* ---- state reads ----------------------------------------------------- */

static void
dist_read_states(const A2StateRequests *req, const char *reducer,
				 A2RowsCallback emit, void *arg)
{
	Datum		reducer_name = CStringGetTextDatum(reducer);

	for (int i = 0; i < req->count; i++)
	{
		A2Args		a;

		a2_args_init(&a, &read_state_one);
		a2_bind_text(&a, 1, req->sessions[i]);
		if (req->through_null[i])
			a2_bind_null(&a, 2);
		else
			a2_bind_int8(&a, 2, req->through[i]);
		if (req->snap_null[i])
			a2_bind_null(&a, 3);
		else
			a2_bind_int8(&a, 3, req->snap_through[i]);
		a2_bind(&a, 4, TEXTOID, reducer_name);
		emit(a2_exec(&a, true, SPI_OK_SELECT), arg);
	}
}

const A2Layer a2_dist_layer = {
	.name = "distributed",
	.lock_session = dist_lock_session,
	.try_lock_session = dist_try_lock_session,
	.lock_participant = dist_lock_participant,
	.try_lock_participant = dist_try_lock_participant,
	.insert_events = dist_insert_events,
	.presence_write = dist_presence_write,
	.insert_pins = dist_insert_pins,
	.head_to_history = dist_head_to_history,
	.read_states = dist_read_states,
	.next_available = a2_citus_next_available,
	.next_retry_at = a2_citus_next_retry_at,
};
