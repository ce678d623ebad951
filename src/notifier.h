/*-------------------------------------------------------------------------
 *
 * notifier.h
 *	  The background notifier: a shared-memory queue of announcements that
 *	  committed transactions owe to LISTEN a2_events, and the worker that
 *	  sends them.  Only available when a2 is in shared_preload_libraries.
 *
 *	  A transaction that added events records, just before it commits or
 *	  prepares, one entry per session: (database, top-level full xid,
 *	  session, greatest new index).  The worker announces an entry once its
 *	  xid is no longer running and committed -- so the events are visible
 *	  to any new snapshot -- and drops it once the xid aborted
 *	  (notifier_xid.h judges).  That one rule covers plain commits, aborts
 *	  after the entry was recorded, and prepared transactions (COMMIT /
 *	  ROLLBACK PREPARED from any backend).  A prepared transaction's entries
 *	  are also written to a durable record (notifier_store.c) and read back
 *	  into the queue after a restart.
 *
 *	  Lock order: the queue's LWLock is taken alone, never while waiting for
 *	  another a2 lock.  Only a2_notify_status() and a2_notify_wait() look at
 *	  xids while holding it (the procarray's and subtrans's locks after
 *	  ours, never the other way round); the worker judges without it.
 *
 * IDENTIFICATION
 *	  src/notifier.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFIER_H
#define A2_NOTIFIER_H

#include "postgres.h"

#include "access/transam.h"
#include "utils/snapshot.h"

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
 * Record n announcements of transaction fxid (all in this database), all
 * or none.  durable: the entries also have a durable record (a prepared
 * transaction's), removed once they are announced or dropped.  Returns
 * false (nothing recorded) when the queue has no room for all of them,
 * or when there is no queue; the caller then falls back.
 */
extern bool a2_notifier_record(FullTransactionId fxid, const A2Announcement *items,
							   int n, bool durable);

/*
 * Ask the worker to read the durable records back (some are not queued);
 * wake: set its latch (the worker itself, retrying later, does not).
 */
extern void a2_notifier_request_load(bool wake);

/* Count one transaction that fell back to an in-transaction NOTIFY. */
extern void a2_notifier_count_fallback(void);

/*
 * Wake the worker if anything is queued.  Cheap and cannot fail: called at
 * the end of every transaction, so a COMMIT PREPARED run by any backend
 * prompts the worker to look again.
 */
extern void a2_notifier_wake(void);

/* Columns 2-10 of a2_notify_status(), filled into values/nulls[0..8]. */
#define A2_NOTIFIER_STATUS_COLUMNS 9
extern void a2_notifier_status_columns(Datum *values, bool *nulls);

/* The worker's entry point (bgw_function_name). */
extern PGDLLEXPORT void a2_notifier_main(Datum main_arg);

/*
 * For the worker (notifier_worker.c).  A pass lists the READY slots and
 * their xids, judges each xid without holding the queue lock, then takes
 * the committed ones (READY -> SENDING, copied out) and frees the aborted
 * ones, sends, and finally releases what it sent.  Only the worker changes
 * a slot once it is recorded, so the slots it listed stay put between the
 * steps.  take and release report the transactions whose last durable
 * entry they freed (at most one per entry): their records can go.
 */
typedef struct A2Taken
{
	int			slot;
	Oid			dboid;
	int64		max_index;
	FullTransactionId fxid;
	bool		durable;
	char	   *session_id;		/* points into the caller's name buffer */
} A2Taken;

/* the outcome of putting a durable record back into the queue */
typedef enum A2Restore
{
	A2_RESTORED = 0,
	A2_RESTORE_ALREADY,			/* its entries are queued already */
	A2_RESTORE_NO_ROOM
} A2Restore;

extern void a2_notifier_attach_worker(void);
extern bool a2_notifier_take_load_request(void);
extern A2Restore a2_notifier_restore(Oid dboid, FullTransactionId fxid,
									 const A2Announcement *items, int n);
extern void a2_notifier_set_disk(const FullTransactionId *fxids, int n);
extern void a2_notifier_count_announced(int64 announced, int64 dropped);
extern int	a2_notifier_list_ready(int *slots, FullTransactionId *fxids, int max,
								   int *cursor);
/* fates[i]: an A2XidFate (notifier_xid.h) */
extern int	a2_notifier_take(const int *slots, const uint8 *fates, int n,
							 A2Taken *out, char *namebuf,
							 FullTransactionId *done, int *ndone);
extern void a2_notifier_release(const A2Taken *taken, int n, int64 announced,
								int64 coalesced, FullTransactionId *done,
								int *ndone);
extern void a2_notifier_unsend(void);

#endif							/* A2_NOTIFIER_H */
