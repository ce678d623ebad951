/*-------------------------------------------------------------------------
 *
 * layer.h
 *	  The storage layer every operation runs on: how it locks a session or
 *	  a presence participant, how it inserts a batch of events and writes
 *	  presence, and where a2_claim_next looks for work.  There are two:
 *
 *	    local.c        one PostgreSQL server: transaction advisory locks and
 *	                   set-based statements (one INSERT ... SELECT for a
 *	                   batch).
 *	    citus/         Citus (after a2_distribute()): row locks on
 *	                   a2_session_locks / a2_presence_locks on the node
 *	                   that holds the shard; on that node the session's
 *	                   statements run on the shard tables
 *	                   (citus/citus_shards.h), elsewhere one single-shard
 *	                   router statement per row; work discovery over the
 *	                   node's own shards.
 *
 *	  a2_layer() picks one when extension.c reads the extension (after
 *	  every relcache invalidation of a2_events, so a2_distribute() switches
 *	  it), together with the statement texts' mode (statements.h): the
 *	  operations (append.c, claim_next.c, presence.c, ...) call through it
 *	  and never ask which mode they are in.  Dependencies point one way:
 *	  operations -> layer.h -> local.c / citus/citus_layer.c (->
 *	  citus/citus_pin.c) -> statements.c (-> citus/citus_shards.c),
 *	  session.c; neither layer calls an operation file.
 *
 *	  Lock order (docs/semantics.md, "Locking"), the same in both layers: the session lock
 *	  first, then event rows in index order, then snapshot rows; presence
 *	  writers take the participant lock only.  The try forms never wait for
 *	  another call (the Citus layer's may wait while a shard move switches
 *	  the session's shard, as every Citus write does).
 *
 * IDENTIFICATION
 *	  src/layer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_LAYER_H
#define A2_LAYER_H

#include "utils/jsonb.h"
#include "validate.h"

/* What inserting a batch reports. */
typedef struct A2InsertOutcome
{
	int64		base;			/* greatest index before the batch */
	bool		pending;		/* the session had an unprocessed event */
	int64		inserted;		/* rows written (fewer: an id was taken) */
	bool		waiting;		/* the session may have had a waiting event */
} A2InsertOutcome;

/* One a2_presence_set call, validated. */
typedef struct A2PresenceWrite
{
	char	   *ns;
	char	   *participant;
	int64		at_ms;
	int64		seen;
	int64		now_ms;
	int64		expires_ms;
	int			nset;
	char	  **set_fields;
	Jsonb	  **set_values;
	int			ndel;
	char	  **del_fields;
} A2PresenceWrite;

/* a2_read_state(s)'s requests: session, through and snapshot-through each */
typedef struct A2StateRequests
{
	int			count;
	char	  **sessions;
	int64	   *through;
	int64	   *snap_through;
	bool	   *through_null;
	bool	   *snap_null;
} A2StateRequests;

/* receives each result of read_states: its rows are in SPI_tuptable */
typedef void (*A2RowsCallback) (uint64 nrows, void *arg);

typedef struct A2Layer
{
	const char *name;

	/* The session lock, held to the end of the transaction. */
	void		(*lock_session) (const char *session_id);
	bool		(*try_lock_session) (const char *session_id);

	/* The presence participant lock, held to the end of the transaction. */
	void		(*lock_participant) (const char *ns, const char *participant);
	bool		(*try_lock_participant) (const char *ns, const char *participant);

	/*
	 * Insert a validated batch (ids filled in) after the session's greatest
	 * index, under the session lock, inside a2_call_begin/end.  `generated`:
	 * every id was generated here.  Lane readiness per docs/semantics.md, "Lanes".
	 */
	void		(*insert_events) (const char *session_id, A2EventInput *events,
								  int count, int64 now_ms, bool generated,
								  bool need_pending, A2InsertOutcome *out);

	/* a2_presence_set's write, participant lock included; connects SPI. */
	void		(*presence_write) (const A2PresenceWrite *w);

	/*
	 * a2_put_snapshots under the session lock: pin events pins[0..n) for
	 * the snapshot of `reducer` at `index`; copy the reducer's head row to
	 * the history.
	 */
	void		(*insert_pins) (const char *session_id, const char *reducer,
								int64 index, const int64 *pins, int n);
	void		(*head_to_history) (const char *session_id, const char *reducer);

	/*
	 * a2_read_state(s): the rows of state.c's layout for the requests, in
	 * request order, handed to `emit` (once, or once per request).
	 */
	void		(*read_states) (const A2StateRequests *req, const char *reducer,
								A2RowsCallback emit, void *arg);

	/*
	 * a2_claim_next's walk: the first entry of a2_events_default_available that is
	 * available at now_ms after (*after_at, *after_session), oldest first;
	 * moves the position there.  False when there is none.
	 */
	bool		(*next_available) (int64 now_ms, int64 *after_at,
								   char **after_session);

	/* The first available-since time after now_ms (retryAt); false: none. */
	bool		(*next_retry_at) (int64 now_ms, int64 *at);
} A2Layer;

/*
 * The predicate and key of a2_events_default_available, as statement text over
 * alias e (both layers walk it): since 0.3.0 (src/sql/upgrade/a2--0.2.0--0.3.0.sql) the
 * key of a never-claimed or failed event is when it falls due,
 * greatest(not_before, created_at) -- GREATEST skips a NULL not_before --
 * so scheduled work waits at the index's far end and a walk that stops at
 * now never reads it; objects older than 0.3.0 have 0.2.0's key
 * (A2_AVAILABLE_KEY_0_1).  a2_available_key() is the one for the installed
 * objects, for statement text built at run time.
 */
#define A2_AVAILABLE_PRED \
	"e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL"
#define A2_AVAILABLE_KEY \
	"COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at))"
#define A2_AVAILABLE_KEY_0_1 "COALESCE(e.claim_expires_at, e.created_at)"

/*
 * Since 0.4.0 a2_events_default_available holds the default queue's priority-0
 * work only (this conjunct, added to A2_AVAILABLE_PRED); the rest is in
 * a2_events_queue_available, led by queue and priority (dispatch_walk.h).
 */
#define A2_AVAILABLE_PLAIN " AND e.queue IS NULL AND e.priority IS NULL"

extern const char *a2_available_key(void);

extern const A2Layer a2_local_layer;
extern const A2Layer a2_dist_layer;

/* The layer for the current database, chosen with the statements. */
extern const A2Layer *a2_layer(void);

#endif							/* A2_LAYER_H */
