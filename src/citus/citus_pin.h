/*-------------------------------------------------------------------------
 *
 * citus_pin.h
 *	  The distributed layer's pinning (citus_layer.c): a session whose
 *	  shard group this node holds is pinned to it for the rest of the
 *	  transaction (citus_shards.h keeps the pins; statements.c then runs
 *	  the session's statements that have a shard text on the shard
 *	  tables).
 *
 *	  Lock order: Citus's shard-metadata lock on the session's group
 *	  (shared, as every Citus write takes it), before anything of the
 *	  session; layer.h's order after it.
 *
 * IDENTIFICATION
 *	  src/citus/citus_pin.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CITUS_PIN_H
#define A2_CITUS_PIN_H

/*
 * Statement text: placement p is active and on this node (Citus's
 * metadata, on every node since Citus 11).
 */
#define A2_PLACEMENT_HERE(p) \
	p ".shardstate OPERATOR(pg_catalog.=) 1 AND " p ".groupid OPERATOR(pg_catalog.=)" \
	" (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)"

/*
 * Pin session (a text Datum; session_id the same id) when this node holds
 * the active placement of its shard group; else leave it unpinned.  Inside
 * an SPI connection.
 */
extern void a2_pin_local_shard(Datum session, const char *session_id);

#endif							/* A2_CITUS_PIN_H */
