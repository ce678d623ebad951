/*-------------------------------------------------------------------------
 *
 * citus_walk.c
 *	  a2_claim_next's work discovery in distributed mode (citus_walk.h).
 *
 *	  A node that holds shards of a2_events walks only its own shards,
 *	  reading the shard tables directly with one statement (a UNION ALL of
 *	  each shard's first available entry, a plain local plan), and claims
 *	  through the routed statements, which Citus runs locally: no other node
 *	  is involved and nothing waits.  The shard list is read from Citus's
 *	  metadata at the start of each walk.  A node without shards (the
 *	  coordinator, usually) walks the distributed table through Citus with
 *	  the single-node layer's statements: one statement across every shard
 *	  per step.
 *
 *	  Lock order: none taken here beyond the row locks of the claims that
 *	  follow (claim_next.c).
 *
 * IDENTIFICATION
 *	  src/citus/citus_walk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"

#include "citus/citus_pin.h"
#include "citus/citus_walk.h"
#include "layer.h"
#include "spi_util.h"
#include "statements.h"

/* ---- a2_claim_next's walk over this node's shards -------------------- */

/*
 * The shards of a2_events ($1) whose active placement is on this node
 * (Citus's metadata, on every node since Citus 11).
 */
enum
{
	LOCAL_SHARDS_SHARDID = 1
};

static A2Statement local_shards = {
	.name = "citus_walk.local_shards",
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1,
				"SELECT s.shardid FROM pg_catalog.pg_dist_shard s"
				"  JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid"
				" WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1"
				"   AND " A2_PLACEMENT_HERE("p")
				" ORDER BY s.shardid"),
	},
	.nparams = 1, .params = {A2_PARAM("events_relid", OIDOID)},
	.columns = A2_COLUMNS("shardid")
};

/*
 * The walk over this node's shards, its text built by walk_local_shards()
 * from these pieces, one WALK_*_SHARD per shard, joined by UNION ALL: the
 * first entry available at $1 after ($2, $3), and the first
 * available-since time after $1.  `key` is layer.h's key of
 * a2_events_default_available for the installed objects; `shard` the shard id.
 * The samples show a node that holds a2_events' shards 102008 and 102010.
 */
#define WALK_UNION " UNION ALL "

#define WALK_NEXT_OPEN "SELECT u.session_id, u.available_at FROM ("
#define WALK_NEXT_SHARD(key, shard, plain) \
	"(SELECT e.session_id, " key " AS available_at" \
	" FROM @extschema@.a2_events_" shard " e" \
	" WHERE " A2_AVAILABLE_PRED plain \
	"   AND " key " OPERATOR(pg_catalog.<=) $1" \
	"   AND (" key ", e.session_id) OPERATOR(pg_catalog.>) ($2, $3)" \
	" ORDER BY " key ", e.session_id LIMIT 1)"
#define WALK_NEXT_CLOSE ") u ORDER BY u.available_at, u.session_id LIMIT 1"
#define WALK_NEXT_SAMPLE(key, plain) \
	WALK_NEXT_OPEN WALK_NEXT_SHARD(key, "102008", plain) WALK_UNION \
	WALK_NEXT_SHARD(key, "102010", plain) WALK_NEXT_CLOSE

#define WALK_RETRY_OPEN "SELECT pg_catalog.min(u.available_at) AS retry_at FROM ("
#define WALK_RETRY_SHARD(key, shard, plain) \
	"(SELECT " key " AS available_at" \
	" FROM @extschema@.a2_events_" shard " e" \
	" WHERE " A2_AVAILABLE_PRED plain \
	"   AND " key " OPERATOR(pg_catalog.>) $1" \
	" ORDER BY " key " LIMIT 1)"
#define WALK_RETRY_CLOSE ") u"
#define WALK_RETRY_SAMPLE(key, plain) \
	WALK_RETRY_OPEN WALK_RETRY_SHARD(key, "102008", plain) WALK_UNION \
	WALK_RETRY_SHARD(key, "102010", plain) WALK_RETRY_CLOSE

enum
{
	SHARD_NEXT_SESSION_ID = 1,
	SHARD_NEXT_AVAILABLE_AT
};

static A2Statement shard_next = {
	.name = "citus_walk.next",
	.dynamic = true,
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1, WALK_NEXT_SAMPLE(A2_AVAILABLE_KEY_0_1, "")),
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_3, WALK_NEXT_SAMPLE(A2_AVAILABLE_KEY, "")),
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_4, WALK_NEXT_SAMPLE(A2_AVAILABLE_KEY, A2_AVAILABLE_PLAIN)),
	},
	.nparams = 3, .params = {
		A2_PARAM("now", INT8OID), A2_PARAM("after_at", INT8OID),
		A2_PARAM("after_session", TEXTOID)},
	.columns = A2_COLUMNS("session_id", "available_at")
};

enum
{
	SHARD_RETRY_RETRY_AT = 1
};

static A2Statement shard_retry = {
	.name = "citus_walk.retry_at",
	.dynamic = true,
	.texts = {
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_1, WALK_RETRY_SAMPLE(A2_AVAILABLE_KEY_0_1, "")),
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_3, WALK_RETRY_SAMPLE(A2_AVAILABLE_KEY, "")),
		A2_TEXT(A2_LOCAL, A2_OBJECTS_0_4, WALK_RETRY_SAMPLE(A2_AVAILABLE_KEY, A2_AVAILABLE_PLAIN)),
	},
	.nparams = 1, .params = {A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("retry_at")
};

static bool walk_has_shards = false;

A2_STATEMENT_GROUP(citus_walk, &local_shards, &shard_next, &shard_retry);

/* ---- a2_claim_next's walk -------------------------------------------- */

/*
 * Read this node's shards of a2_events and build the walk's statements over
 * them; false when the node holds none.  At the start of each walk, so a
 * shard moved here or away is seen by the next call.  The pieces take the
 * key (format argument 1) and each shard id (argument 2); the key is the
 * installed objects' (a new text, after ALTER EXTENSION a2 UPDATE, is
 * prepared again).
 */
static bool
walk_local_shards(void)
{
	const char *key = a2_available_key();
	const char *plain = a2_has_dispatch() ? A2_AVAILABLE_PLAIN : "";
	StringInfoData next;
	StringInfoData retry;
	A2Args		a;
	uint64		n;

	a2_args_init(&a, &local_shards);
	a2_bind(&a, 1, OIDOID, ObjectIdGetDatum(a2_relid("a2_events")));
	n = a2_exec(&a, true, SPI_OK_SELECT);
	walk_has_shards = n > 0;
	if (!walk_has_shards)
		return false;
	initStringInfo(&next);
	initStringInfo(&retry);
	appendStringInfoString(&next, WALK_NEXT_OPEN);
	appendStringInfoString(&retry, WALK_RETRY_OPEN);
	for (uint64 r = 0; r < n; r++)
	{
		int64		shard = a2_col_int64(r, LOCAL_SHARDS_SHARDID);

		if (r > 0)
		{
			appendStringInfoString(&next, WALK_UNION);
			appendStringInfoString(&retry, WALK_UNION);
		}
		appendStringInfo(&next, WALK_NEXT_SHARD("%1$s", "%2$lld", "%3$s"),
						 key, (long long) shard, plain);
		appendStringInfo(&retry, WALK_RETRY_SHARD("%1$s", "%2$lld", "%3$s"),
						 key, (long long) shard, plain);
	}
	appendStringInfoString(&next, WALK_NEXT_CLOSE);
	appendStringInfoString(&retry, WALK_RETRY_CLOSE);
	a2_set_statement_text(&shard_next, next.data);
	a2_set_statement_text(&shard_retry, retry.data);
	pfree(next.data);
	pfree(retry.data);
	return true;
}

bool
a2_citus_next_available(int64 now_ms, int64 *after_at, char **after_session)
{
	A2Args		a;

	/* a walk starts at the very beginning of the key order */
	if (*after_at == PG_INT64_MIN && (*after_session)[0] == '\0')
		walk_local_shards();
	if (!walk_has_shards)
		return a2_local_layer.next_available(now_ms, after_at, after_session);
	a2_args_init(&a, &shard_next);
	a2_bind_int8(&a, 1, now_ms);
	a2_bind_int8(&a, 2, *after_at);
	a2_bind_text(&a, 3, *after_session);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		return false;
	*after_session = a2_col_text(0, SHARD_NEXT_SESSION_ID);
	*after_at = a2_col_int64(0, SHARD_NEXT_AVAILABLE_AT);
	return true;
}

bool
a2_citus_next_retry_at(int64 now_ms, int64 *at)
{
	A2Args		a;
	Datum		value;
	bool		isnull;

	if (!walk_has_shards)
		return a2_local_layer.next_retry_at(now_ms, at);
	a2_args_init(&a, &shard_retry);
	a2_bind_int8(&a, 1, now_ms);
	if (a2_exec(&a, false, SPI_OK_SELECT) == 0)
		return false;
	value = a2_col(0, SHARD_RETRY_RETRY_AT, &isnull);
	if (isnull)
		return false;
	*at = DatumGetInt64(value);
	return true;
}
