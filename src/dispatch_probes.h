/*-------------------------------------------------------------------------
 *
 * dispatch_probes.h
 *	  The index probes of a2_claim_next's walk over queues and priority
 *	  levels (dispatch_walk.c), each one read directly (direct.h) where a
 *	  direct read may stand in for its statement, else its statement
 *	  (dispatch_probes.c).  Levels are COALESCE(priority, 0); queue NULL
 *	  names the default queue.  The walk's probes read the latest
 *	  committed state (a2_exec_latest), the retryAt probes the
 *	  statement's snapshot.
 *
 *	  Locks: a2_events and the index read in ACCESS SHARE mode, as a
 *	  SELECT takes them; nothing else.
 *
 * IDENTIFICATION
 *	  src/dispatch_probes.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DISPATCH_PROBES_H
#define A2_DISPATCH_PROBES_H

#include "postgres.h"

/* above every priority (A2_MAX_PRIORITY): the probe for the top level */
#define A2_TOP_LEVEL 32768

/*
 * The first entry of a level available at now after (*after_at,
 * *after_session) in (available-since, session id) order, leaving out
 * the work of the keys the call holds (limits.h): moves the position to
 * it and sets *key to its concurrency key (or NULL).  plain: the default
 * queue's level 0 (a2_events_default_available); else `level` of
 * `queue` (a2_events_queue_available).
 */
extern bool a2_probe_head(const char *queue, bool plain, int32 level, int64 now_ms,
						  int64 *after_at, char **after_session, char **key);

/*
 * The paused queues a call for every queue leaves out: their text[] (for
 * the statement) and their names (for the direct read), taken apart once
 * per call by a2_paused_names.  "default": the default queue.
 */
typedef struct A2Paused
{
	Datum		array;
	const char *const *names;
	int			n;
} A2Paused;

extern void a2_paused_names(A2Paused *paused, Datum array);

/*
 * A call for every queue (a2_events_level_available): the first entry of
 * `level` of every queue, as a2_probe_head's, the work of the paused
 * queues left out too; and the first entry below level `below` that
 * a2_probe_all_head would not leave out, available now or later: the
 * highest such level (*level) and its oldest entry.
 */
extern bool a2_probe_all_head(int32 level, int64 now_ms, const A2Paused *paused,
							  int64 *after_at, char **after_session, char **key);
extern bool a2_probe_all_first(int32 below, const A2Paused *paused, int32 *level,
							   int64 *at, char **session, char **key);

/* The highest level of the queue's entries in a2_events_queue_available below `below`. */
extern bool a2_probe_level_below(const char *queue, int32 below, int32 *level);

/* The first available-since time after now at `level` of `queue`. */
extern bool a2_probe_retry(const char *queue, int32 level, int64 now_ms, int64 *at);

/* The first available-since time after now in a2_events_queue_available. */
extern bool a2_probe_any_retry(int64 now_ms, int64 *at);

#endif							/* A2_DISPATCH_PROBES_H */
