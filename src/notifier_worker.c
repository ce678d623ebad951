/*-------------------------------------------------------------------------
 *
 * notifier_worker.c
 *	  The background worker that announces committed appends.
 *
 *	  One worker serves every database of the cluster.  A pass lists the
 *	  queue's READY entries, asks about each one's xid (still running:
 *	  leave it; committed: take it; aborted: drop it), sorts what it took by
 *	  (database, session), keeps the greatest index per session (the others
 *	  are counted as coalesced), and sends one transaction of NOTIFY
 *	  a2_events per database.  Only then are the entries freed, so a worker
 *	  that dies in between announces them again after its restart.
 *
 *	  NOTIFY is database-local: PostgreSQL stamps every queued notification
 *	  with MyDatabaseId and signals the listeners of that database.  The
 *	  worker is connected to no database (so it never holds one open
 *	  against DROP DATABASE) and sets MyDatabaseId to the target database
 *	  for the length of each sending transaction, which touches no
 *	  relation, only the notification queue.
 *
 *	  "Committed and no longer running" is what makes the events visible:
 *	  a transaction leaves the procarray only after its commit is recorded,
 *	  and a snapshot taken after that sees it.  A prepared transaction is
 *	  running until COMMIT PREPARED or ROLLBACK PREPARED, whichever backend
 *	  runs it; every backend's end of transaction wakes the worker while
 *	  anything is queued, and the worker looks again every second anyway.
 *
 * IDENTIFICATION
 *	  src/notifier_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/ps_status.h"

#include "a2.h"
#include "notifier.h"
#include "notify.h"

/* entries handled per pass; a longer queue takes several passes */
#define A2_PASS_MAX		1024
/* how often to look again while entries wait for running transactions */
#define A2_POLL_MS		1000L
/* how long to gather announcements after a pass that sent some */
#define A2_GATHER_MS	1L

typedef struct PassState
{
	int			slots[A2_PASS_MAX];
	TransactionId xids[A2_PASS_MAX];
	uint8		fates[A2_PASS_MAX];
	A2Taken		taken[A2_PASS_MAX];
	char	   *names;			/* A2_PASS_MAX names of A2_MAX_NAME_BYTES + 1 */
	int			cursor;			/* where the next listing starts in the queue */
	uint64		passes_sent;	/* passes that sent something, ever */
} PassState;

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

	initStringInfo(&payload);
	MyDatabaseId = dboid;
	StartTransactionCommand();
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
	pfree(payload.data);
	return sent;
}

/*
 * One pass over the queue.  Returns true when entries are left waiting
 * for running transactions, false when the queue held nothing to wait for.
 * *more is set when the pass was full and the queue may hold more.
 */
static bool
run_pass(PassState *ps, bool *more)
{
	int			n;
	int			ntaken;
	int			nwaiting = 0;
	int64		sent = 0;
	int			i;
	int			from;

	n = a2_notifier_list_ready(ps->slots, ps->xids, A2_PASS_MAX, &ps->cursor);
	*more = false;
	if (n == 0)
		return false;

	for (i = 0; i < n; i++)
	{
		TransactionId xid = ps->xids[i];

		/* the procarray first: clog says committed a moment before that */
		if (TransactionIdIsInProgress(xid))
		{
			ps->fates[i] = A2_XID_RUNNING;
			nwaiting++;
		}
		else if (TransactionIdDidCommit(xid))
			ps->fates[i] = A2_XID_COMMITTED;
		else
			ps->fates[i] = A2_XID_ABORTED;
	}

	ntaken = a2_notifier_take(ps->slots, ps->fates, n, ps->taken, ps->names);
	if (ntaken > 0)
	{
		qsort(ps->taken, ntaken, sizeof(A2Taken), taken_cmp);
		from = 0;
		for (i = 1; i <= ntaken; i++)
		{
			if (i == ntaken || ps->taken[i].dboid != ps->taken[from].dboid)
			{
				sent += send_database(ps->taken, from, i);
				from = i;
			}
		}
		a2_notifier_release(ps->taken, ntaken, sent, ntaken - sent);
		pgstat_report_stat(false);
		ps->passes_sent++;
		/* a full pass that made progress: the queue may hold more now */
		*more = (n == A2_PASS_MAX);
	}
	return nwaiting > 0;
}

void
a2_notifier_main(Datum main_arg)
{
	PassState  *ps;

	/* SIGTERM (shutdown, pg_terminate_backend) ends us; the postmaster restarts us */
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* no database: we never keep one open, and we serve them all */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("a2 notifier");

	/*
	 * Our transactions write nothing but the notification queue, which a
	 * crash empties anyway (and disconnects every listener): there is no
	 * reason for them to wait for a WAL flush.
	 */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	ps = MemoryContextAllocZero(TopMemoryContext, sizeof(PassState));
	ps->names = MemoryContextAlloc(TopMemoryContext,
								   (Size) A2_PASS_MAX * (A2_MAX_NAME_BYTES + 1));
	a2_notifier_attach_worker();

	for (;;)
	{
		bool		waiting;
		bool		more;
		long		timeout;
		uint64		sent_before;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		pgstat_report_activity(STATE_RUNNING, NULL);
		sent_before = ps->passes_sent;
		do
		{
			waiting = run_pass(ps, &more);
			CHECK_FOR_INTERRUPTS();
		} while (more);
		pgstat_report_activity(STATE_IDLE, NULL);

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
