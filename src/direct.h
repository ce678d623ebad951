/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  Direct writes: a2_events rows written without the executor, the heap
 *	  tuple and its index entries straight from C, as core writes its
 *	  catalogs (docs/internals.md, "Direct writes").
 *
 *	  Offers the writes the single-node layer, a2_claim (and so
 *	  a2_claim_next), a2_complete and a2_fail try before their statements,
 *	  the two index probes of a2_claim_next's walk that lead to those
 *	  claims, the claim's low-water probe, and the a2.direct_writes
 *	  setting.  Each
 *	  writes only where its statement would do nothing more than that row
 *	  and its index entries (direct_shape.h lists what sends a call back to
 *	  its statement); everywhere else it answers false, having written
 *	  nothing, and the statement runs.  So users' triggers, rules,
 *	  policies and privileges keep applying exactly as through the
 *	  statement.
 *
 *	  Locks: those of the statements they stand in for (direct_shape.h),
 *	  after the caller's session lock (layer.h's order); nothing of their
 *	  own.
 *
 * IDENTIFICATION
 *	  src/direct.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DIRECT_H
#define A2_DIRECT_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "storage/itemptr.h"
#include "utils/jsonb.h"

#include "layer.h"
#include "validate.h"

/* From _PG_init: the a2.direct_writes setting. */
extern void a2_direct_init(void);

/*
 * Insert one event of session `session` (a text datum) at the session's
 * next index, as local.c's insert_one_generated statement would (or, when
 * the caller gave its id, not `generated`, insert_one with its ON
 * CONFLICT (event_id) DO NOTHING), and fill `out` as the statement's
 * answer does.  Only for no lane, no pending check asked, a session with
 * a row; a given id only under READ COMMITTED.
 */
extern bool a2_direct_insert_one(Datum session, A2EventInput *ev,
								 int64 now_ms, bool generated,
								 bool need_pending, A2InsertOutcome *out);

/*
 * Event `index` of session `session` (a text datum) as complete.c's and
 * fail.c's lock_event statements read it, with their snapshot (the
 * latest committed state) but without their row lock: the caller holds
 * the session lock, which every a2 writer of the row takes
 * (direct_update.c says what a writer that does not take it changes).
 * 1 found, 0 none, -1 not read: the statement is to run.
 */
typedef struct A2DirectEvent
{
	ItemPointerData tid;		/* the version read */
	bool		processed;
	bool		has_processed_by;
	int32		processed_by;	/* processed_by_attempt, if not null */
	Jsonb	   *returned_ids;	/* returned_event_ids (a copy), or NULL */
	int32		attempt_count;
	bool		held;			/* claim_holder is not null */
	bool		dead_lettered;	/* failed_at is not null */
	bool		has_lane;
	char	   *concurrency_key;	/* or NULL */
	int32		failure_count;
	bool		has_last_failed;
	int32		last_failed_attempt;	/* if not null */
} A2DirectEvent;

extern int	a2_direct_read_event(Datum session, int64 index, A2DirectEvent *ev);

/*
 * Mark event `index` of session `session` (a text datum), row version
 * `tid`, processed by `attempt`, as complete.c's finish_event statement
 * would when the event has no lane and finds no snapshot pin or history
 * row to release.  `locked`: the caller holds the row locked; otherwise
 * `tid` is the version a2_direct_read_event read, and false also says
 * that a writer without the session lock changed the row since, under
 * READ COMMITTED: nothing was written, and the caller locks the row and
 * decides again.
 */
extern bool a2_direct_finish(Datum session, int64 index, ItemPointer tid,
							 bool locked, int64 now_ms, int32 attempt,
							 Jsonb *returned_ids);

/*
 * Whether finish_event's pin release would find a row for event `index`
 * of session `session` (a text datum): a pin of the event, or any
 * snapshot history row of the session (direct_pins.c).  1 some, 0 none,
 * -1 not read: the statement is to run.
 */
extern int	a2_direct_pins_to_release(Datum session, int64 index);

/* What fail.c's record_failure statement writes. */
typedef struct A2DirectFailure
{
	const char *error;			/* NULL: stored as null */
	int64		now_ms;
	int32		attempt;
	bool		dead_letter;
	bool		has_retry_at;	/* a backoff: not_before becomes retry_at */
	int64		retry_at;
} A2DirectFailure;

/*
 * Record a failure of event `index` of session `session`, row version
 * `tid`, as fail.c's record_failure statement would; *available_at: the
 * key the event is available at afterwards (the statement's RETURNING).
 * `locked` as for a2_direct_finish.
 */
extern bool a2_direct_record_failure(Datum session, int64 index, ItemPointer tid,
									 bool locked, const A2DirectFailure *f,
									 int64 *available_at);

/*
 * A claim's direct updates (claim.c): a2_events opened before the claim's
 * locking SELECT runs, NULL when the claim statement is to run instead;
 * then each row the SELECT locked, version `tid` of event `index`, gets
 * the claim's values (attempt_count, first_claimed_at, last_claimed_at,
 * claim_holder, claim_expires_at), and its new version is returned as a
 * row of A2_EVENT_COLUMNS (the claim statement's answer), formed with
 * `answer` (a2_direct_claim_answer_desc: a copy in the current memory
 * context).
 */
typedef struct A2DirectClaim A2DirectClaim;

extern A2DirectClaim *a2_direct_claim_begin(void);
extern TupleDesc a2_direct_claim_answer_desc(void);
extern HeapTuple a2_direct_claim_row(A2DirectClaim *dc, Datum session, int64 index,
									 ItemPointer tid, Datum attempt_count,
									 Datum first_claimed_at, Datum last_claimed_at,
									 Datum claim_holder, Datum claim_expires_at,
									 TupleDesc answer);
extern void a2_direct_claim_end(A2DirectClaim *dc);

/*
 * a2_claim_next's probes of a2_events_default_available (local.c's
 * next_candidate and next_after_now statements), read directly
 * (direct_walk.c): 1 found, 0 none, -1 the statement is to run.
 * next_available moves (*after_at, *after_session) to the entry found
 * and, key not NULL, sets *key to its event's concurrency key (or NULL);
 * skip_held: leaving out the events of the keys the call holds
 * (limits.h), as dispatch_probes.c's plain_next statement does.
 */
extern int	a2_direct_next_available(int64 now_ms, int64 *after_at,
									 char **after_session, char **key,
									 bool skip_held);
extern int	a2_direct_next_retry_at(int64 now_ms, int64 *at);

/*
 * a2_claim_next's probes of a2_events_queue_available and
 * a2_events_queue_retry (dispatch_probes.c's statements), read directly
 * (direct_queue_walk.c): 1 found, 0 none, -1 the statement is to run.
 * queue NULL: the default queue.  queue_next, as next_available with
 * skip_held, at one level of one queue; queue_level, the highest level
 * below `below`; queue_retry, the first available-since time after now
 * at one level; queue_any_retry, the first
 * available-since time after now of every queue and level.
 */
extern int	a2_direct_queue_next(const char *queue, int32 level, int64 now_ms,
								 int64 *after_at, char **after_session, char **key);
extern int	a2_direct_queue_level(const char *queue, int32 below, int32 *level);
extern int	a2_direct_queue_retry(const char *queue, int32 level, int64 now_ms,
								  int64 *at);
extern int	a2_direct_queue_any_retry(int64 now_ms, int64 *at);

/*
 * The same for a call for every queue, over a2_events_level_available
 * (all queues' entries led by the level, highest first): level_next, as
 * queue_next at one level of every queue, the work of the `paused` queues
 * ("default": the default queue) left out too; level_first, the first
 * entry below level `below` that level_next would not leave out (the
 * highest such level's oldest entry, available now or later), with its
 * level.
 */
extern int	a2_direct_level_next(int32 level, int64 now_ms, const char *const *paused,
								 int npaused, int64 *after_at, char **after_session,
								 char **key);
extern int	a2_direct_level_first(int32 below, const char *const *paused, int npaused,
								  int32 *level, int64 *at, char **session, char **key);

/*
 * A key decision's count (limits.c's key_leases statement), read directly
 * in a2_events_key_leases: *leased, the key's leases that expire after
 * now; *first_expiry, the earliest of them (set only when there is one).
 * 1 or 0: read (some, none); -1: the statement is to run.
 */
extern int	a2_direct_key_leases(const char *key, int64 now_ms, int64 *leased,
								 int64 *first_expiry);

/*
 * The a2_limits row of `key` (limits.c's key_limits statement), read
 * directly (direct_limits.c), a null limit as -1 and a null window as 0:
 * 1 found, 0 none, -1 the statement is to run.
 */
extern int	a2_direct_key_limits(const char *key, int32 *max_leased, int32 *rate_max,
								 int64 *per_ms);

/*
 * The claim's low-water probe of session `session` (a text datum) from
 * index `from` (claim.c's low_water statement), read directly
 * (direct_lowwater.c): 1, the session has events: *anchor set, and
 * *have_first and *first the least index of an unprocessed event at or
 * above `from`; 0, it has none; -1, the statement is to run.
 */
extern int	a2_direct_low_water(Datum session, int64 from, uint64 *anchor,
								int64 *first, bool *have_first);

#endif							/* A2_DIRECT_H */
