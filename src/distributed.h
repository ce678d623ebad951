/*-------------------------------------------------------------------------
 *
 * distributed.h
 *	  Distributed mode (a2 on Citus, a2_distribute()): the code paths whose
 *	  single-node form Citus cannot run as one single-shard router query.
 *	  Everything here runs only when a2_distributed() is true; each module
 *	  branches to it in one place.
 *
 *	  Lock order is the single-node one: the session lock (here the row
 *	  lock on a2_session_locks, taken on the node that holds the session),
 *	  then event rows in index order, then snapshot rows.
 *
 * IDENTIFICATION
 *	  src/distributed.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DISTRIBUTED_H
#define A2_DISTRIBUTED_H

#include "utils/jsonb.h"
#include "validate.h"

/*
 * The session lock in distributed mode: FOR UPDATE on the session's
 * a2_session_locks row (created on first use).  Connects SPI itself.
 */
extern void a2_dist_lock_session(const char *session_id);

/*
 * Refuse (0A000) a function that spans sessions in one statement when in
 * distributed mode; returns at once on a single node.
 */
extern void a2_dist_refuse(const char *function, const char *hint);

/*
 * Insert a batch after the session's greatest index, one router statement
 * per event (Citus runs no INSERT with subqueries, nor INSERT ... SELECT
 * from a function scan, on one shard).  blocked[i]: an earlier unsettled
 * event of the batch has event i's lane.  Sets *base (greatest index
 * before), *pending (when need_pending: an unprocessed event existed) and
 * returns the rows written (fewer than count: an id was taken).
 */
extern int64 a2_dist_insert_events(const char *session_id, A2EventInput *events,
								   int count, const bool *blocked, int64 now_ms,
								   bool generated, bool need_pending,
								   int64 *base, bool *pending);

/*
 * a2_presence_set's write in distributed mode: the participant lock (a row
 * lock on a2_presence_locks, like the session lock), then per field one
 * last-writer-wins check and one or two single-row statements.  Deletes
 * first, then sets, as the single-node statements do.
 */
typedef struct A2PresenceFields
{
	int			nset;
	char	  **set_fields;
	Jsonb	  **set_values;
	int			ndel;
	char	  **del_fields;
} A2PresenceFields;

extern void a2_dist_presence_write(const char *ns, const char *participant,
								   const A2PresenceFields *f, int64 at_ms,
								   int64 seen, int64 now_ms, int64 expires_ms);

#endif							/* A2_DISTRIBUTED_H */
