/*-------------------------------------------------------------------------
 *
 * scheduler_worker.c
 *	  A database's scheduler: a dynamic background worker connected to its
 *	  database that announces each event when it falls due, in the order
 *	  (due time, session, index), from a cursor it keeps exactly, and
 *	  leaves when nothing is scheduled (scheduler.c has the design).
 *
 *	  Before each pass it fires the recurring schedules' due ticks
 *	  (a2_fire_schedules(), docs/time.md) in a transaction of its own, and
 *	  sleeps no longer than until the next tick of an active schedule.
 *
 *	  It goes back (rewinds its cursor) to the earliest due time that
 *	  transactions wrote since it last looked, because such a transaction
 *	  may commit after that time; and, when one of its database's prepared
 *	  transactions was committed, to the earliest due time prepared ones
 *	  wrote (unknown after its start: then to the beginning).  Either
 *	  announces again what fell due since: duplicates, never losses.
 *
 *	  It steps aside (exits, still wanted) when its database's object lock
 *	  is taken by DROP DATABASE, ALTER DATABASE ... RENAME or CREATE
 *	  DATABASE ... TEMPLATE, which wait for its sessions to end; the
 *	  launcher starts a new one afterwards.
 *
 *	  Lock order: see scheduler_shmem.h.
 *
 * IDENTIFICATION
 *	  src/scheduler_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "notify.h"
#include "scheduler_shmem.h"
#include "spi_util.h"
#include "statements.h"

/* due events announced per scheduler transaction */
#define A2_SCHED_BATCH			10000
/* how often a scheduler looks while its database has prepared transactions */
#define A2_SCHED_PREPARED_MS	250L
/*
 * The longest a scheduler sleeps: each pass checks whether DROP DATABASE
 * waits for it (it waits 5 s for other sessions to leave, then fails).
 */
#define A2_SCHED_MAX_SLEEP_MS	1000L
/*
 * Schedules fired per transaction: a transaction's commit (its
 * announcements, one per session) grows with it, and the first batch
 * commits without waiting for the rest.
 */
#define A2_SCHED_FIRE_BATCH		1000
/* how soon a scheduler looks again at a due schedule another pass holds */
#define A2_SCHED_LOCKED_RETRY_MS	50

/*
 * Due events after the cursor ($1, $3, $4) -- due time, then session and
 * index, so a batch that ends inside a run of equal due times goes on
 * with the rest of the run -- up to $2 (now).  $3 NULL: strictly after $1.
 */
enum
{
	DUE_SESSION_ID = 1,
	DUE_IDX,
	DUE_NOT_BEFORE
};

static A2Statement due_events = {
	.name = "scheduler.due_events",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_3,
				"SELECT e.session_id, e.idx, e.not_before FROM @extschema@.a2_events e"
				" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
				"   AND e.not_before OPERATOR(pg_catalog.>=) $1 AND e.not_before OPERATOR(pg_catalog.<=) $2"
				"   AND (e.not_before OPERATOR(pg_catalog.>) $1"
				"        OR e.session_id OPERATOR(pg_catalog.>) $3"
				"        OR (e.session_id OPERATOR(pg_catalog.=) $3 AND e.idx OPERATOR(pg_catalog.>) $4))"
				" ORDER BY e.not_before, e.session_id, e.idx LIMIT " CppAsString2(A2_SCHED_BATCH)),
	},
	.nparams = 4,
	.params = {A2_PARAM("after_due", INT8OID), A2_PARAM("now", INT8OID),
	A2_PARAM("after_session_id", TEXTOID), A2_PARAM("after_idx", INT8OID)},
	.columns = A2_COLUMNS("session_id", "idx", "not_before")
};

static A2Statement next_due = {
	.name = "scheduler.next_due",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_3,
				"SELECT e.not_before FROM @extschema@.a2_events e"
				" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
				"   AND e.not_before OPERATOR(pg_catalog.>) $1"
				" ORDER BY e.not_before LIMIT 1"),
		/* a wait without timeout (wait_gate.h's A2_WAIT_FOREVER) is no due time */
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT e.not_before FROM @extschema@.a2_events e"
				" WHERE e.not_before IS NOT NULL AND e.processed_at IS NULL AND e.failed_at IS NULL"
				"   AND e.not_before OPERATOR(pg_catalog.>) $1"
				"   AND e.not_before OPERATOR(pg_catalog.<) 8640000000000000"
				" ORDER BY e.not_before LIMIT 1"),
	},
	.nparams = 1, .params = {A2_PARAM("after", INT8OID)},
	.columns = A2_COLUMNS("not_before")
};

static A2Statement prepared_here = {
	.name = "scheduler.prepared_here",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT pg_catalog.count(*) AS prepared FROM pg_catalog.pg_prepared_xacts p"
				" WHERE p.database OPERATOR(pg_catalog.=) pg_catalog.current_database()"),
	},
	.nparams = 0,
	.columns = A2_COLUMNS("prepared")
};

/*
 * Recurring schedules (41-schedules.sql): fire every tick due now, in one
 * transaction of its own, and find the next tick of an active schedule.
 */
static A2Statement fire_schedules = {
	.name = "scheduler.fire_schedules",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(DISTINCT f.name) AS schedules FROM @extschema@.a2_fire_schedules($1) f"),
	},
	.nparams = 1, .params = {A2_PARAM("max_schedules", INT4OID)},
	.columns = A2_COLUMNS("schedules")
};

static A2Statement next_tick = {
	.name = "scheduler.next_tick",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT pg_catalog.min(s.next_tick_at) AS next_tick_at FROM @extschema@.a2_schedules s"
				" WHERE NOT s.paused"),
	},
	.nparams = 0,
	.columns = A2_COLUMNS("next_tick_at")
};

A2_STATEMENT_GROUP(scheduler, &due_events, &next_due, &prepared_here,
				   &fire_schedules, &next_tick);

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
	A2Call		call;
	A2Args		a;
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
	a2_call_begin(&call, NULL);
	if (!a2_has_not_before())
	{
		a2_call_end(&call);
		goto done;
	}
	res.installed = true;

	a2_args_init(&a, &due_events);
	a2_bind_int8(&a, 1, cur->through);
	a2_bind_int8(&a, 2, now);
	if (cur->has_session)
	{
		a2_bind_text(&a, 3, cur->session_id);
		a2_bind_int8(&a, 4, cur->idx);
	}
	else
	{
		a2_bind_null(&a, 3);
		a2_bind_null(&a, 4);
	}
	n = a2_exec(&a, true, SPI_OK_SELECT);
	initStringInfo(&payload);
	for (uint64 r = 0; r < n; r++)
	{
		resetStringInfo(&payload);
		a2_notify_payload(&payload, a2_col_text(r, DUE_SESSION_ID),
						  a2_col_int64(r, DUE_IDX));
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
	}
	if (n == A2_SCHED_BATCH)
	{
		/* a full batch: the next one starts after its last event exactly */
		cur->through = a2_col_int64(n - 1, DUE_NOT_BEFORE);
		strlcpy(cur->session_id, a2_col_text(n - 1, DUE_SESSION_ID), sizeof(cur->session_id));
		cur->idx = a2_col_int64(n - 1, DUE_IDX);
		cur->has_session = true;
		res.more = true;
	}
	else
	{
		cur->through = now;
		cur->has_session = false;
	}

	a2_args_init(&a, &next_due);
	a2_bind_int8(&a, 1, cur->through);
	if (a2_exec(&a, true, SPI_OK_SELECT) > 0)
		res.next_due = a2_col_int64(0, 1);	/* not_before */
	a2_args_init(&a, &prepared_here);
	a2_exec(&a, true, SPI_OK_SELECT);
	res.nprepared = a2_col_int64(0, 1); /* prepared */
	a2_call_end(&call);

done:
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return res;
}

/*
 * Fire up to A2_SCHED_FIRE_BATCH schedules' due ticks (a2_fire_schedules,
 * with the wall clock unless a2.now is set for the database) and return
 * the next tick of an active schedule, or -1; *more when the batch was
 * full.  Its own transaction: a failing schedule (e.g. its session's
 * appends are refused) is logged as a WARNING and retried at the next
 * wake, and does not hold back due announcements.
 */
static int64
fire_schedules_batch(bool *more)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile int64 next = -1;

	*more = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		if (OidIsValid(get_extension_oid("a2", true)))
		{
			A2Call		call;
			A2Args		a;
			bool		isnull;

			a2_call_begin(&call, NULL);
			if (a2_installed_objects() >= A2_OBJECTS_0_4)
			{
				pgstat_report_activity(STATE_RUNNING, "a2 scheduler: fire schedules");
				a2_args_init(&a, &fire_schedules);
				a2_bind_int4(&a, 1, A2_SCHED_FIRE_BATCH);
				a2_exec(&a, false, SPI_OK_SELECT);
				*more = DatumGetInt64(a2_col(0, 1, &isnull)) >= A2_SCHED_FIRE_BATCH;
				/* a new snapshot: the rows just moved on */
				CommandCounterIncrement();
				PopActiveSnapshot();
				PushActiveSnapshot(GetTransactionSnapshot());
				a2_args_init(&a, &next_tick);
				a2_exec(&a, true, SPI_OK_SELECT);
				next = DatumGetInt64(a2_col(0, 1, &isnull));
				if (isnull)
					next = -1;
				/* still due: another pass holds it (SKIP LOCKED); look again soon */
				else if (next <= a2_wall_clock_ms())
					next = a2_wall_clock_ms() + A2_SCHED_LOCKED_RETRY_MS;
			}
			a2_call_end(&call);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(WARNING,
				(errmsg("a2 scheduler: firing schedules failed (SQLSTATE %s): %s",
						unpack_sql_state(edata->sqlerrcode), edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 errhint("The scheduler tries again within a second.")));
		FreeErrorData(edata);
		*more = false;
		next = a2_wall_clock_ms() + A2_SCHED_MAX_SLEEP_MS;
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	return next;
}

/* Fire every due tick, a batch per transaction; the next tick, or -1. */
static int64
fire_schedules_pass(void)
{
	bool		more;
	int64		next;

	do
	{
		CHECK_FOR_INTERRUPTS();
		next = fire_schedules_batch(&more);
	} while (more);
	return next;
}

static A2SchedDb *
my_slot(void)
{
	for (int i = 0; i < a2_sched->ndbs; i++)
		if (a2_sched->dbs[i].dboid == MyDatabaseId)
			return &a2_sched->dbs[i];
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

	LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
	if ((slot = my_slot()) != NULL)
	{
		slot->registered = true;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
	}
	LWLockRelease(a2_sched->lock);

	for (;;)
	{
		PassResult	res;
		int64		tick;
		long		timeout;
		bool		inflight = false;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();

		/*
		 * A commit from now on sets wanted again, and our latch.  Take the
		 * earliest due time of transactions that committed since the last
		 * pass (our snapshot, taken after, sees them), and of those that
		 * prepared (used once one of them is committed).
		 */
		LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
		if ((slot = my_slot()) != NULL)
		{
			uint64		key = pg_atomic_exchange_u64(&slot->rewind, A2_SCHED_NO_REWIND);

			slot->wanted = false;
			inflight = pg_atomic_read_u32(&slot->inflight) > 0;
			if (key != A2_SCHED_NO_REWIND)
				rewind_cursor(&cur, A2_SCHED_REWIND_MS(key));
			prep_rewind = Min(prep_rewind, slot->prep_rewind_ms);
			slot->prep_rewind_ms = PG_INT64_MAX;
		}
		LWLockRelease(a2_sched->lock);

		tick = fire_schedules_pass();
		res = scheduler_pass(&cur);
		if (tick >= 0 && (res.next_due < 0 || tick < res.next_due))
			res.next_due = tick;

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
			LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
			if ((slot = my_slot()) != NULL)
			{
				slot->wanted = true;
				slot->pid = 0;
				slot->latch = NULL;
			}
			LWLockRelease(a2_sched->lock);
			proc_exit(0);
		}

		if (!res.installed || (res.next_due < 0 && res.nprepared == 0))
		{
			/*
			 * Nothing scheduled: exit, unless a commit wanted us meanwhile
			 * or is about to set our latch (it saw us at its pre-commit).
			 */
			bool		stay;

			LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
			slot = my_slot();
			stay = slot != NULL &&
				(slot->wanted || pg_atomic_read_u32(&slot->inflight) > 0);
			if (!stay && slot != NULL)
			{
				slot->pid = 0;
				slot->latch = NULL;
			}
			LWLockRelease(a2_sched->lock);
			if (!stay)
				proc_exit(0);
			/* the committing transaction sets our latch in a moment */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 A2_SCHED_PREPARED_MS, PG_WAIT_EXTENSION);
			continue;
		}

		/* work here: no longer a mere look */
		LWLockAcquire(a2_sched->lock, LW_EXCLUSIVE);
		if ((slot = my_slot()) != NULL)
			slot->probe = false;
		LWLockRelease(a2_sched->lock);

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
