/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  Announcements of scheduled events when they fall due (SPEC 7.1).
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
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "a2.h"
#include "clock.h"
#include "notify.h"
#include "scheduler.h"
#include "spi_plans.h"

/*
 * Databases with a scheduler slot at once: one per background worker the
 * server can run (max_worker_processes), at least A2_SCHED_MIN_DBS.  A
 * database that finds no slot waits in the launcher's list until one frees.
 */
#define A2_SCHED_MIN_DBS		8
/* schedulers the launcher runs at once only to look for scheduled work */
#define A2_SCHED_PROBES			2
/* how often the launcher looks for databases it has not seen (templates) */
#define A2_SCHED_SWEEP_MS		10000L
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
	bool		probe;			/* started only to look (nothing known due) */
	pid_t		pid;			/* its scheduler, 0 while none runs */
	Latch	   *latch;			/* that scheduler's latch, or NULL */
	/*
	 * The earliest due time written by a transaction since the scheduler
	 * last looked (PG_INT64_MAX: none).  A transaction may commit after its
	 * due time, when a pass has already moved past it: the next pass goes
	 * back to it.
	 */
	int64		rewind_ms;
	/* the same for transactions that prepared: used at COMMIT PREPARED */
	int64		prep_rewind_ms;
	/* transactions past pre-commit that will set latch: keep it alive */
	pg_atomic_uint32 inflight;
} A2SchedDb;

typedef struct A2SchedShared
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	bool		overflow;		/* a commit found no free slot: sweep */
	int			ndbs;
	A2SchedDb	dbs[FLEXIBLE_ARRAY_MEMBER];
} A2SchedShared;

static A2SchedShared *sched = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's transaction wrote a future due time, the earliest due_min */
static bool due_pending = false;
static int64 due_min = PG_INT64_MAX;
/* the latch to set once the transaction has committed */
static Latch *wake_latch = NULL;
/* the slot whose inflight count this transaction raised */
static A2SchedDb *inflight_slot = NULL;

PGDLLEXPORT void a2_sched_launcher_main(Datum arg);
PGDLLEXPORT void a2_scheduler_main(Datum arg);

/* --- shared memory -------------------------------------------------- */

static int
sched_ndbs(void)
{
	return Max(max_worker_processes, A2_SCHED_MIN_DBS);
}

static Size
sched_shmem_size(void)
{
	return add_size(offsetof(A2SchedShared, dbs),
					mul_size(sched_ndbs(), sizeof(A2SchedDb)));
}

static void
sched_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sched_shmem_size()));
	RequestNamedLWLockTranche("a2 scheduler", 1);
}

static void
sched_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sched = ShmemInitStruct("a2 scheduler", sched_shmem_size(), &found);
	if (!found)
	{
		memset(sched, 0, sched_shmem_size());
		sched->lock = &(GetNamedLWLockTranche("a2 scheduler"))->lock;
		sched->ndbs = sched_ndbs();
		for (int i = 0; i < sched->ndbs; i++)
		{
			sched->dbs[i].rewind_ms = PG_INT64_MAX;
			sched->dbs[i].prep_rewind_ms = PG_INT64_MAX;
			pg_atomic_init_u32(&sched->dbs[i].inflight, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The slot of dboid, or a free one claimed for it; NULL when all are taken. */
static A2SchedDb *
db_slot(Oid dboid)
{
	A2SchedDb  *free_slot = NULL;

	Assert(LWLockHeldByMe(sched->lock));
	for (int i = 0; i < sched->ndbs; i++)
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
		free_slot->probe = false;
		free_slot->rewind_ms = PG_INT64_MAX;
		free_slot->prep_rewind_ms = PG_INT64_MAX;
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
					if (event == XACT_EVENT_PRE_PREPARE)
						db->prep_rewind_ms = Min(db->prep_rewind_ms, due_min);
					else
						db->rewind_ms = Min(db->rewind_ms, due_min);
					wake_latch = db->latch != NULL ? db->latch : sched->launcher_latch;
					/* the scheduler whose latch we took stays until we set it */
					pg_atomic_fetch_add_u32(&db->inflight, 1);
					inflight_slot = db;
				}
				else
				{
					/* the launcher looks for this database when a slot frees */
					sched->overflow = true;
					wake_latch = sched->launcher_latch;
				}
				LWLockRelease(sched->lock);
			}
			due_pending = false;
			due_min = PG_INT64_MAX;
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
			due_min = PG_INT64_MAX;
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
	{
		due_pending = true;
		due_min = Min(due_min, due_ms);
	}
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

/*
 * The launcher's own memory: the databases it still has to look at (no
 * slot was free for them), and those it has seen, to notice new ones.
 */
typedef struct LauncherState
{
	BackgroundWorkerHandle **handles;	/* [sched->ndbs] */
	List	   *pending;		/* Oids waiting for a slot, oldest first */
	List	   *known;			/* KnownDb of each database at the last sweep */
	bool		no_slot;		/* pending databases found every slot taken */
	int			waiting_logged; /* databases waiting at the last round */
} LauncherState;

/* a database as the launcher last saw it */
typedef struct KnownDb
{
	Oid			dboid;
	PgStat_Counter inserted;	/* its rows inserted, from the statistics */
} KnownDb;

static PgStat_Counter
rows_inserted(Oid dboid)
{
	PgStat_StatDBEntry *e = pgstat_fetch_stat_dbentry(dboid);

#if PG_VERSION_NUM >= 160000
	return e != NULL ? e->tuples_inserted : 0;
#else
	return e != NULL ? e->n_tuples_inserted : 0;
#endif
}

/*
 * Look at pg_database and queue databases to be looked at (unless they
 * have a slot already): with all, every one that allows connections (at
 * start-up, and after a commit found no slot free); otherwise those not
 * seen before (made since, e.g. by CREATE DATABASE ... TEMPLATE) and those
 * that had rows inserted since the last sweep (a restore with pg_dump's
 * COPY calls no a2 function, and so wakes no scheduler).
 */
static void
sweep_databases(LauncherState *ls, bool all)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	List	   *now_known = NIL;
	MemoryContext old;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	old = MemoryContextSwitchTo(TopMemoryContext);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		bool		has_slot = false;
		bool		look = all;
		KnownDb    *k = palloc(sizeof(KnownDb));
		ListCell   *lc;

		if (!db->datallowconn)
			continue;
		k->dboid = db->oid;
		k->inserted = rows_inserted(db->oid);
		now_known = lappend(now_known, k);
		if (!look)
		{
			look = true;		/* new, unless found below */
			foreach(lc, ls->known)
			{
				KnownDb    *was = lfirst(lc);

				if (was->dboid == db->oid)
				{
					look = was->inserted != k->inserted;
					break;
				}
			}
		}
		if (!look)
			continue;
		LWLockAcquire(sched->lock, LW_SHARED);
		for (int i = 0; i < sched->ndbs; i++)
			has_slot |= sched->dbs[i].dboid == db->oid;
		LWLockRelease(sched->lock);
		if (!has_slot)
			ls->pending = list_append_unique_oid(ls->pending, db->oid);
	}
	list_free_deep(ls->known);
	ls->known = now_known;
	MemoryContextSwitchTo(old);
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

/*
 * May a scheduler connect to dboid now?  Not while DROP DATABASE, ALTER
 * DATABASE ... RENAME or CREATE DATABASE ... TEMPLATE holds its lock (a
 * connection would wait for it, and then fail after a DROP): false, try on
 * the next round.  *gone: the database no longer exists.
 */
static bool
database_ready(Oid dboid, bool *gone)
{
	LOCKTAG		tag;

	*gone = false;
	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, dboid, 0);
	if (LockAcquire(&tag, RowExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	LockRelease(&tag, RowExclusiveLock, true);
	StartTransactionCommand();
	*gone = !SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dboid));
	CommitTransactionCommand();
	return !*gone;
}

/* A scheduler of slot i stopped: keep the slot for a new one, or free it. */
static void
reap(LauncherState *ls, int i)
{
	A2SchedDb  *db = &sched->dbs[i];

	pfree(ls->handles[i]);
	ls->handles[i] = NULL;
	LWLockAcquire(sched->lock, LW_EXCLUSIVE);

	/*
	 * Normally it cleared pid (and wanted, unless a commit or DROP /
	 * RENAME / CREATE DATABASE ... TEMPLATE wanted it again).  A pid still
	 * set means it died at work (an ERROR is FATAL in a worker): start
	 * another.  One that never registered could not connect (the database
	 * was dropped): give the slot up.
	 */
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

/* Give pending databases the free slots, at most A2_SCHED_PROBES looking at once. */
static void
assign_pending(LauncherState *ls)
{
	int			probes = 0;

	ls->no_slot = false;
	LWLockAcquire(sched->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sched->ndbs; i++)
		probes += OidIsValid(sched->dbs[i].dboid) && sched->dbs[i].probe;
	while (ls->pending != NIL && probes < A2_SCHED_PROBES)
	{
		Oid			dboid = linitial_oid(ls->pending);
		A2SchedDb  *db = db_slot(dboid);

		if (db == NULL)
		{
			ls->no_slot = true; /* every slot taken: wait for one to free */
			break;
		}
		ls->pending = list_delete_first(ls->pending);
		if (db->wanted || db->pid != 0)
			continue;			/* a commit got there first */
		db->wanted = true;
		db->probe = true;
		probes++;
	}
	LWLockRelease(sched->lock);
}

void
a2_sched_launcher_main(Datum arg)
{
	LauncherState ls = {0};
	TimestampTz last_sweep;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("a2 scheduler launcher");

	ls.handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(BackgroundWorkerHandle *) * sched->ndbs);
	LWLockAcquire(sched->lock, LW_EXCLUSIVE);
	sched->launcher_latch = MyLatch;
	LWLockRelease(sched->lock);

	/* every database: a restarted server finds work scheduled before */
	sweep_databases(&ls, true);
	last_sweep = GetCurrentTimestamp();

	for (;;)
	{
		bool		overflow;
		int			waiting = 0;
		bool		unknown_only = true;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		for (int i = 0; i < sched->ndbs; i++)
		{
			pid_t		pid;

			if (ls.handles[i] != NULL &&
				GetBackgroundWorkerPid(ls.handles[i], &pid) == BGWH_STOPPED)
				reap(&ls, i);
		}

		/* a commit found no slot, or a new database may have been copied */
		LWLockAcquire(sched->lock, LW_EXCLUSIVE);
		overflow = sched->overflow;
		sched->overflow = false;
		LWLockRelease(sched->lock);
		if (overflow ||
			TimestampDifferenceExceeds(last_sweep, GetCurrentTimestamp(), A2_SCHED_SWEEP_MS))
		{
			sweep_databases(&ls, overflow);
			last_sweep = GetCurrentTimestamp();
		}
		assign_pending(&ls);

		for (int i = 0; i < sched->ndbs; i++)
		{
			Oid			dboid;
			bool		start;
			bool		probe;
			bool		gone;

			LWLockAcquire(sched->lock, LW_EXCLUSIVE);
			dboid = sched->dbs[i].dboid;
			probe = sched->dbs[i].probe;
			start = OidIsValid(dboid) && sched->dbs[i].wanted && ls.handles[i] == NULL;
			if (start)
				sched->dbs[i].registered = false;
			LWLockRelease(sched->lock);
			if (!start)
				continue;
			if (!database_ready(dboid, &gone))
			{
				if (gone)
				{
					LWLockAcquire(sched->lock, LW_EXCLUSIVE);
					sched->dbs[i].wanted = false;
					sched->dbs[i].dboid = InvalidOid;
					LWLockRelease(sched->lock);
				}
				continue;
			}
			if (!launch(dboid, &ls.handles[i]))
			{
				/* no background worker free: tried again on the next round */
				ls.handles[i] = NULL;
				waiting++;
				unknown_only &= probe;
			}
		}

		/*
		 * Databases without a scheduler because no worker or slot is free:
		 * one log line when that starts, not one per round (nor per
		 * database); again only after a time when none waited.  A WARNING
		 * when one of them is known to have work due; a LOG line when they
		 * are only to be looked at.
		 */
		if (ls.no_slot)
			waiting += list_length(ls.pending);
		if (waiting > 0 && ls.waiting_logged == 0)
			ereport(unknown_only ? LOG : WARNING,
					(errmsg("a2 scheduler: %d database(s) wait for a background worker", waiting),
					 errdetail("Each database with scheduled events needs one while it has any; %d slot(s), max_worker_processes is %d.",
							   sched->ndbs, max_worker_processes),
					 errhint("Raise max_worker_processes: a2 needs one per database with scheduled events, plus its notifier and launcher.")));
		ls.waiting_logged = waiting;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 A2_SCHED_LAUNCHER_MS, PG_WAIT_EXTENSION);
	}
}

/* --- a database's scheduler ----------------------------------------- */

/*
 * Due events after the cursor ($1, $3, $4) -- due time, then session and
 * index, so a batch that ends inside a run of equal due times goes on
 * with the rest of the run -- up to $2 (now).  $3 NULL: strictly after $1.
 */
static A2Statement due_events = {
	.sql = "SELECT e.session_id, e.idx, e.not_before FROM @extschema@.a2_events e"
	" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
	"   AND e.not_before OPERATOR(pg_catalog.>=) $1 AND e.not_before OPERATOR(pg_catalog.<=) $2"
	"   AND (e.not_before OPERATOR(pg_catalog.>) $1"
	"        OR e.session_id OPERATOR(pg_catalog.>) $3"
	"        OR (e.session_id OPERATOR(pg_catalog.=) $3 AND e.idx OPERATOR(pg_catalog.>) $4))"
	" ORDER BY e.not_before, e.session_id, e.idx LIMIT " CppAsString2(A2_SCHED_BATCH),
	.nargs = 4, .argtypes = {INT8OID, INT8OID, TEXTOID, INT8OID}
};

static A2Statement next_due = {
	.sql = "SELECT e.not_before FROM @extschema@.a2_events e"
	" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
	"   AND e.not_before OPERATOR(pg_catalog.>) $1"
	" ORDER BY e.not_before LIMIT 1",
	.nargs = 1, .argtypes = {INT8OID}
};

static A2Statement prepared_here = {
	.sql = "SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts p"
	" WHERE p.database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
	.nargs = 0
};

/*
 * Where a scheduler has announced up to: every due event up to (through,
 * session_id, idx) in the order of due_events.  session_id NULL: every
 * event due at or before through.
 */
typedef struct SchedCursor
{
	int64		through;
	char		session_id[A2_MAX_NAME_BYTES + 1];
	bool		has_session;
	int64		idx;
} SchedCursor;

typedef struct PassResult
{
	bool		leave;			/* the database is being dropped, renamed or copied */
	bool		installed;		/* a2 0.3.0 is installed here */
	bool		more;			/* a full batch: look again at once */
	int64		nprepared;		/* the database's prepared transactions */
	int64		next_due;		/* the next due time, or -1 */
} PassResult;

/* Go back to just before due time ms (events due then are announced again). */
static void
rewind_cursor(SchedCursor *cur, int64 ms)
{
	if (ms == PG_INT64_MAX || ms > cur->through)
		return;
	cur->through = ms == PG_INT64_MIN ? ms : ms - 1;
	cur->has_session = false;
}

/*
 * One pass: announce what fell due after the cursor up to now, and find
 * the next due time.  Moves the cursor to the last event announced.
 */
static PassResult
scheduler_pass(SchedCursor *cur)
{
	PassResult	res = {false, false, false, 0, -1};
	LOCKTAG		dbtag;
	int64		now = a2_wall_clock_ms();
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	uint64		n;
	StringInfoData payload;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());

	/*
	 * DROP DATABASE and ALTER DATABASE ... RENAME hold the database's
	 * object lock exclusively, and CREATE DATABASE ... TEMPLATE this one in
	 * share mode, while they wait for its other sessions to end.  A
	 * connecting session takes it in row-exclusive mode, which conflicts
	 * with both: if we could not connect now, leave (the launcher starts a
	 * new scheduler, whose connection waits for the command to finish).
	 */
	SET_LOCKTAG_OBJECT(dbtag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	if (LockAcquire(&dbtag, RowExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		res.leave = true;
		goto done;
	}
	LockRelease(&dbtag, RowExclusiveLock, false);

	if (!OidIsValid(get_extension_oid("a2", true)))
		goto done;
	a2_spi_begin();
	if (!a2_has_not_before())
	{
		a2_spi_end();
		goto done;
	}
	res.installed = true;

	args[0] = Int64GetDatum(cur->through);
	args[1] = Int64GetDatum(now);
	if (cur->has_session)
	{
		args[2] = CStringGetTextDatum(cur->session_id);
		args[3] = Int64GetDatum(cur->idx);
	}
	else
	{
		args[2] = args[3] = (Datum) 0;
		nulls[2] = nulls[3] = 'n';
	}
	n = a2_exec(&due_events, args, nulls, true, SPI_OK_SELECT);
	initStringInfo(&payload);
	for (uint64 r = 0; r < n; r++)
	{
		resetStringInfo(&payload);
		a2_notify_payload(&payload, a2_col_text(r, 1), a2_col_int64(r, 2));
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
	}
	if (n == A2_SCHED_BATCH)
	{
		/* a full batch: the next one starts after its last event exactly */
		cur->through = a2_col_int64(n - 1, 3);
		strlcpy(cur->session_id, a2_col_text(n - 1, 1), sizeof(cur->session_id));
		cur->idx = a2_col_int64(n - 1, 2);
		cur->has_session = true;
		res.more = true;
	}
	else
	{
		cur->through = now;
		cur->has_session = false;
	}

	args[0] = Int64GetDatum(cur->through);
	if (a2_exec(&next_due, args, NULL, true, SPI_OK_SELECT) > 0)
		res.next_due = a2_col_int64(0, 1);
	a2_exec(&prepared_here, NULL, NULL, true, SPI_OK_SELECT);
	res.nprepared = a2_col_int64(0, 1);
	a2_spi_end();

done:
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return res;
}

static A2SchedDb *
my_slot(void)
{
	for (int i = 0; i < sched->ndbs; i++)
		if (sched->dbs[i].dboid == MyDatabaseId)
			return &sched->dbs[i];
	return NULL;
}

void
a2_scheduler_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	SchedCursor cur = {.through = PG_INT64_MIN};	/* a (re)start announces what is due */
	/*
	 * The earliest due time prepared transactions may hold: unknown at
	 * start (they may predate us), so their COMMIT PREPARED announces
	 * everything due once.  Forgotten once none is left.
	 */
	int64		prep_rewind = PG_INT64_MIN;
	int64		last_nprepared = 0;
	bool		rerun = false;
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
		bool		inflight = false;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		/*
		 * A commit from now on sets wanted again, and our latch.  Take the
		 * due times of transactions that committed (or prepared) since the
		 * last pass; those still committing keep theirs for the next pass
		 * too, since our snapshot may miss them.
		 */
		LWLockAcquire(sched->lock, LW_EXCLUSIVE);
		if ((slot = my_slot()) != NULL)
		{
			slot->wanted = false;
			inflight = pg_atomic_read_u32(&slot->inflight) > 0;
			rewind_cursor(&cur, slot->rewind_ms);
			if (!inflight)
				slot->rewind_ms = PG_INT64_MAX;
			prep_rewind = Min(prep_rewind, slot->prep_rewind_ms);
			slot->prep_rewind_ms = PG_INT64_MAX;
		}
		LWLockRelease(sched->lock);

		res = scheduler_pass(&cur);

		/*
		 * A prepared transaction of ours was committed since the last pass
		 * (its events are visible to a new snapshot): go back to the
		 * earliest due time prepared ones held, and look again at once.
		 */
		if (!res.leave && res.nprepared < last_nprepared && !rerun)
		{
			rewind_cursor(&cur, prep_rewind);
			rerun = true;
			last_nprepared = res.nprepared;
			continue;
		}
		rerun = false;
		last_nprepared = res.nprepared;
		if (res.nprepared == 0 && !inflight)
			prep_rewind = PG_INT64_MAX;
		if (res.more)
			continue;

		if (res.leave)
		{
			/* still wanted: the launcher starts a new scheduler at once */
			LWLockAcquire(sched->lock, LW_EXCLUSIVE);
			if ((slot = my_slot()) != NULL)
			{
				slot->wanted = true;
				slot->pid = 0;
				slot->latch = NULL;
			}
			LWLockRelease(sched->lock);
			proc_exit(0);
		}

		if (!res.installed || (res.next_due < 0 && res.nprepared == 0))
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

		/* work here: no longer a mere look */
		LWLockAcquire(sched->lock, LW_EXCLUSIVE);
		if ((slot = my_slot()) != NULL)
			slot->probe = false;
		LWLockRelease(sched->lock);

		timeout = res.next_due < 0 ? A2_SCHED_PREPARED_MS :
			(long) Max(res.next_due - a2_wall_clock_ms(), 0);
		if (res.nprepared > 0 || inflight)
			timeout = Min(timeout, A2_SCHED_PREPARED_MS);
		timeout = Min(timeout, A2_SCHED_MAX_SLEEP_MS);
		if (timeout > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 timeout, PG_WAIT_EXTENSION);
	}
}
