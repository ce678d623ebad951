/*-------------------------------------------------------------------------
 *
 * distributed.c
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
 *	  the session to that group (dist_pin.c): it takes Citus's
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
 *	  spi_plans.c reports it as 40001, a retry (SPEC 7.6), as it does Citus
 *	  refusing the statements of a call delegated to the shard's old node.
 *	  Presence writes: per field, single-row statements.
 *
 *	  Work discovery (a2_claim_next): a node that holds shards of a2_events
 *	  walks only its own shards, reading the shard tables directly with one
 *	  statement (a UNION ALL of each shard's first available entry, a plain
 *	  local plan), and claims through the routed statements, which Citus
 *	  runs locally: no other node is involved and nothing waits.  The shard
 *	  list is read from Citus's metadata at the start of each walk.  A node
 *	  without shards (the coordinator, usually) walks the distributed table
 *	  through Citus: one statement across every shard per step.
 *
 *	  Lock order: layer.h's, with Citus's shard-metadata lock (shared, as
 *	  every Citus write takes it) before the session's lock row.  Calls
 *	  nothing above the layer.
 *
 * IDENTIFICATION
 *	  src/distributed.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "dist_pin.h"
#include "layer.h"
#include "session.h"
#include "shard_pin.h"
#include "spi_plans.h"

static A2Statement create_row = {
	.sql = "INSERT INTO @extschema@.a2_session_locks (session_id) VALUES ($1)"
	" ON CONFLICT (session_id) DO NOTHING",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

/* The session's lock row (through Citus, or on the pinned shard). */
static A2Statement lock_row = {
	.sql = "SELECT 1 FROM @extschema@.a2_session_locks l"
	" WHERE l.session_id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

static A2Statement try_lock_row = {
	.sql = "SELECT 1 FROM @extschema@.a2_session_locks l"
	" WHERE l.session_id OPERATOR(pg_catalog.=) $1 FOR UPDATE SKIP LOCKED",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

static A2Statement row_exists = {
	.sql = "SELECT 1 FROM @extschema@.a2_session_locks l"
	" WHERE l.session_id OPERATOR(pg_catalog.=) $1",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

static A2Statement has_events = {
	.sql = "SELECT 1 FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 LIMIT 1",
	.session_param = 1, .nargs = 1, .argtypes = {TEXTOID}
};

/*
 * The statements below until the presence ones run only for a session that
 * is not pinned: a pinned one inserts through local.c's statements.
 */
static A2Statement last_index = {
	.sql = "SELECT e.idx FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 ORDER BY e.idx DESC LIMIT 1",
	.nargs = 1, .argtypes = {TEXTOID}
};

/*
 * A dropped session's high-water mark (src/retire.c), read when it has no
 * event rows.  Read directly: through the SECURITY DEFINER SQL function
 * the single-node statement uses, Citus would have to plan the function's
 * parameterized query, which it cannot route.
 */
static A2Statement retired_mark = {
	.sql = "SELECT r.last_index FROM @extschema@.a2_retired_sessions r"
	" WHERE r.session_id OPERATOR(pg_catalog.=) $1",
	.nargs = 1, .argtypes = {TEXTOID}
};

static A2Statement busy_lanes = {
	.sql = "SELECT DISTINCT p.lane FROM @extschema@.a2_events p"
	" WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.lane OPERATOR(pg_catalog.=) ANY ($2) AND p.processed_at IS NULL",
	.nargs = 2, .argtypes = {TEXTOID, TEXTARRAYOID}
};

#define INSERT_ROW_SQL(on_conflict) \
	"INSERT INTO @extschema@.a2_events" \
	"  (session_id, idx, event_type, payload, event_id, created_at," \
	"   cause, lane, lane_ready, processed_at" A2_NB(", not_before", "") ")" \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10" A2_NB(", $11", "") ")" on_conflict

#define INSERT_ROW_ARGS \
	.nargs = 11, .argtypes = {TEXTOID, INT8OID, TEXTOID, JSONBOID, TEXTOID, INT8OID, \
	JSONBOID, TEXTOID, BOOLOID, INT8OID, INT8OID}

static A2Statement insert_row = {
	.sql = INSERT_ROW_SQL(" ON CONFLICT (session_id, event_id) DO NOTHING"),
	INSERT_ROW_ARGS
};

static A2Statement insert_row_generated = {
	.sql = INSERT_ROW_SQL(""), INSERT_ROW_ARGS
};

static A2Statement lock_participant_row = {
	.sql = "SELECT 1 FROM @extschema@.a2_presence_locks l"
	" WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2 FOR UPDATE",
	.nargs = 2, .argtypes = {TEXTOID, TEXTOID}
};

static A2Statement create_participant_row = {
	.sql = "INSERT INTO @extschema@.a2_presence_locks (ns, participant) VALUES ($1, $2)"
	" ON CONFLICT (ns, participant) DO NOTHING",
	.nargs = 2, .argtypes = {TEXTOID, TEXTOID}
};

static A2Statement try_lock_participant_row = {
	.sql = "SELECT 1 FROM @extschema@.a2_presence_locks l"
	" WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2"
	" FOR UPDATE SKIP LOCKED",
	.nargs = 2, .argtypes = {TEXTOID, TEXTOID}
};

static A2Statement participant_row_exists = {
	.sql = "SELECT 1 FROM @extschema@.a2_presence_locks l"
	" WHERE l.ns OPERATOR(pg_catalog.=) $1 AND l.participant OPERATOR(pg_catalog.=) $2",
	.nargs = 2, .argtypes = {TEXTOID, TEXTOID}
};

/*
 * The shards of a2_events ($1) whose active placement is on this node
 * (Citus's metadata, on every node since Citus 11).
 */
static A2Statement local_shards = {
	.sql = "SELECT s.shardid FROM pg_catalog.pg_dist_shard s"
	"  JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid"
	" WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1"
	"   AND " A2_PLACEMENT_HERE("p")
	" ORDER BY s.shardid",
	.local_only = true,
	.nargs = 1, .argtypes = {OIDOID}
};

/*
 * The walk over this node's shards (text built by walk_local_shards()): the
 * first entry available at $1 after ($2, $3), and the first available-since
 * time after $1.
 */
static A2Statement shard_next = {
	.sql = NULL, .local_only = true,
	.nargs = 3, .argtypes = {INT8OID, INT8OID, TEXTOID}
};

static A2Statement shard_retry = {
	.sql = NULL, .local_only = true,
	.nargs = 1, .argtypes = {INT8OID}
};

static bool walk_has_shards = false;

/* a live value or tombstone of the field newer than the write ($4 at, $5 now) */
static A2Statement field_newer = {
	.sql = "SELECT 1 FROM @extschema@.a2_presence p"
	" WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) $3"
	"   AND p.expires_at OPERATOR(pg_catalog.>) $5 AND p.at OPERATOR(pg_catalog.>) $4"
	" UNION ALL "
	"SELECT 1 FROM @extschema@.a2_presence_tombstones t"
	" WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) $3"
	"   AND t.expires_at OPERATOR(pg_catalog.>) $5 AND t.at OPERATOR(pg_catalog.>) $4"
	" LIMIT 1",
	.nargs = 5, .argtypes = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID}
};

static A2Statement drop_value = {
	.sql = "DELETE FROM @extschema@.a2_presence p"
	" WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $2 AND p.field OPERATOR(pg_catalog.=) $3",
	.nargs = 3, .argtypes = {TEXTOID, TEXTOID, TEXTOID}
};

static A2Statement drop_tombstone = {
	.sql = "DELETE FROM @extschema@.a2_presence_tombstones t"
	" WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $2 AND t.field OPERATOR(pg_catalog.=) $3",
	.nargs = 3, .argtypes = {TEXTOID, TEXTOID, TEXTOID}
};

static A2Statement put_tombstone = {
	.sql = "INSERT INTO @extschema@.a2_presence_tombstones"
	"  (ns, participant, field, at, expires_at) VALUES ($1, $2, $3, $4, $5)"
	" ON CONFLICT (ns, participant, field) DO UPDATE"
	"   SET at = excluded.at, expires_at = excluded.expires_at",
	.nargs = 5, .argtypes = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID}
};

static A2Statement put_value = {
	.sql = "INSERT INTO @extschema@.a2_presence"
	"  (ns, participant, field, value, seen, at, expires_at)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7)"
	" ON CONFLICT (ns, participant, field) DO UPDATE"
	"   SET value = excluded.value, seen = excluded.seen,"
	"       at = excluded.at, expires_at = excluded.expires_at",
	.nargs = 7, .argtypes = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT8OID, INT8OID, INT8OID}
};

/*
 * Lock the row `lock` finds for `key`, creating it with `create` first when
 * it does not exist yet.
 */
static void
lock_or_create_row(A2Statement *lock, A2Statement *create, Datum *key,
				   const char *what, const char *name)
{
	if (a2_exec_latest(lock, key, NULL, SPI_OK_SELECT) == 0)
	{
		a2_exec(create, key, NULL, false, SPI_OK_INSERT);
		if (a2_exec_latest(lock, key, NULL, SPI_OK_SELECT) != 1)
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
					   A2Statement *create, Datum *key)
{
	if (a2_exec_latest(try_lock, key, NULL, SPI_OK_SELECT) == 1)
		return true;
	if (a2_exec_latest(exists, key, NULL, SPI_OK_SELECT) > 0)
		return false;
	a2_exec(create, key, NULL, false, SPI_OK_INSERT);
	return a2_exec_latest(try_lock, key, NULL, SPI_OK_SELECT) == 1;
}

/*
 * The session lock: the session's a2_session_locks row FOR UPDATE, created
 * on first use (on the pinned shard, or through Citus, which writes it on
 * the shard's node).  Each
 * lock function connects SPI itself (some callers lock before they
 * connect); the lock lasts until the transaction ends, and SPI_finish
 * restores the caller's SPI_tuptable.
 */
static void
dist_lock_session(const char *session_id)
{
	Datum		key[1] = {CStringGetTextDatum(session_id)};

	a2_spi_begin();
	a2_pin_local_shard(key[0], session_id);
	lock_or_create_row(&lock_row, &create_row, key, "session", session_id);
	a2_spi_end();
}

/*
 * The try form, never waiting: false when another transaction holds the
 * row.  A session without a row yet is being created right now (its first
 * call holds the lock while it writes the row), so it is busy too -- unless
 * it has events committed before any row was written (a store distributed
 * with its data): then the row is created here, once.
 */
static bool
try_lock_session(Datum *key, const char *session_id)
{
	a2_pin_local_shard(key[0], session_id);
	if (a2_exec_latest(&try_lock_row, key, NULL, SPI_OK_SELECT) == 1)
		return true;
	if (a2_exec_latest(&row_exists, key, NULL, SPI_OK_SELECT) > 0 ||
		a2_exec_latest(&has_events, key, NULL, SPI_OK_SELECT) == 0)
		return false;
	a2_exec(&create_row, key, NULL, false, SPI_OK_INSERT);
	return a2_exec_latest(&try_lock_row, key, NULL, SPI_OK_SELECT) == 1;
}

static bool
dist_try_lock_session(const char *session_id)
{
	Datum		key[1] = {CStringGetTextDatum(session_id)};
	bool		locked;

	a2_spi_begin();
	locked = try_lock_session(key, session_id);
	a2_spi_end();
	return locked;
}

static void
dist_lock_participant(const char *ns, const char *participant)
{
	Datum		key[2] = {CStringGetTextDatum(ns), CStringGetTextDatum(participant)};

	a2_spi_begin();
	lock_or_create_row(&lock_participant_row, &create_participant_row, key,
					   "presence participant", participant);
	a2_spi_end();
}

static bool
dist_try_lock_participant(const char *ns, const char *participant)
{
	Datum		key[2] = {CStringGetTextDatum(ns), CStringGetTextDatum(participant)};
	bool		locked;

	a2_spi_begin();
	locked = try_lock_or_create_row(&try_lock_participant_row,
									&participant_row_exists,
									&create_participant_row, key);
	a2_spi_end();
	return locked;
}

/* Lanes of the batch that already have an unprocessed event (sorted names). */
static char **
lanes_in_use(Datum session, A2EventInput *events, int count, int *nbusy)
{
	char	  **lanes = palloc(sizeof(char *) * Max(count, 1));
	char	  **busy;
	int			n = 0;
	uint64		found;
	Datum		values[2];

	*nbusy = 0;
	for (int i = 0; i < count; i++)
		if (events[i].lane)
			lanes[n++] = events[i].lane;
	if (n == 0)
		return NULL;
	values[0] = session;
	values[1] = a2_text_array(lanes, n);
	found = a2_exec_latest(&busy_lanes, values, NULL, SPI_OK_SELECT);
	busy = palloc(sizeof(char *) * Max(found, 1));
	for (uint64 r = 0; r < found; r++)
		busy[r] = a2_col_text(r, 1);
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

static void
dist_insert_events(const char *session_id, A2EventInput *events, int count,
				   int64 now_ms, bool generated, bool need_pending,
				   A2InsertOutcome *out)
{
	Datum		session = CStringGetTextDatum(session_id);
	Datum		values[11];
	char		nulls[11];
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
	a2_batch_blocked_lanes(events, count, blocked);
	*base = 0;
	/* the greatest index, else a dropped session's mark, else 0 */
	if (a2_exec_latest(&last_index, &session, NULL, SPI_OK_SELECT) > 0 ||
		a2_exec_latest(&retired_mark, &session, NULL, SPI_OK_SELECT) > 0)
		*base = a2_col_int64(0, 1);
	*pending = need_pending && a2_session_has_pending(session_id);
	busy = lanes_in_use(session, events, count, &nbusy);

	for (int i = 0; i < count; i++)
	{
		A2EventInput *ev = &events[i];

		memset(nulls, ' ', sizeof(nulls));
		values[0] = session;
		values[1] = Int64GetDatum(*base + 1 + i);
		values[2] = CStringGetTextDatum(ev->type);
		values[3] = JsonbPGetDatum(ev->payload);
		values[4] = CStringGetTextDatum(ev->id);
		values[5] = Int64GetDatum(now_ms);
		if (ev->cause)
			values[6] = JsonbPGetDatum(ev->cause);
		else
			nulls[6] = 'n';
		if (ev->lane)
			values[7] = CStringGetTextDatum(ev->lane);
		else
			nulls[7] = 'n';
		values[8] = BoolGetDatum(ev->lane == NULL ||
								 (!blocked[i] && !lane_listed(busy, nbusy, ev->lane)));
		if (ev->settled)
			values[9] = Int64GetDatum(now_ms);
		else
			nulls[9] = 'n';
		if (ev->has_not_before)
			values[10] = Int64GetDatum(ev->not_before);
		else
			nulls[10] = 'n';
		inserted += a2_exec(generated ? &insert_row_generated : &insert_row,
							values, nulls, false, SPI_OK_INSERT);
	}
	out->inserted = inserted;
}

/* The write loses when the field has a newer live value or tombstone. */
static bool
field_wins(Datum *key, Datum field, int64 at_ms, int64 now_ms)
{
	Datum		values[5] = {key[0], key[1], field, Int64GetDatum(at_ms),
	Int64GetDatum(now_ms)};

	return a2_exec(&field_newer, values, NULL, false, SPI_OK_SELECT) == 0;
}

static void
dist_presence_write(const A2PresenceWrite *f)
{
	Datum		key[2] = {CStringGetTextDatum(f->ns), CStringGetTextDatum(f->participant)};
	Datum		values[7];
	int64		at_ms = f->at_ms;
	int64		now_ms = f->now_ms;
	int64		expires_ms = f->expires_ms;
	int64		seen = f->seen;

	a2_spi_begin();
	lock_or_create_row(&lock_participant_row, &create_participant_row, key,
					   "presence participant", f->participant);
	values[0] = key[0];
	values[1] = key[1];
	for (int i = 0; i < f->ndel; i++)
	{
		values[2] = CStringGetTextDatum(f->del_fields[i]);
		if (!field_wins(key, values[2], at_ms, now_ms))
			continue;
		a2_exec(&drop_value, values, NULL, false, SPI_OK_DELETE);
		values[3] = Int64GetDatum(at_ms);
		values[4] = Int64GetDatum(expires_ms);
		a2_exec(&put_tombstone, values, NULL, false, SPI_OK_INSERT);
	}
	for (int i = 0; i < f->nset; i++)
	{
		values[2] = CStringGetTextDatum(f->set_fields[i]);
		if (!field_wins(key, values[2], at_ms, now_ms))
			continue;
		a2_exec(&drop_tombstone, values, NULL, false, SPI_OK_DELETE);
		values[3] = JsonbPGetDatum(f->set_values[i]);
		values[4] = Int64GetDatum(seen);
		values[5] = Int64GetDatum(at_ms);
		values[6] = Int64GetDatum(expires_ms);
		a2_exec(&put_value, values, NULL, false, SPI_OK_INSERT);
	}
	a2_spi_end();
}

/* ---- snapshots: single-row statements -------------------------------- */

/*
 * Citus runs no INSERT ... SELECT as a single-shard router query, so a pin
 * is one INSERT ... VALUES each and the head moves to history through C
 * (read it, then insert it as snapshots.c's put_history would).  For a
 * session that is not pinned: a pinned one uses local.c's statements.
 */
static A2Statement insert_pin = {
	.sql = "INSERT INTO @extschema@.a2_snapshot_pins"
	"  (session_id, event_index, reducer_name, up_to_index)"
	" VALUES ($1, $4, $2, $3) ON CONFLICT DO NOTHING",
	.nargs = 4, .argtypes = {TEXTOID, TEXTOID, INT8OID, INT8OID}
};

static A2Statement read_head = {
	.sql = "SELECT s.session_id, s.reducer_name, s.up_to_index, s.state, s.updated_at"
	"  FROM @extschema@.a2_snapshots s"
	" WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $2",
	.nargs = 2, .argtypes = {TEXTOID, TEXTOID}
};

static A2Statement history_row = {
	.sql = "INSERT INTO @extschema@.a2_snapshot_history"
	"  (session_id, reducer_name, up_to_index, state, updated_at)"
	" VALUES ($1, $2, $3, $4, $5)"
	" ON CONFLICT (session_id, reducer_name, up_to_index) DO UPDATE"
	"   SET state = excluded.state, updated_at = excluded.updated_at",
	.nargs = 5, .argtypes = {TEXTOID, TEXTOID, INT8OID, JSONBOID, INT8OID}
};

static void
dist_insert_pins(const char *session_id, const char *reducer, int64 index,
				 const int64 *pins, int n)
{
	Datum		values[4];

	if (a2_pinned_session(session_id) != NULL)
	{
		a2_local_layer.insert_pins(session_id, reducer, index, pins, n);
		return;
	}
	values[0] = CStringGetTextDatum(session_id);
	values[1] = CStringGetTextDatum(reducer);
	values[2] = Int64GetDatum(index);
	for (int j = 0; j < n; j++)
	{
		values[3] = Int64GetDatum(pins[j]);
		a2_exec_latest(&insert_pin, values, NULL, SPI_OK_INSERT);
	}
}

static void
dist_head_to_history(const char *session_id, const char *reducer)
{
	Datum		key[2] = {CStringGetTextDatum(session_id), CStringGetTextDatum(reducer)};
	Datum		row[5];

	if (a2_pinned_session(session_id) != NULL)
	{
		a2_local_layer.head_to_history(session_id, reducer);
		return;
	}
	if (a2_exec_latest(&read_head, key, NULL, SPI_OK_SELECT) != 1)
		return;
	/* the tuple table stays valid until a2_spi_end(); no column is null */
	for (int c = 0; c < 5; c++)
	{
		bool		isnull;

		row[c] = a2_col(0, c + 1, &isnull);
	}
	a2_exec_latest(&history_row, row, NULL, SPI_OK_INSERT);
}

/* ---- state reads: one routed statement per request ------------------- */

/*
 * a2_read_state(s)' statement for one request ($1 session, $2 through, $3
 * snapshot-through, $4 reducer), every relation filtered on session_id =
 * $1, so Citus routes it whole to the session's shard (one snapshot
 * there).  a2_read_states runs it once per request, in request order.
 */
static A2Statement read_state_one = {
	.sql = "WITH sel AS MATERIALIZED ("
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
	"SELECT NULL::pg_catalog.text, NULL::bigint, NULL::pg_catalog.text, NULL::pg_catalog.jsonb, NULL::pg_catalog.text, NULL::bigint,"
	"       1, 0, sel.head_index, sel.snap_index, sel.snap_state"
	"  FROM sel "
	"UNION ALL "
	"SELECT e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at,"
	"       1, 1, NULL, NULL, NULL"
	"  FROM sel, @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1"
	"   AND e.idx OPERATOR(pg_catalog.>) COALESCE(sel.snap_index, -1)"
	"   AND e.idx OPERATOR(pg_catalog.<=) COALESCE($2, 9223372036854775807) "
	"ORDER BY 8, 2",
	.session_param = 1, .nargs = 4, .argtypes = {TEXTOID, INT8OID, INT8OID, TEXTOID}
};

static void
dist_read_states(const A2StateRequests *req, const char *reducer,
				 A2RowsCallback emit, void *arg)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[3] = CStringGetTextDatum(reducer);
	for (int i = 0; i < req->count; i++)
	{
		values[0] = CStringGetTextDatum(req->sessions[i]);
		values[1] = Int64GetDatum(req->through[i]);
		nulls[1] = req->through_null[i] ? 'n' : ' ';
		values[2] = Int64GetDatum(req->snap_through[i]);
		nulls[2] = req->snap_null[i] ? 'n' : ' ';
		emit(a2_exec(&read_state_one, values, nulls, true, SPI_OK_SELECT), arg);
	}
}

/*
 * Read this node's shards of a2_events and build the walk's statements over
 * them; false when the node holds none.  At the start of each walk, so a
 * shard moved here or away is seen by the next call.
 */
static bool
walk_local_shards(void)
{
	Datum		relid = ObjectIdGetDatum(a2_relid("a2_events"));
	StringInfoData next;
	StringInfoData retry;
	uint64		n;

	n = a2_exec(&local_shards, &relid, NULL, true, SPI_OK_SELECT);
	walk_has_shards = n > 0;
	if (!walk_has_shards)
		return false;
	initStringInfo(&next);
	initStringInfo(&retry);
	appendStringInfoString(&next, "SELECT u.session_id, u.k FROM (");
	appendStringInfoString(&retry, "SELECT pg_catalog.min(u.k) FROM (");
	for (uint64 r = 0; r < n; r++)
	{
		int64		shard = a2_col_int64(r, 1);
		const char *sep = r > 0 ? " UNION ALL " : "";

		appendStringInfo(&next, "%s(SELECT e.session_id, " A2_AVAILABLE_KEY " AS k"
						 " FROM @extschema@.a2_events_" INT64_FORMAT " e"
						 " WHERE " A2_AVAILABLE_PRED
						 "   AND " A2_AVAILABLE_KEY " OPERATOR(pg_catalog.<=) $1"
						 "   AND (" A2_AVAILABLE_KEY ", e.session_id) OPERATOR(pg_catalog.>) ($2, $3)"
						 " ORDER BY " A2_AVAILABLE_KEY ", e.session_id LIMIT 1)",
						 sep, shard);
		appendStringInfo(&retry, "%s(SELECT " A2_AVAILABLE_KEY " AS k"
						 " FROM @extschema@.a2_events_" INT64_FORMAT " e"
						 " WHERE " A2_AVAILABLE_PRED
						 "   AND " A2_AVAILABLE_KEY " OPERATOR(pg_catalog.>) $1"
						 " ORDER BY " A2_AVAILABLE_KEY " LIMIT 1)",
						 sep, shard);
	}
	appendStringInfoString(&next, ") u ORDER BY u.k, u.session_id LIMIT 1");
	appendStringInfoString(&retry, ") u");
	a2_set_statement_text(&shard_next, next.data);
	a2_set_statement_text(&shard_retry, retry.data);
	pfree(next.data);
	pfree(retry.data);
	return true;
}

static bool
dist_next_available(int64 now_ms, int64 *after_at, char **after_session)
{
	Datum		values[3];

	/* a walk starts at the very beginning of the key order */
	if (*after_at == PG_INT64_MIN && (*after_session)[0] == '\0')
		walk_local_shards();
	if (!walk_has_shards)
		return a2_local_layer.next_available(now_ms, after_at, after_session);
	values[0] = Int64GetDatum(now_ms);
	values[1] = Int64GetDatum(*after_at);
	values[2] = CStringGetTextDatum(*after_session);
	if (a2_exec_latest(&shard_next, values, NULL, SPI_OK_SELECT) == 0)
		return false;
	*after_session = a2_col_text(0, 1);
	*after_at = a2_col_int64(0, 2);
	return true;
}

static bool
dist_next_retry_at(int64 now_ms, int64 *at)
{
	Datum		value = Int64GetDatum(now_ms);
	bool		isnull;

	if (!walk_has_shards)
		return a2_local_layer.next_retry_at(now_ms, at);
	if (a2_exec(&shard_retry, &value, NULL, false, SPI_OK_SELECT) == 0)
		return false;
	value = a2_col(0, 1, &isnull);
	if (isnull)
		return false;
	*at = DatumGetInt64(value);
	return true;
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
	.next_available = dist_next_available,
	.next_retry_at = dist_next_retry_at,
};
