/*-------------------------------------------------------------------------
 *
 * notifier.h
 *	  The background notifier: a shared-memory queue of announcements that
 *	  committed transactions owe to LISTEN a2_events, and the worker that
 *	  sends them.  Only available when a2 is in shared_preload_libraries.
 *
 *	  A transaction that added events records, just before it commits or
 *	  prepares, one entry per session: (database, top-level xid, session,
 *	  greatest new index).  The worker announces an entry once its xid is no
 *	  longer running and committed -- so the events are visible to any new
 *	  snapshot -- and drops it once the xid aborted.  That one rule covers
 *	  plain commits, aborts after the entry was recorded, and prepared
 *	  transactions (COMMIT / ROLLBACK PREPARED from any backend).
 *
 *	  Lock order: the queue's LWLock is taken alone, never while waiting for
 *	  another a2 lock.  Only a2_notify_status() asks the procarray about
 *	  xids while holding it (ProcArrayLock after ours, never the other way
 *	  round); the worker asks without it.
 *
 * IDENTIFICATION
 *	  src/notifier.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFIER_H
#define A2_NOTIFIER_H

#include "postgres.h"

/* One announcement a transaction wants made: session and greatest index. */
typedef struct A2Announcement
{
	const char *session_id;
	int64		max_index;
} A2Announcement;

/* Called from _PG_init: settings, shmem hooks and, when preloading, the worker. */
extern void a2_notifier_init(void);

/* True when the queue exists (a2 was preloaded) in this server. */
extern bool a2_notifier_available(void);

/*
 * Record n announcements for the current top-level transaction, all or
 * none.  Returns false (nothing recorded) when the queue has no room for
 * all of them, or when there is no queue; the caller then falls back.
 */
extern bool a2_notifier_record(const A2Announcement *items, int n);

/* Count one transaction that fell back to an in-transaction NOTIFY. */
extern void a2_notifier_count_fallback(void);

/*
 * Wake the worker if anything is queued.  Cheap and cannot fail: called at
 * the end of every transaction, so a COMMIT PREPARED run by any backend
 * prompts the worker to look again.
 */
extern void a2_notifier_wake(void);

/* The worker's entry point (bgw_function_name). */
extern PGDLLEXPORT void a2_notifier_main(Datum main_arg);

/*
 * For the worker (notifier_worker.c).  A pass lists the READY slots and
 * their xids, asks the procarray and clog about each xid without holding
 * the queue lock, then takes the committed ones (READY -> SENDING, copied
 * out) and frees the aborted ones, sends, and finally releases what it
 * sent.  Only the worker changes a slot once it is recorded, so the slots
 * it listed stay put between the steps.
 */
typedef enum A2XidFate
{
	A2_XID_RUNNING = 0,
	A2_XID_COMMITTED,
	A2_XID_ABORTED
} A2XidFate;

typedef struct A2Taken
{
	int			slot;
	Oid			dboid;
	int64		max_index;
	char	   *session_id;		/* points into the caller's name buffer */
} A2Taken;

extern void a2_notifier_attach_worker(void);
extern int	a2_notifier_list_ready(int *slots, TransactionId *xids, int max,
									int *cursor);
extern int	a2_notifier_take(const int *slots, const uint8 *fates, int n,
							 A2Taken *out, char *namebuf);
extern void a2_notifier_release(const A2Taken *taken, int n, int64 announced,
								int64 coalesced);

#endif							/* A2_NOTIFIER_H */
