/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  Announcements of scheduled events when they fall due
 *	  (docs/semantics.md, "Scheduling").
 *
 *	  Recurring schedules (docs/time.md) use the same workers: a
 *	  database's scheduler fires their due ticks before each pass and
 *	  counts the next tick of an active schedule (a2_schedules.next_tick_at)
 *	  as a due time; a2_schedule and a2_resume_schedule call
 *	  a2_sched_note_due() (schedules.c) to wake it.
 *
 *	  Where events' due times live: in a2_events.not_before, nowhere else.  The
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
 *	  every database that allows connections, two at a time (so a
 *	  restarted server finds work scheduled before it stopped); a scheduler
 *	  that finds no a2, or nothing scheduled, exits again.  A transaction that writes a future
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
 *	  A transaction may commit after the due time it wrote, when its
 *	  scheduler has already looked past it: the earliest due time a
 *	  committing (or preparing) transaction wrote is kept in its slot, and
 *	  the scheduler goes back to it (scheduler_worker.c).
 *
 *	  DROP DATABASE, RENAME, CREATE DATABASE ... TEMPLATE: a scheduler is a
 *	  session of its database, so it wakes at least every second and steps
 *	  aside when it finds the database's object lock taken; the launcher
 *	  starts a new one once the command is over (scheduler_launcher.c).
 *
 *	  The files: this one has the shared memory, the committing backend's
 *	  side and the registration; scheduler_launcher.c the launcher;
 *	  scheduler_worker.c a database's scheduler; scheduler_shmem.h what
 *	  they share.
 *
 *	  Lock order: a2_sched->lock alone, held for a few instructions.
 *
 * IDENTIFICATION
 *	  src/scheduler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "clock.h"
#include "notify.h"
#include "scheduler.h"
#include "scheduler_shmem.h"

A2SchedShared *a2_sched = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's transaction wrote a future due time, the earliest due_min */
static bool due_pending = false;
static int64 due_min = PG_INT64_MAX;
/* the latch to set once the transaction has committed */
static Latch *wake_latch = NULL;
/* the slot whose inflight count this transaction raised */
static A2SchedDb *inflight_slot = NULL;
/* the earliest due time the committing transaction wrote, for its slot */
static int64 commit_due = PG_INT64_MAX;

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
	a2_sched = ShmemInitStruct("a2 scheduler", sched_shmem_size(), &found);
	if (!found)
	{
		memset(a2_sched, 0, sched_shmem_size());
		a2_sched->lock = &(GetNamedLWLockTranche("a2 scheduler"))->lock;
		a2_sched->ndbs = sched_ndbs();
		for (int i = 0; i < a2_sched->ndbs; i++)
		{
			pg_atomic_init_u64(&a2_sched->dbs[i].rewind, A2_SCHED_NO_REWIND);
			a2_sched->dbs[i].prep_rewind_ms = PG_INT64_MAX;
			pg_atomic_init_u32(&a2_sched->dbs[i].inflight, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

A2SchedDb *
a2_sched_db_slot(Oid dboid)
{
	A2SchedDb  *free_slot = NULL;

	Assert(LWLockHeldByMe(a2_sched->lock));
	for (int i = 0; i < a2_sched->ndbs; i++)
	{
		if (a2_sched->dbs[i].dboid == dboid)
			return &a2_sched->dbs[i];
		if (free_slot == NULL && a2_sched->dbs[i].dboid == InvalidOid)
			free_slot = &a2_sched->dbs[i];
	}
	if (free_slot != NULL)
	{
		free_slot->dboid = dboid;
		free_slot->wanted = false;
		free_slot->registered = false;
		free_slot->probe = false;
		pg_atomic_write_u64(&free_slot->rewind, A2_SCHED_NO_REWIND);
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
			if (due_pending && a2_sched != NULL)
			{
				A2SchedDb  *db;

				LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
				db = a2_sched_db_slot(MyDatabaseId);
				if (db != NULL)
				{
					db->wanted = true;
					if (event == XACT_EVENT_PRE_PREPARE)
						db->prep_rewind_ms = Min(db->prep_rewind_ms, due_min);
					else
						commit_due = due_min;	/* handed over once committed */
					wake_latch = db->latch != NULL ? db->latch : a2_sched->launcher_latch;
					/* the scheduler whose latch we took stays until we set it */
					pg_atomic_fetch_add_u32(&db->inflight, 1);
					inflight_slot = db;
				}
				else
				{
					/* the launcher looks for this database when a slot frees */
					a2_sched->overflow = true;
					wake_latch = a2_sched->launcher_latch;
				}
				LWLockRelease(a2_sched->lock);
			}
			due_pending = false;
			due_min = PG_INT64_MAX;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			/* neither an atomic nor setting a latch can fail */
			if (inflight_slot != NULL && commit_due != PG_INT64_MAX)
			{
				/* committed and visible: the scheduler may go back to it */
				uint64		want = A2_SCHED_REWIND_KEY(commit_due);
				uint64		cur = pg_atomic_read_u64(&inflight_slot->rewind);

				while (want < cur &&
					   !pg_atomic_compare_exchange_u64(&inflight_slot->rewind, &cur, want))
					;
			}
			commit_due = PG_INT64_MAX;
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
			commit_due = PG_INT64_MAX;
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
	if (a2_sched == NULL)
		return;
	if (due_ms > a2_wall_clock_ms())
	{
		due_pending = true;
		due_min = Min(due_min, due_ms);
	}
}

bool
a2_sched_status(int *running, int *waiting)
{
	if (a2_sched == NULL)
		return false;
	*running = 0;
	LWLockAcquire(a2_sched->lock, LW_SHARED);
	for (int i = 0; i < a2_sched->ndbs; i++)
		if (OidIsValid(a2_sched->dbs[i].dboid) && a2_sched->dbs[i].pid != 0)
			(*running)++;
	*waiting = a2_sched->waiting;
	LWLockRelease(a2_sched->lock);
	return true;
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
