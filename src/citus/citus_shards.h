/*-------------------------------------------------------------------------
 *
 * citus_shards.h
 *	  Distributed mode: sessions pinned to a shard this node holds, for the
 *	  rest of the transaction.
 *
 *	  citus_pin.c pins a session once the transaction holds Citus's
 *	  shard-metadata lock on the session's shard group (the lock Citus's
 *	  router executor takes before a write, which a shard move waits for)
 *	  and has seen the group's active placement on this node.  Until the
 *	  transaction ends nothing can move the shard away, so statements.c runs
 *	  the session's statements (those with a shard text, keyed by
 *	  A2Statement.session_param: statements.h) straight on the shard
 *	  tables, as on one server, instead of through Citus's planner.
 *
 *	  Pins go at transaction end and at every subtransaction abort (which
 *	  may release the locks they stand for; a later call pins again).  This
 *	  module only keeps the pins and rewrites statement text: it runs no
 *	  statement and calls nothing else of a2.
 *
 * IDENTIFICATION
 *	  src/citus/citus_shards.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CITUS_SHARDS_H
#define A2_CITUS_SHARDS_H

/*
 * One shard group: the shard of each session-keyed table (a2_events,
 * a2_snapshots, ...) that holds the same hash range.  Kept for the life of
 * the backend (Citus never reuses a shard id).
 */
typedef struct A2ShardSet
{
	int64		anchor;			/* a2_events' shard, the set's key */
	int			count;
	char	  **relnames;		/* unqualified table names */
	int64	   *shardids;		/* the shard of relnames[i] */
} A2ShardSet;

/* Pin session_id to `set` until the transaction ends. */
extern void a2_pin_session(const char *session_id, const A2ShardSet *set);

/* The set a session is pinned to, NULL when it is not pinned. */
extern const A2ShardSet *a2_pinned_session(const char *session_id);
extern const A2ShardSet *a2_pinned_session_datum(Datum session_text);

/* Some session of this shard group is pinned (its lock is held). */
extern bool a2_shard_group_pinned(int64 anchor);

/*
 * Citus ran a write on a local shard for this transaction (citus_pin.c's
 * claim_shard), so it knows the transaction wrote here: what a2 writes
 * after it needs no other Citus statement to say so.  Forgotten with the
 * pins.
 */
extern void a2_tell_local_write(void);
extern bool a2_local_write_told(void);

/* The shard id of one table of the set, or 0 when it has none. */
extern int64 a2_shard_of(const A2ShardSet *set, const char *relname);

/*
 * Statement text with every @extschema@.<table> of the set replaced by
 * that table's shard; palloc'd.  A table that is not in the set is an
 * error: the statement was given a shard text by mistake.
 */
extern char *a2_shard_statement_text(const char *sql, const A2ShardSet *set);

#endif							/* A2_CITUS_SHARDS_H */
