/*-------------------------------------------------------------------------
 *
 * citus_pin.c
 *	  Pinning a session to this node's shard group (citus_pin.h).
 *
 *	  Where a call runs on the node that holds the session's shards (every
 *	  delegated call, a client connected to that worker, a2_claim_next on
 *	  a worker), a2 need not plan its statements through Citus: the shard
 *	  tables are plain local tables.  What makes that safe is the lock a
 *	  Citus write takes before it looks up the placement, the group's
 *	  shard-metadata lock, which a shard move takes exclusively (on every
 *	  node) before it switches the placement.  a2 takes it through Citus's
 *	  own lock_shard_metadata() in a delegated call, or by making Citus run
 *	  a write that changes nothing in a client's own backend (which also
 *	  tells Citus the transaction wrote here), and then checks the
 *	  placement again under it.  Held to the end of the transaction, it
 *	  keeps the shards here for every later statement.
 *
 * IDENTIFICATION
 *	  src/citus/citus_pin.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "storage/lockdefs.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "citus/citus_pin.h"
#include "citus/citus_shards.h"
#include "spi_util.h"
#include "statements.h"

/*
 * Statements (statements.h): the catalog reads serve local mode, a kept
 * generic plan, and name no a2 object, so they serve any installed
 * objects; claim_shard goes through Citus (routed mode), which is its
 * point, and names a2_session_locks (0.2.0, with a2_distribute()).
 */

/*
 * The shard of a2_events ($1) that holds session $2, and whether this node
 * holds its active placement: a local catalog read (Citus's metadata is on
 * every node), kept as a generic plan.
 */
enum
{
	SESSION_SHARD_SHARDID = 1,
	SESSION_SHARD_PLACEMENT_HERE
};

static A2Statement lock_shard = {
	.name = "citus_pin.session_shard",
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1,
				"SELECT s.shardid, EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p"
				"         WHERE p.shardid OPERATOR(pg_catalog.=) s.shardid AND " A2_PLACEMENT_HERE("p") ") AS placement_here"
				"  FROM (SELECT pg_catalog.get_shard_id_for_distribution_column($1, $2) AS shardid) s"),
	},
	.nparams = 2,
	.params = {A2_PARAM("events_table", REGCLASSOID), A2_PARAM("session_id", TEXTOID)},
	.columns = A2_COLUMNS("shardid", "placement_here")
};

/*
 * A write to session $1's shard group through Citus that changes nothing
 * (no row has ctid (0,0)) and never waits for a row; a fast-path router
 * query (the distribution column appears once).  Citus's router executor
 * takes the group's shard-metadata lock for it, as for every write, and
 * holds it to the end of the transaction: a shard move waits for that lock
 * before it switches the placement.  It also tells Citus that the
 * transaction wrote a shard of this node (local execution), so that a
 * transaction which then writes another node commits with two-phase
 * commit, and later Citus statements of the transaction see what the
 * pinned statements wrote.
 */
static A2Statement claim_shard = {
	.name = "citus_pin.claim_shard",
	.texts = {
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_2,
				"UPDATE @extschema@.a2_session_locks l SET session_id = l.session_id"
				" WHERE l.session_id OPERATOR(pg_catalog.=) $1"
				"   AND l.ctid OPERATOR(pg_catalog.=) '(0,0)'::pg_catalog.tid"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)}
};

/* shard $1's active placement is on this node (read after the lock) */
enum
{
	PLACEMENT_HERE_PLACEMENT_HERE = 1
};

static A2Statement placement_here = {
	.name = "citus_pin.placement_here",
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1,
				"SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p"
				"  WHERE p.shardid OPERATOR(pg_catalog.=) $1 AND " A2_PLACEMENT_HERE("p") ") AS placement_here"),
	},
	.nparams = 1, .params = {A2_PARAM("shard_id", INT8OID)},
	.columns = A2_COLUMNS("placement_here")
};

/*
 * The shard group of a2_events' shard $1: the shard of each table in the
 * extension's schema ($2) that is distributed by session_id in the same
 * colocation group and covers the same hash range.
 */
enum
{
	SHARD_GROUP_RELNAME = 1,
	SHARD_GROUP_SHARDID
};

static A2Statement shard_group = {
	.name = "citus_pin.shard_group",
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1,
				"SELECT c.relname::pg_catalog.text AS relname, s.shardid"
				"  FROM pg_catalog.pg_dist_shard a"
				"  JOIN pg_catalog.pg_dist_partition pa ON pa.logicalrelid OPERATOR(pg_catalog.=) a.logicalrelid"
				"  JOIN pg_catalog.pg_dist_partition ps ON ps.colocationid OPERATOR(pg_catalog.=) pa.colocationid"
				"  JOIN pg_catalog.pg_dist_shard s ON s.logicalrelid OPERATOR(pg_catalog.=) ps.logicalrelid"
				"   AND s.shardminvalue OPERATOR(pg_catalog.=) a.shardminvalue"
				"  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.logicalrelid"
				" WHERE a.shardid OPERATOR(pg_catalog.=) $1 AND c.relnamespace OPERATOR(pg_catalog.=) $2"
				"   AND pg_catalog.column_to_column_name(ps.logicalrelid, ps.partkey)"
				"       OPERATOR(pg_catalog.=) 'session_id'"),
	},
	.nparams = 2, .params = {A2_PARAM("anchor_shard_id", INT8OID), A2_PARAM("schema", OIDOID)},
	.columns = A2_COLUMNS("relname", "shardid")
};

A2_STATEMENT_GROUP(citus_pin, &lock_shard, &claim_shard, &placement_here, &shard_group);

static A2ShardSet **shard_sets = NULL;	/* in TopMemoryContext */
static int	shard_set_count = 0;

/* The shard group of a2_events' shard `anchor`, read once per backend. */
static const A2ShardSet *
shard_set(int64 anchor)
{
	A2Args		a;
	A2ShardSet *set;
	MemoryContext old;
	uint64		n;

	for (int i = 0; i < shard_set_count; i++)
		if (shard_sets[i]->anchor == anchor)
			return shard_sets[i];
	a2_args_init(&a, &shard_group);
	a2_bind_int8(&a, 1, anchor);
	a2_bind(&a, 2, OIDOID, ObjectIdGetDatum(get_rel_namespace(a2_relid("a2_events"))));
	n = a2_exec(&a, true, SPI_OK_SELECT);
	old = MemoryContextSwitchTo(TopMemoryContext);
	set = palloc0(sizeof(A2ShardSet));
	set->anchor = anchor;
	set->count = (int) n;
	set->relnames = palloc(sizeof(char *) * Max(n, 1));
	set->shardids = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 r = 0; r < n; r++)
	{
		set->relnames[r] = a2_col_text(r, SHARD_GROUP_RELNAME);
		set->shardids[r] = a2_col_int64(r, SHARD_GROUP_SHARDID);
	}
	if (shard_sets == NULL)
		shard_sets = palloc(sizeof(A2ShardSet *) * 64);
	else if (shard_set_count % 64 == 0)
		shard_sets = repalloc(shard_sets, sizeof(A2ShardSet *) * (shard_set_count + 64));
	shard_sets[shard_set_count++] = set;
	MemoryContextSwitchTo(old);
	return set;
}

/*
 * A call Citus delegated to this node runs in a backend the coordinator
 * opened (Citus names those by this application_name prefix).  Such a
 * backend never sends work to another node: Citus refuses a delegated
 * call any statement outside the session's shards, and the coordinator
 * decides how its transaction commits.
 */
static bool
in_delegated_call(void)
{
	static const char prefix[] = "citus_internal gpid=";

	return application_name != NULL &&
		strncmp(application_name, prefix, strlen(prefix)) == 0;
}

/*
 * Citus's shard-metadata lock on shard's group, shared, as its router
 * executor takes it for a write -- through Citus's own
 * lock_shard_metadata(), which only the tables' owner may call: a2 calls
 * it as the owner of a2_events, as a SECURITY DEFINER function would.
 */
static void
lock_group_metadata(int64 shard)
{
	Oid			argtypes[2] = {INT4OID, INT8ARRAYOID};
	List	   *name = list_make1(makeString("pg_catalog"));
	Oid			fn;
	HeapTuple	tuple = SearchSysCache1(RELOID,
										ObjectIdGetDatum(a2_relid("a2_events")));
	Oid			owner;
	Oid			save_user;
	int			save_sec;

	name = lappend(name, makeString("lock_shard_metadata"));
	fn = LookupFuncName(name, 2, argtypes, false);
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation a2_events");
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	/* an error on the way is an abort, which restores the user */
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	OidFunctionCall2(fn, Int32GetDatum(ShareLock),
					 a2_int8_array(&shard, NULL, 1));
	SetUserIdAndSecContext(save_user, save_sec);
}

/*
 * Pin the session to its shard group when this node holds the group's
 * active placement (where a delegated call runs, a client connected to
 * that worker, a2_claim_next on a worker): take Citus's metadata lock on
 * the group, then check the placement again under it (a move may have
 * switched it since the first look; after the lock it cannot).  From then
 * on the session's statements run straight on the shard tables
 * (citus_shards.h).  Elsewhere (the coordinator; a shard that moved away)
 * nothing is pinned and the statements go through Citus -- in a call
 * delegated to the shard's old node Citus refuses them, which statements.c
 * reports as 40001.
 *
 * The lock: in a delegated call, straight (lock_group_metadata).  In a
 * client's own backend Citus must also learn that the transaction writes
 * a local shard, so the first pin of a transaction makes Citus run
 * claim_shard, which takes the lock and tells it; later pins lock straight.
 */
void
a2_pin_local_shard(Datum session, const char *session_id)
{
	A2Args		a;
	int64		anchor;

	if (a2_pinned_session(session_id) != NULL)
		return;
	a2_args_init(&a, &lock_shard);
	a2_bind(&a, 1, REGCLASSOID, ObjectIdGetDatum(a2_relid("a2_events")));
	a2_bind(&a, 2, TEXTOID, session);
	a2_exec(&a, true, SPI_OK_SELECT);
	if (!a2_col_bool(0, SESSION_SHARD_PLACEMENT_HERE))
		return;
	anchor = a2_col_int64(0, SESSION_SHARD_SHARDID);
	if (!a2_shard_group_pinned(anchor))
	{
		if (in_delegated_call() || a2_local_write_told())
			lock_group_metadata(anchor);
		else
		{
			a2_args_init(&a, &claim_shard);
			a2_bind(&a, 1, TEXTOID, session);
			a2_exec(&a, false, SPI_OK_UPDATE);
			a2_tell_local_write();
		}
		a2_args_init(&a, &placement_here);
		a2_bind_int8(&a, 1, anchor);
		a2_exec_latest(&a, SPI_OK_SELECT);
		if (!a2_col_bool(0, PLACEMENT_HERE_PLACEMENT_HERE))
			return;
	}
	a2_pin_session(session_id, shard_set(anchor));
}
