/*-------------------------------------------------------------------------
 *
 * citus_walk.h
 *	  a2_claim_next's walk in distributed mode: the distributed layer's
 *	  next_available and next_retry_at (layer.h).  On a node that holds
 *	  shards of a2_events, over those shards only; elsewhere through Citus.
 *
 * IDENTIFICATION
 *	  src/citus/citus_walk.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CITUS_WALK_H
#define A2_CITUS_WALK_H

extern bool a2_citus_next_available(int64 now_ms, int64 *after_at,
									char **after_session);
extern bool a2_citus_next_retry_at(int64 now_ms, int64 *at);

#endif							/* A2_CITUS_WALK_H */
