/*-------------------------------------------------------------------------
 *
 * scheduler_launcher.c
 *	  The scheduler launcher: one static background worker, connected to no
 *	  database, that starts an "a2 scheduler" (scheduler_worker.c) for each
 *	  database that wants one and a worker slot is free for.
 *
 *	  Which databases: those a commit marked wanted (scheduler.c); at
 *	  start-up every database that allows connections; every 10 s those it
 *	  has not seen before (CREATE DATABASE ... TEMPLATE) and those whose
 *	  rows inserted changed in the statistics (a restore with pg_dump, which
 *	  calls no a2 function); and all of them when a commit found every slot
 *	  taken.  Those it only looks at ("probes") run two at a time.  A
 *	  database that finds no slot or no free background worker waits in the
 *	  launcher's list and is tried again each round (once a second, or at
 *	  once when a scheduler stops); one log line says so when waiting
 *	  starts.  Before it starts a scheduler, the launcher checks that the
 *	  database's object lock is free (no DROP, RENAME or TEMPLATE copy in
 *	  progress) and that the database still exists.
 *
 *	  Lock order: see scheduler_shmem.h.
 *
 * IDENTIFICATION
 *	  src/scheduler_launcher.c
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
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "scheduler_shmem.h"

/* schedulers the launcher runs at once only to look for scheduled work */
#define A2_SCHED_PROBES			2
/* how often the launcher looks for databases it has not seen (templates) */
#define A2_SCHED_SWEEP_MS		10000L
/* the launcher's own pace: relaunches, slots freed */
#define A2_SCHED_LAUNCHER_MS	1000L

/*
 * The launcher's own memory: the databases it still has to look at (no
 * slot was free for them), and those it has seen, to notice new ones.
 */
typedef struct LauncherState
{
	BackgroundWorkerHandle **handles;	/* [a2_sched->ndbs] */
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
		LWLockAcquire(a2_sched->lock, LW_SHARED);
		for (int i = 0; i < a2_sched->ndbs; i++)
			has_slot |= a2_sched->dbs[i].dboid == db->oid;
		LWLockRelease(a2_sched->lock);
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
	A2SchedDb  *db = &a2_sched->dbs[i];

	pfree(ls->handles[i]);
	ls->handles[i] = NULL;
	LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);

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
	LWLockRelease(a2_sched->lock);
}

/* Give pending databases the free slots, at most A2_SCHED_PROBES looking at once. */
static void
assign_pending(LauncherState *ls)
{
	int			probes = 0;

	ls->no_slot = false;
	LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
	for (int i = 0; i < a2_sched->ndbs; i++)
		probes += OidIsValid(a2_sched->dbs[i].dboid) && a2_sched->dbs[i].probe;
	while (ls->pending != NIL && probes < A2_SCHED_PROBES)
	{
		Oid			dboid = linitial_oid(ls->pending);
		A2SchedDb  *db = a2_sched_db_slot(dboid);

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
	LWLockRelease(a2_sched->lock);
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
										sizeof(BackgroundWorkerHandle *) * a2_sched->ndbs);
	LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
	a2_sched->launcher_latch = MyLatch;
	LWLockRelease(a2_sched->lock);

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

		for (int i = 0; i < a2_sched->ndbs; i++)
		{
			pid_t		pid;

			if (ls.handles[i] != NULL &&
				GetBackgroundWorkerPid(ls.handles[i], &pid) == BGWH_STOPPED)
				reap(&ls, i);
		}

		/* a commit found no slot, or a new database may have been copied */
		LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
		overflow = a2_sched->overflow;
		a2_sched->overflow = false;
		LWLockRelease(a2_sched->lock);
		if (overflow ||
			TimestampDifferenceExceeds(last_sweep, GetCurrentTimestamp(), A2_SCHED_SWEEP_MS))
		{
			sweep_databases(&ls, overflow);
			last_sweep = GetCurrentTimestamp();
		}
		assign_pending(&ls);

		for (int i = 0; i < a2_sched->ndbs; i++)
		{
			Oid			dboid;
			bool		start;
			bool		probe;
			bool		gone;

			LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
			dboid = a2_sched->dbs[i].dboid;
			probe = a2_sched->dbs[i].probe;
			start = OidIsValid(dboid) && a2_sched->dbs[i].wanted && ls.handles[i] == NULL;
			if (start)
				a2_sched->dbs[i].registered = false;
			LWLockRelease(a2_sched->lock);
			if (!start)
				continue;
			if (!database_ready(dboid, &gone))
			{
				if (gone)
				{
					LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
					a2_sched->dbs[i].wanted = false;
					a2_sched->dbs[i].dboid = InvalidOid;
					LWLockRelease(a2_sched->lock);
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
					(errmsg_plural("a2 scheduler: %d database is waiting for a background worker",
								   "a2 scheduler: %d databases are waiting for a background worker",
								   waiting, waiting),
					 errdetail("Each database with scheduled events needs one while it has any; a2 has %d slots, max_worker_processes is %d.",
							   a2_sched->ndbs, max_worker_processes),
					 errhint("Raise max_worker_processes: a2 needs one per database with scheduled events, plus its notifier and launcher.")));
		ls.waiting_logged = waiting;
		LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
		a2_sched->waiting = waiting;
		LWLockRelease(a2_sched->lock);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 A2_SCHED_LAUNCHER_MS, PG_WAIT_EXTENSION);
	}
}
