/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  Announcements of scheduled events when they fall due (docs/semantics.md, "Scheduling").
 *
 *	  Where due times live: in a2_events.not_before, nowhere else.  The
 *	  table is the only durable record, so a restart of any worker or of
 *	  the server rebuilds everything by reading it: each database's
 *	  scheduler asks the partial index a2_events_due (not_before of
 *	  unprocessed, live events) for what fell due since it last looked and
 *	  for the next due time, and sleeps until then.  An event completed,
 *	  dead-lettered or dropped before its time has left that index, so it
 *	  is never announced.
 *
 *	  The processes: the launcher, a static background worker connected to
 *	  no database, and one dynamic "a2 scheduler" worker per database with
 *	  scheduled work.  At start-up the launcher asks for a scheduler in
 *	  every database that allows connections (so a restarted server finds
 *	  work scheduled before it stopped); a scheduler that finds no a2, or
 *	  nothing scheduled, exits again.  A transaction that writes a future
 *	  not_before marks its database "wanted" at pre-commit and, at commit,
 *	  sets the latch of that database's scheduler (or of the launcher, which
 *	  then starts one).  The scheduler re-reads the table after every wake,
 *	  so a wake only has to come after the commit, never carry data.
 *
 *	  What it costs per append: nothing for an event without a future
 *	  notBefore; for one with it, an entry in the partial index and, per
 *	  committing transaction, one short exclusive LWLock and a SetLatch.
 *	  A scheduler pass is two index probes plus one row per due event.
 *
 *	  When: the wall clock (a2.now does not drive this).  A scheduler sleeps
 *	  until the next due time and announces {"sessionId", "index"} of each
 *	  event due since its last pass, in one transaction (NOTIFY is sent at
 *	  its commit), so an event is announced within a few milliseconds of its
 *	  due time when nothing is behind.  After a (re)start a scheduler
 *	  announces every unprocessed event that is already due once, so work
 *	  that fell due while the server was down is announced as it comes
 *	  back: duplicates are allowed, losses are not.  A prepared
 *	  transaction's events become visible only at COMMIT PREPARED, which
 *	  runs no callback of ours: while the database has prepared
 *	  transactions its scheduler looks every A2_SCHED_PREPARED_MS.
 *
 *	  DROP DATABASE: a scheduler is a session of its database, so it wakes
 *	  at least every A2_SCHED_MAX_SLEEP_MS and leaves when it finds the
 *	  database's object lock taken (DROP DATABASE holds it while it waits
 *	  up to 5 s for sessions to end).
 *
 *	  Lock order: sched->lock alone, held for a few instructions.
 *
 * IDENTIFICATION
 *	  src/scheduler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "notify.h"
#include "scheduler.h"
#include "spi_util.h"
#include "statements.h"

/* databases with a scheduler slot; more are served as slots free up */
#define A2_SCHED_MAX_DBS		64
/* due events announced per scheduler transaction */
#define A2_SCHED_BATCH			10000
/* how often a scheduler looks while its database has prepared transactions */
#define A2_SCHED_PREPARED_MS	250L
/* the launcher's own pace: relaunches, slots freed */
#define A2_SCHED_LAUNCHER_MS	1000L
/*
 * The longest a scheduler sleeps: each pass checks whether DROP DATABASE
 * waits for it (it waits 5 s for other sessions to leave, then fails).
 */
#define A2_SCHED_MAX_SLEEP_MS	1000L

typedef struct A2SchedDb
{
	Oid			dboid;			/* InvalidOid: a free slot */
	bool		wanted;			/* a scheduler should (still) run */
	bool		registered;		/* the last scheduler launched got this far */
	pid_t		pid;			/* its scheduler, 0 while none runs */
	Latch	   *latch;			/* that scheduler's latch, or NULL */
	/* transactions past pre-commit that will set latch: keep it alive */
	pg_atomic_uint32 inflight;
} A2SchedDb;

typedef struct A2SchedShared
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	A2SchedDb	dbs[A2_SCHED_MAX_DBS];
} A2SchedShared;

static A2SchedShared *sched = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's transaction wrote a future due time */
static bool due_pending = false;
/* the latch to set once the transaction has committed */
static Latch *wake_latch = NULL;
/* the slot whose inflight count this transaction raised */
static A2SchedDb *inflight_slot = NULL;

PGDLLEXPORT void a2_sched_launcher_main(Datum arg);
PGDLLEXPORT void a2_scheduler_main(Datum arg);

/* --- shared memory -------------------------------------------------- */

static void
sched_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(A2SchedShared)));
	RequestNamedLWLockTranche("a2 scheduler", 1);
}

static void
sched_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sched = ShmemInitStruct("a2 scheduler", sizeof(A2SchedShared), &found);
	if (!found)
	{
		memset(sched, 0, sizeof(A2SchedShared));
		sched->lock = &(GetNamedLWLockTranche("a2 scheduler"))->lock;
		for (int i = 0; i < A2_SCHED_MAX_DBS; i++)
			pg_atomic_init_u32(&sched->dbs[i].inflight, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The slot of dboid, or a free one claimed for it; NULL when all are taken. */
static A2SchedDb *
db_slot(Oid dboid)
{
	A2SchedDb  *free_slot = NULL;

	Assert(LWLockHeldByMe(sched->lock));
	for (int i = 0; i < A2_SCHED_MAX_DBS; i++)
	{
		if (sched->dbs[i].dboid == dboid)
			return &sched->dbs[i];
		if (free_slot == NULL && sched->dbs[i].dboid == InvalidOid)
			free_slot = &sched->dbs[i];
	}
	if (free_slot != NULL)
	{
		free_slot->dboid = dboid;
		free_slot->wanted = false;
		free_slot->registered = false;
		free_slot->pid = 0;
		free_slot->latch = NULL;
		pg_atomic_write_u32(&free_slot->inflight, 0);
	}
	return free_slot;
}

/* --- the committing backend ----------------------------------------- */

static void
sched_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (due_pending && sched != NULL)
			{
				A2SchedDb  *db;

				LWLockAcquire(sched->lock, LW_EXCLUSIVE);
				db = db_slot(MyDatabaseId);
				if (db != NULL)
				{
					db->wanted = true;
					wake_latch = db->latch != NULL ? db->latch : sched->launcher_latch;
					/* the scheduler whose latch we took stays until we set it */
					pg_atomic_fetch_add_u32(&db->inflight, 1);
					inflight_slot = db;
				}
				else
					wake_latch = sched->launcher_latch; /* it retries when a slot frees */
				LWLockRelease(sched->lock);
			}
			due_pending = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			/* neither an atomic nor setting a latch can fail */
			if (wake_latch != NULL)
				SetLatch(wake_latch);
			if (inflight_slot != NULL)
				pg_atomic_fetch_sub_u32(&inflight_slot->inflight, 1);
			wake_latch = NULL;
			inflight_slot = NULL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (inflight_slot != NULL)
				pg_atomic_fetch_sub_u32(&inflight_slot->inflight, 1);
			due_pending = false;
			wake_latch = NULL;
			inflight_slot = NULL;
			break;
		default:
			break;
	}
}

void
a2_sched_note_due(int64 due_ms)
{
	if (sched == NULL || !a2_notify_enabled())
		return;
	if (due_ms > a2_wall_clock_ms())
		due_pending = true;
}

/* --- registration --------------------------------------------------- */

void
a2_scheduler_init(void)
{
	BackgroundWorker worker;

	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sched_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sched_shmem_startup;
	RegisterXactCallback(sched_xact_callback, NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "a2");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "a2_sched_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "a2 scheduler launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "a2 scheduler launcher");
	RegisterBackgroundWorker(&worker);
}

/* --- the launcher --------------------------------------------------- */

/* Mark every database that allows connections as wanted. */
static void
want_every_database(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		A2SchedDb  *slot;

		if (!db->datallowconn)
			continue;
		LWLockAcquire(sched->lock, LW_EXCLUSIVE);
		slot = db_slot(db->oid);
		if (slot != NULL)
			slot->wanted = true;
		LWLockRelease(sched->lock);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
}

static bool
launch(Oid dboid, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "a2");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "a2_scheduler_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "a2 scheduler for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "a2 scheduler");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

void
a2_sched_launcher_main(Datum arg)
{
	BackgroundWorkerHandle *handles[A2_SCHED_MAX_DBS] = {0};
	bool		warned = false;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("a2 scheduler launcher");

	LWLockAcquire(sched->lock, LW_EXCLUSIVE);
	sched->launcher_latch = MyLatch;
	LWLockRelease(sched->lock);

	want_every_database();

	for (;;)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		for (int i = 0; i < A2_SCHED_MAX_DBS; i++)
		{
			Oid			dboid;
			bool		start;
			pid_t		pid;

			/*
			 * A scheduler stopped.  Normally it cleared pid (and wanted,
			 * unless a commit wanted it again).  A pid still set means it
			 * died at work (an ERROR is FATAL in a worker): start another.
			 * One that never registered could not connect (the database was
			 * dropped): give the slot up.
			 */
			if (handles[i] != NULL &&
				GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
			{
				A2SchedDb  *db = &sched->dbs[i];

				pfree(handles[i]);
				handles[i] = NULL;
				LWLockAcquire(sched->lock, LW_EXCLUSIVE);
				if (db->pid != 0)
					db->wanted = true;
				else if (!db->registered)
					db->wanted = false;
				db->pid = 0;
				db->latch = NULL;
				if (!db->wanted)
					db->dboid = InvalidOid;
				LWLockRelease(sched->lock);
			}

			LWLockAcquire(sched->lock, LW_SHARED);
			dboid = sched->dbs[i].dboid;
			start = OidIsValid(dboid) && sched->dbs[i].wanted && handles[i] == NULL;
			LWLockRelease(sched->lock);
			if (!start)
				continue;
			LWLockAcquire(sched->lock, LW_EXCLUSIVE);
			sched->dbs[i].registered = false;
			LWLockRelease(sched->lock);
			if (launch(dboid, &handles[i]))
				warned = false;
			else
			{
				handles[i] = NULL;
				if (!warned)
					ereport(WARNING,
							(errmsg("a2 scheduler: could not start a background worker for database %u", dboid),
							 errhint("Raise max_worker_processes: a2 needs one per database with scheduled events, plus its notifier and launcher.")));
				warned = true;
			}
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 A2_SCHED_LAUNCHER_MS, PG_WAIT_EXTENSION);
	}
}

/* --- a database's scheduler ----------------------------------------- */

static A2Statement due_events = {
	.name = "scheduler.due_events",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT e.session_id, e.idx, e.not_before FROM @extschema@.a2_events e"
				" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
				"   AND e.not_before OPERATOR(pg_catalog.>) $1 AND e.not_before OPERATOR(pg_catalog.<=) $2"
				" ORDER BY e.not_before LIMIT " CppAsString2(A2_SCHED_BATCH)),
	},
	.nparams = 2, .params = {A2_PARAM("after", INT8OID), A2_PARAM("through", INT8OID)},
};

static A2Statement next_due = {
	.name = "scheduler.next_due",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT e.not_before FROM @extschema@.a2_events e"
				" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
				"   AND e.not_before OPERATOR(pg_catalog.>) $1"
				" ORDER BY e.not_before LIMIT 1"),
	},
	.nparams = 1, .params = {A2_PARAM("after", INT8OID)},
};

static A2Statement prepared_here = {
	.name = "scheduler.prepared_here",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_xacts p"
				"                WHERE p.database OPERATOR(pg_catalog.=) pg_catalog.current_database())"),
	},
	.nparams = 0,
};

A2_STATEMENT_GROUP(scheduler, &due_events, &next_due, &prepared_here);

typedef struct PassResult
{
	bool		leave;			/* the database is being dropped or renamed */
	bool		installed;		/* a2 0.3.0 is installed here */
	bool		more;			/* a full batch: look again at once */
	bool		prepared;		/* the database has prepared transactions */
	int64		next_due;		/* the next due time, or -1 */
} PassResult;

/*
 * One pass: announce what fell due in (*through, now] and find the next
 * due time.  Moves *through to the last due time announced.
 */
static PassResult
scheduler_pass(int64 *through)
{
	A2Call		call;
	PassResult	res = {false, false, false, false, -1};
	LOCKTAG		dbtag;
	int64		now = a2_wall_clock_ms();
	Datum		args[2];
	uint64		n;
	StringInfoData payload;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());

	/*
	 * DROP DATABASE (and ALTER DATABASE ... RENAME) hold the database's
	 * object lock exclusively while they wait for its sessions to end: if
	 * it is taken, leave.
	 */
	SET_LOCKTAG_OBJECT(dbtag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	if (LockAcquire(&dbtag, AccessShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		res.leave = true;
		goto done;
	}
	LockRelease(&dbtag, AccessShareLock, false);

	if (!OidIsValid(get_extension_oid("a2", true)))
		goto done;
	a2_call_begin(&call, NULL);
	if (!a2_has_not_before())
	{
		a2_call_end(&call);
		goto done;
	}
	res.installed = true;

	args[0] = Int64GetDatum(*through);
	args[1] = Int64GetDatum(now);
	n = a2_exec_values(&due_events, args, NULL, 2, true, SPI_OK_SELECT);
	initStringInfo(&payload);
	for (uint64 r = 0; r < n; r++)
	{
		resetStringInfo(&payload);
		a2_notify_payload(&payload, a2_col_text(r, 1), a2_col_int64(r, 2));
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
	}
	if (n == A2_SCHED_BATCH)
	{
		*through = a2_col_int64(n - 1, 3);
		res.more = true;
	}
	else
		*through = now;

	args[0] = Int64GetDatum(*through);
	if (a2_exec_values(&next_due, args, NULL, 1, true, SPI_OK_SELECT) > 0)
		res.next_due = a2_col_int64(0, 1);
	a2_exec_values(&prepared_here, NULL, NULL, 0, true, SPI_OK_SELECT);
	res.prepared = a2_col_bool(0, 1);
	a2_call_end(&call);

done:
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return res;
}

static A2SchedDb *
my_slot(void)
{
	for (int i = 0; i < A2_SCHED_MAX_DBS; i++)
		if (sched->dbs[i].dboid == MyDatabaseId)
			return &sched->dbs[i];
	return NULL;
}

void
a2_scheduler_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	int64		through = PG_INT64_MIN; /* a (re)start announces what is due */
	A2SchedDb  *slot;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("a2 scheduler");

	LWLockAcquire(sched->lock, LW_EXCLUSIVE);
	if ((slot = my_slot()) != NULL)
	{
		slot->registered = true;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
	}
	LWLockRelease(sched->lock);

	for (;;)
	{
		PassResult	res;
		long		timeout;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		/* a commit from now on sets wanted again, and our latch */
		LWLockAcquire(sched->lock, LW_EXCLUSIVE);
		if ((slot = my_slot()) != NULL)
			slot->wanted = false;
		LWLockRelease(sched->lock);

		res = scheduler_pass(&through);
		if (res.more)
			continue;

		if (res.leave)
		{
			LWLockAcquire(sched->lock, LW_EXCLUSIVE);
			if ((slot = my_slot()) != NULL)
			{
				slot->wanted = false;
				slot->pid = 0;
				slot->latch = NULL;
			}
			LWLockRelease(sched->lock);
			proc_exit(0);
		}

		if (!res.installed || (res.next_due < 0 && !res.prepared))
		{
			/*
			 * Nothing scheduled: exit, unless a commit wanted us meanwhile
			 * or is about to set our latch (it saw us at its pre-commit).
			 */
			bool		stay;

			LWLockAcquire(sched->lock, LW_EXCLUSIVE);
			slot = my_slot();
			stay = slot != NULL &&
				(slot->wanted || pg_atomic_read_u32(&slot->inflight) > 0);
			if (!stay && slot != NULL)
			{
				slot->pid = 0;
				slot->latch = NULL;
			}
			LWLockRelease(sched->lock);
			if (!stay)
				proc_exit(0);
			/* the committing transaction sets our latch in a moment */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 A2_SCHED_PREPARED_MS, PG_WAIT_EXTENSION);
			continue;
		}

		timeout = res.next_due < 0 ? A2_SCHED_PREPARED_MS :
			(long) Max(res.next_due - a2_wall_clock_ms(), 0);
		if (res.prepared)
			timeout = Min(timeout, A2_SCHED_PREPARED_MS);
		timeout = Min(timeout, A2_SCHED_MAX_SLEEP_MS);
		if (timeout > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 timeout, PG_WAIT_EXTENSION);
	}
}
