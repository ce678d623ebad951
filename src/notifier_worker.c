/*-------------------------------------------------------------------------
 *
 * notifier_worker.c
 *	  The background worker that announces committed appends.
 *
 *	  One worker serves every database of the cluster.  A pass reads
 *	  durable records back into the queue when asked to (after a start, or
 *	  when a PREPARE found no room), lists the queue's READY entries, takes
 *	  one fresh snapshot and judges each entry's transaction by it
 *	  (notifier_xid.c: still running: leave it; committed, or so old that
 *	  clog forgot: take it; aborted: drop it), sorts what it took by
 *	  (database, session), keeps the greatest index per session (the others
 *	  are counted as coalesced), and sends one transaction of NOTIFY
 *	  a2_events per database.  A database's entries are freed as soon as its
 *	  transaction committed, and the durable records of prepared
 *	  transactions whose entries are all done are removed after that; so a
 *	  worker that fails or dies before announces them again (a listener may
 *	  hear one twice, never miss one).
 *
 *	  NOTIFY is database-local: PostgreSQL stamps every queued notification
 *	  with MyDatabaseId and signals the listeners of that database.  The
 *	  worker is connected to no database (so it never holds one open
 *	  against DROP DATABASE) and sets MyDatabaseId to the target database
 *	  for the length of each sending transaction, which touches no
 *	  relation, only the notification queue.
 *
 *	  Errors: like PostgreSQL's own long-lived processes, the worker
 *	  catches an ERROR at the top of its loop (sigsetjmp), aborts the
 *	  transaction it was in, logs it, puts the entries it was sending back
 *	  to READY and waits before trying again: 1 s after the first failure,
 *	  doubling up to 30 s while the failures go on, so a lasting condition
 *	  (PostgreSQL's notification queue full because a listener stopped
 *	  reading) costs a few log lines per wait, not a restart loop; before
 *	  each retry it lets PostgreSQL drop queue pages nobody needs.  Signals:
 *	  SIGTERM ends the worker (the postmaster starts a new one 1 s later);
 *	  SIGINT (pg_cancel_backend) cancels a pass that is waiting, as an
 *	  ERROR, and is ignored while idle; SIGHUP reloads the configuration.
 *
 * IDENTIFICATION
 *	  src/notifier_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>

#include "access/transam.h"
#include "access/xact.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "notifier.h"
#include "notifier_store.h"
#include "notifier_xid.h"
#include "notify.h"

/* entries handled per pass; a longer queue takes several passes */
#define A2_PASS_MAX		1024
/* how often to look again while entries wait for running transactions */
#define A2_POLL_MS		1000L
/* how often, at most, to read records kept on disk again */
#define A2_DISK_RESCAN_MS	100
/* how long to gather announcements after a pass that sent some */
#define A2_GATHER_MS	1L
/* the wait after a failed pass: doubles from MIN to MAX */
#define A2_RETRY_MIN_MS	1000L
#define A2_RETRY_MAX_MS	30000L

typedef struct PassState
{
	int			slots[A2_PASS_MAX];
	FullTransactionId fxids[A2_PASS_MAX];
	uint8		fates[A2_PASS_MAX];
	A2Taken		taken[A2_PASS_MAX];
	FullTransactionId done[A2_PASS_MAX];	/* records that can go */
	int			ndone;
	char	   *names;			/* A2_PASS_MAX names of A2_MAX_NAME_BYTES + 1 */
	int			cursor;			/* where the next listing starts in the queue */
	uint64		passes_sent;	/* passes that sent something, ever */
	bool		loading;		/* reading the records back (an ERROR asks again) */
	bool		disk_pending;	/* records kept on disk wait for prepared xacts */
	TimestampTz last_load;		/* when the records were last read */
	MemoryContext load_cxt;		/* what one read of the records keeps */
} PassState;

/* a record the queue had no room for, judged straight from its file */
typedef struct DiskRecord
{
	FullTransactionId fxid;
	Oid			dboid;
	int			n;
	A2Taken    *taken;			/* its items, to send */
} DiskRecord;

/* what reading the records back found */
typedef struct LoadState
{
	int			records;
	int			entries;
	Snapshot	snap;
	FullTransactionId next;
	MemoryContext cxt;
	List	   *to_send;		/* DiskRecords whose transaction committed */
	List	   *to_drop;		/* DiskRecords whose transaction aborted */
	FullTransactionId *running; /* disk-only records still prepared */
	int			nrunning;
	int			maxrunning;
} LoadState;

static int
taken_cmp(const void *a, const void *b)
{
	const A2Taken *x = a;
	const A2Taken *y = b;
	int			c;

	if (x->dboid != y->dboid)
		return x->dboid < y->dboid ? -1 : 1;
	c = strcmp(x->session_id, y->session_id);
	if (c != 0)
		return c;
	/* greatest index first within a session */
	if (x->max_index != y->max_index)
		return x->max_index > y->max_index ? -1 : 1;
	return 0;
}

/* Remove the records whose entries are all announced or dropped. */
static void
remove_done(PassState *ps)
{
	int			i;

	for (i = 0; i < ps->ndone; i++)
		a2_store_remove(ps->done[i]);
	ps->ndone = 0;
}

/*
 * Copy a record the queue cannot take into ls->cxt, to send or drop: the
 * scan's transaction, and its memory, end before they are.
 */
static DiskRecord *
keep_record(LoadState *ls, FullTransactionId fxid, Oid dboid,
			const A2Announcement *items, int n)
{
	MemoryContext old = MemoryContextSwitchTo(ls->cxt);
	DiskRecord *r = palloc(sizeof(DiskRecord));

	r->fxid = fxid;
	r->dboid = dboid;
	r->n = n;
	r->taken = palloc0(sizeof(A2Taken) * n);
	for (int i = 0; i < n; i++)
	{
		r->taken[i].slot = -1;
		r->taken[i].dboid = dboid;
		r->taken[i].max_index = items[i].max_index;
		r->taken[i].fxid = fxid;
		r->taken[i].durable = true;
		r->taken[i].session_id = pstrdup(items[i].session_id);
	}
	MemoryContextSwitchTo(old);
	return r;
}

/*
 * A record the queue has no room for -- for now, or ever, when it names
 * more sessions than the queue has slots -- is judged straight from its
 * file, as a queued entry would be: still prepared, it stays on disk and
 * is looked at again on every pass; committed, it is announced from the
 * file; aborted, it is dropped.  The scan goes on either way, so one such
 * record never hides the records after it.
 */
static bool
restore_record(FullTransactionId fxid, Oid dboid, const A2Announcement *items,
			   int n, void *arg)
{
	LoadState  *ls = arg;

	switch (a2_notifier_restore(dboid, fxid, items, n))
	{
		case A2_RESTORED:
			ls->records++;
			ls->entries += n;
			break;
		case A2_RESTORE_ALREADY:
			break;
		case A2_RESTORE_NO_ROOM:
			switch (a2_xid_fate(fxid, ls->snap, ls->next))
			{
				case A2_XID_RUNNING:
					if (ls->nrunning == ls->maxrunning)
					{
						ls->maxrunning = Max(16, ls->maxrunning * 2);
						ls->running = ls->running == NULL ?
							MemoryContextAlloc(ls->cxt, sizeof(FullTransactionId) * ls->maxrunning) :
							repalloc(ls->running, sizeof(FullTransactionId) * ls->maxrunning);
					}
					ls->running[ls->nrunning++] = fxid;
					break;
				case A2_XID_COMMITTED:
				case A2_XID_FORGOTTEN:
					{
						DiskRecord *r = keep_record(ls, fxid, dboid, items, n);
						MemoryContext old = MemoryContextSwitchTo(ls->cxt);

						ls->to_send = lappend(ls->to_send, r);
						MemoryContextSwitchTo(old);
					}
					break;
				case A2_XID_ABORTED:
				case A2_XID_FUTURE:
					{
						DiskRecord *r = keep_record(ls, fxid, dboid, NULL, 0);
						MemoryContext old = MemoryContextSwitchTo(ls->cxt);

						ls->to_drop = lappend(ls->to_drop, r);
						MemoryContextSwitchTo(old);
					}
					break;
			}
			break;
	}
	return true;
}

static int64 send_database(A2Taken *taken, int from, int to);
static int	taken_cmp(const void *a, const void *b);

/*
 * Read the durable records back into the queue, and settle those it has
 * no room for straight from their files.  Returns true when some records
 * stay on disk waiting for their prepared transactions (they are read
 * again on every pass until they are settled).
 */
static bool
load_records(PassState *ps)
{
	LoadState	ls = {0};
	ListCell   *lc;
	int64		announced = 0;
	int64		dropped = 0;

	MemoryContextReset(ps->load_cxt);
	ls.cxt = ps->load_cxt;
	StartTransactionCommand();
	ls.snap = GetLatestSnapshot();
	ls.next = ReadNextFullTransactionId();
	(void) a2_store_scan(restore_record, &ls, ls.snap, ls.next);
	CommitTransactionCommand();
	if (ls.records > 0)
		ereport(LOG,
				(errmsg_plural("a2 notifier: read the record of %d prepared transaction back from \"%s\"",
							   "a2 notifier: read the records of %d prepared transactions back from \"%s\"",
							   ls.records, ls.records, A2_STORE_DIR),
				 errdetail_plural("They hold %d announcement.", "They hold %d announcements.",
								  ls.entries, ls.entries)));

	/* committed: announce, then remove the record (a crash between: twice) */
	foreach(lc, ls.to_send)
	{
		DiskRecord *r = lfirst(lc);

		qsort(r->taken, r->n, sizeof(A2Taken), taken_cmp);
		announced += send_database(r->taken, 0, r->n);
		a2_store_remove(r->fxid);
		ereport(LOG,
				(errmsg_plural("a2 notifier: announced %d session of prepared transaction %llu straight from its record",
							   "a2 notifier: announced %d sessions of prepared transaction %llu straight from its record",
							   r->n, r->n, (unsigned long long) U64FromFullTransactionId(r->fxid)),
				 errdetail("The notifier's queue had no room for the transaction's announcements.")));
	}
	foreach(lc, ls.to_drop)
	{
		DiskRecord *r = lfirst(lc);

		a2_store_remove(r->fxid);
		dropped++;
	}
	if (announced > 0 || dropped > 0)
		a2_notifier_count_announced(announced, dropped);
	a2_notifier_set_disk(ls.running, ls.nrunning);
	ps->disk_pending = ls.nrunning > 0;
	MemoryContextReset(ps->load_cxt);
	return ps->disk_pending;
}

/*
 * Send taken[from..to) -- one database, sorted -- in one transaction.
 * Returns the number of notifications sent.
 */
static int64
send_database(A2Taken *taken, int from, int to)
{
	Oid			dboid = taken[from].dboid;
	int64		sent = 0;
	StringInfoData payload;
	int			i;

	MyDatabaseId = dboid;
	StartTransactionCommand();
	/* in the transaction's memory: freed at commit or abort */
	initStringInfo(&payload);
	for (i = from; i < to; i++)
	{
		/* sorted greatest first: only a session's first entry is sent */
		if (i > from && strcmp(taken[i].session_id, taken[i - 1].session_id) == 0)
			continue;
		resetStringInfo(&payload);
		a2_notify_payload(&payload, taken[i].session_id, taken[i].max_index);
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
		sent++;
	}
	CommitTransactionCommand();
	MyDatabaseId = InvalidOid;
	ereport(DEBUG1,
			(errmsg_internal("a2 notifier: announced " INT64_FORMAT " session(s) in database %u",
							 sent, dboid)));
	return sent;
}

/*
 * One pass over the queue.  Returns true when entries are left waiting
 * for running transactions (or records for room), false when the queue
 * held nothing to wait for.  *more is set when the pass was full and the
 * queue may hold more.
 */
static bool
run_pass(PassState *ps, bool *more)
{
	bool		waiting = false;
	int			n;
	int			ntaken;
	int			nforgotten = 0;
	Snapshot	snap;
	FullTransactionId next;
	int			i;
	int			from;

	*more = false;
	/*
	 * Asked to, or records kept on disk (a COMMIT PREPARED may have settled
	 * them: every commit wakes us then, so look at most every
	 * A2_DISK_RESCAN_MS).
	 */
	if (a2_notifier_take_load_request() ||
		(ps->disk_pending &&
		 TimestampDifferenceExceeds(ps->last_load, GetCurrentTimestamp(), A2_DISK_RESCAN_MS)))
	{
		ps->last_load = GetCurrentTimestamp();
		ps->loading = true;
		waiting = load_records(ps);
		ps->loading = false;
	}

	n = a2_notifier_list_ready(ps->slots, ps->fxids, A2_PASS_MAX, &ps->cursor);
	if (n == 0)
		return waiting;

	/* one fresh snapshot per pass, as async.c's reader takes */
	StartTransactionCommand();
	snap = GetLatestSnapshot();
	next = ReadNextFullTransactionId();
	for (i = 0; i < n; i++)
	{
		ps->fates[i] = a2_xid_fate(ps->fxids[i], snap, next);
		if (ps->fates[i] == A2_XID_RUNNING)
			waiting = true;
		else if (ps->fates[i] == A2_XID_FORGOTTEN)
			nforgotten++;
	}
	CommitTransactionCommand();
	if (nforgotten > 0)
		ereport(LOG,
				(errmsg_plural("a2 notifier: announcing %d entry whose transaction ended before clog's horizon",
							   "a2 notifier: announcing %d entries whose transactions ended before clog's horizon",
							   nforgotten, nforgotten),
				 errdetail("Their transactions may have committed or aborted; a listener may hear such an announcement for events it already read.")));

	ps->ndone = 0;
	ntaken = a2_notifier_take(ps->slots, ps->fates, n, ps->taken, ps->names,
							  ps->done, &ps->ndone);
	remove_done(ps);
	if (ntaken > 0)
	{
		qsort(ps->taken, ntaken, sizeof(A2Taken), taken_cmp);
		from = 0;
		for (i = 1; i <= ntaken; i++)
		{
			if (i == ntaken || ps->taken[i].dboid != ps->taken[from].dboid)
			{
				int64		sent = send_database(ps->taken, from, i);

				/* committed: free them now, so a later failure cannot resend them */
				a2_notifier_release(ps->taken + from, i - from, sent, (i - from) - sent,
									ps->done, &ps->ndone);
				remove_done(ps);
				from = i;
			}
		}
		pgstat_report_stat(false);
		ps->passes_sent++;
		/* a full pass that made progress: the queue may hold more now */
		*more = (n == A2_PASS_MAX);
	}
	return waiting;
}

/*
 * Interrupts outside a pass: SIGTERM ends us, SIGHUP reloads the
 * configuration, and a cancel has nothing to cancel.
 */
static void
idle_interrupts(void)
{
	QueryCancelPending = false;
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/*
 * Let PostgreSQL drop notification-queue pages no listener needs any
 * more.  It does so when a NOTIFY commit crosses a page boundary, or when
 * pg_notification_queue_usage() is called: after the queue ran full, no
 * NOTIFY can commit, so without the call a queue whose laggard listener
 * has since gone stays full.  Called before each retry.
 */
static void
advance_notify_tail(void)
{
	double		usage = DatumGetFloat8(OidFunctionCall0(F_PG_NOTIFICATION_QUEUE_USAGE));

	if (usage >= 0.5)
		ereport(LOG,
				(errmsg("a2 notifier: PostgreSQL's notification queue is %.0f%% full", usage * 100),
				 errhint("A session that LISTENs and does not read (idle in transaction, or a slow client) holds it; pg_notification_queue_usage() shows the fill.")));
}

/* Wait ms after a failed pass; commits that wake us do not shorten it. */
static void
retry_wait(long ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	for (;;)
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);

		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		idle_interrupts();
	}
}

void
a2_notifier_main(Datum main_arg)
{
	sigjmp_buf	local_sigjmp_buf;
	PassState  *ps;
	volatile int failures = 0;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, StatementCancelHandler);
	BackgroundWorkerUnblockSignals();

	/* no database: we never keep one open, and we serve them all */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("a2 notifier");

	/*
	 * Our transactions write nothing but the notification queue, which a
	 * crash empties anyway (and disconnects every listener): there is no
	 * reason for them to wait for a WAL flush.  They read nothing either,
	 * and need no stricter isolation than the snapshot a pass takes.
	 */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	/* outside transactions the worker allocates nothing else */
	ps = MemoryContextAllocZero(TopMemoryContext, sizeof(PassState));
	ps->names = MemoryContextAlloc(TopMemoryContext,
								   (Size) A2_PASS_MAX * (A2_MAX_NAME_BYTES + 1));
	/* ALLOCSET_DEFAULT_SIZES, spelled out (its int products trip clang-tidy) */
	ps->load_cxt = AllocSetContextCreate(TopMemoryContext, "a2 notifier records",
										 (Size) 0, (Size) 8192, (Size) 8388608);
	a2_notifier_attach_worker();

	/*
	 * An ERROR anywhere below lands here (as in PostgreSQL's autovacuum
	 * launcher): report it, abort the transaction we were in, release what
	 * a transaction would not, make the entries we were sending owed again,
	 * and wait before the next try.
	 */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		long		wait_ms;

		error_context_stack = NULL;
		HOLD_INTERRUPTS();
		disable_all_timeouts(false);
		QueryCancelPending = false;
		EmitErrorReport();
		AbortCurrentTransaction();
		LWLockReleaseAll();
		pgstat_report_wait_end();
		MyDatabaseId = InvalidOid;
		MemoryContextSwitchTo(TopMemoryContext);
		FlushErrorState();
		a2_notifier_unsend();
		ps->ndone = 0;
		/* a read of the records that failed is tried again */
		if (ps->loading)
			a2_notifier_request_load(false);
		ps->loading = false;
		RESUME_INTERRUPTS();

		failures++;
		wait_ms = A2_RETRY_MIN_MS << Min(failures - 1, 5);
		wait_ms = Min(wait_ms, A2_RETRY_MAX_MS);
		ereport(LOG,
				(errmsg("a2 notifier: pass failed, trying again in %ld ms", wait_ms),
				 errdetail_plural("%d consecutive failure; the entries it was sending are kept.",
								  "%d consecutive failures; the entries it was sending are kept.",
								  failures, failures)));
		pgstat_report_activity(STATE_IDLE, NULL);
		retry_wait(wait_ms);
		advance_notify_tail();
	}
	PG_exception_stack = &local_sigjmp_buf;

	for (;;)
	{
		bool		waiting;
		bool		more;
		long		timeout;
		uint64		sent_before;

		ResetLatch(MyLatch);
		idle_interrupts();

		pgstat_report_activity(STATE_RUNNING, NULL);
		sent_before = ps->passes_sent;
		do
		{
			waiting = run_pass(ps, &more);
			idle_interrupts();
		} while (more);
		pgstat_report_activity(STATE_IDLE, NULL);
		failures = 0;

		/*
		 * After a pass that sent something, gather for a moment before the
		 * next one: under load the commits of that moment then share one
		 * notifier transaction instead of costing one each (each of ours
		 * takes an xid and a commit record of its own).  An idle queue
		 * still gets its first announcement out at once.
		 */
		if (ps->passes_sent != sent_before)
			(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 A2_GATHER_MS, PG_WAIT_EXTENSION);

		timeout = waiting ? A2_POLL_MS : -1L;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout >= 0 ? WL_TIMEOUT : 0),
						 timeout, PG_WAIT_EXTENSION);
	}
}
