/*-------------------------------------------------------------------------
 *
 * distributed.c
 *	  Distributed mode: the session lock and the event insertion, in forms
 *	  Citus runs as single-shard router queries.
 *
 *	  A transaction advisory lock exists only on the node that takes it: a
 *	  call the coordinator runs (a2 inside a larger statement, say) and a
 *	  call delegated to the worker would each lock their own node and
 *	  interleave.  So in distributed mode the session lock is a row lock on
 *	  the session's a2_session_locks row, which lives in the shard colocated
 *	  with the session's events: every path locks the same row on the same
 *	  node.  The row is created on first use (INSERT ... ON CONFLICT DO
 *	  NOTHING waits for a concurrent creator) and then locked FOR UPDATE,
 *	  reading the latest committed version even under REPEATABLE READ.
 *
 *	  Event insertion: Citus refuses subqueries inside INSERT and would
 *	  route INSERT ... SELECT from unnest() through the coordinator, so the
 *	  greatest index and the lanes that already have unprocessed events are
 *	  read first (under the session lock nothing changes them) and each
 *	  event is one INSERT ... VALUES.
 *
 *	  Presence writes follow the same rules: the participant lock is a row
 *	  lock on a2_presence_locks (distributed by ns, so it lives with the
 *	  namespace's rows), and each field is checked and written by
 *	  single-row statements instead of INSERT ... SELECT from unnest().
 *
 * IDENTIFICATION
 *	  src/distributed.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "append.h"
#include "distributed.h"
#include "session.h"
#include "spi_plans.h"

static A2Statement lock_row = {
	.sql = "SELECT 1 FROM @extschema@.a2_session_locks l"
	" WHERE l.session_id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	.nargs = 1, .argtypes = {TEXTOID}
};

static A2Statement create_row = {
	.sql = "INSERT INTO @extschema@.a2_session_locks (session_id) VALUES ($1)"
	" ON CONFLICT (session_id) DO NOTHING",
	.nargs = 1, .argtypes = {TEXTOID}
};

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
 * Its own (nested) SPI connection: some callers lock before they connect.
 * The row lock lasts until the transaction ends, and SPI_finish restores
 * the caller's SPI_tuptable.
 */
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

void
a2_dist_lock_session(const char *session_id)
{
	Datum		key[1] = {CStringGetTextDatum(session_id)};

	a2_spi_begin();
	lock_or_create_row(&lock_row, &create_row, key, "session", session_id);
	a2_spi_end();
}

void
a2_dist_refuse(const char *function, const char *hint)
{
	if (!a2_distributed())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported in distributed mode", function),
			 errdetail("It reads or writes many sessions in one statement, which Citus cannot run on one shard."),
			 errhint("%s", hint)));
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

int64
a2_dist_insert_events(const char *session_id, A2EventInput *events,
					  int count, const bool *blocked, int64 now_ms,
					  bool generated, bool need_pending,
					  int64 *base, bool *pending)
{
	Datum		session = CStringGetTextDatum(session_id);
	Datum		values[11];
	char		nulls[11];
	char	  **busy;
	int			nbusy;
	int64		inserted = 0;

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
	return inserted;
}

/* The write loses when the field has a newer live value or tombstone. */
static bool
field_wins(Datum *key, Datum field, int64 at_ms, int64 now_ms)
{
	Datum		values[5] = {key[0], key[1], field, Int64GetDatum(at_ms),
	Int64GetDatum(now_ms)};

	return a2_exec(&field_newer, values, NULL, false, SPI_OK_SELECT) == 0;
}

void
a2_dist_presence_write(const char *ns, const char *participant,
					   const A2PresenceFields *f, int64 at_ms,
					   int64 seen, int64 now_ms, int64 expires_ms)
{
	Datum		key[2] = {CStringGetTextDatum(ns), CStringGetTextDatum(participant)};
	Datum		values[7];

	lock_or_create_row(&lock_participant_row, &create_participant_row, key,
					   "presence participant", participant);
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
}
