/*-------------------------------------------------------------------------
 *
 * scheduler_shmem.h
 *	  The scheduler's shared memory, as scheduler.c (the committing
 *	  backends), scheduler_launcher.c and scheduler_worker.c (a database's
 *	  scheduler) see it: one slot per database that has, or may have,
 *	  scheduled work, and the launcher's latch.  Not for other files:
 *	  scheduler.h is the scheduler's face to the rest of a2.
 *
 *	  Lock order: a2_sched->lock alone, held for a few instructions, never
 *	  while waiting or holding another a2 lock.  The launcher takes a
 *	  database's object lock (conditionally, as a session lock) and a
 *	  transaction's catalog locks only without it.
 *
 *	  Includes no other a2 header.
 *
 * IDENTIFICATION
 *	  src/scheduler_shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SCHEDULER_SHMEM_H
#define A2_SCHEDULER_SHMEM_H

#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/*
 * Databases with a scheduler slot at once: one per background worker the
 * server can run (max_worker_processes), at least A2_SCHED_MIN_DBS.  A
 * database that finds no slot waits in the launcher's list until one frees.
 */
#define A2_SCHED_MIN_DBS		8

/* an int64 due time as an unsigned key of the same order, and "none" */
#define A2_SCHED_REWIND_KEY(ms)		((uint64) (ms) ^ (UINT64CONST(1) << 63))
#define A2_SCHED_REWIND_MS(key)		((int64) ((key) ^ (UINT64CONST(1) << 63)))
#define A2_SCHED_NO_REWIND			PG_UINT64_MAX

typedef struct A2SchedDb
{
	Oid			dboid;			/* InvalidOid: a free slot */
	bool		wanted;			/* a scheduler should (still) run */
	bool		registered;		/* the last scheduler launched got this far */
	bool		probe;			/* started only to look (nothing known due) */
	pid_t		pid;			/* its scheduler, 0 while none runs */
	Latch	   *latch;			/* that scheduler's latch, or NULL */
	/*
	 * The earliest due time written by a transaction that committed since
	 * the scheduler last looked (A2_SCHED_REWIND_KEY of it, or
	 * A2_SCHED_NO_REWIND).  A transaction may commit after its due time,
	 * when a pass has already moved past it: the next pass goes back to
	 * it.  Set after the commit (an atomic minimum: the commit callback
	 * must not fail), taken and cleared by the scheduler before its pass.
	 */
	pg_atomic_uint64 rewind;
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
	int			waiting;		/* databases waiting for a worker, as the launcher last counted */
	int			ndbs;
	A2SchedDb	dbs[FLEXIBLE_ARRAY_MEMBER];
} A2SchedShared;

extern A2SchedShared *a2_sched;

/*
 * The slot of dboid, or a free one claimed for it; NULL when all are
 * taken.  Caller holds a2_sched->lock exclusively.
 */
extern A2SchedDb *a2_sched_db_slot(Oid dboid);

/* The entry points (bgw_function_name) */
extern PGDLLEXPORT void a2_sched_launcher_main(Datum arg);
extern PGDLLEXPORT void a2_scheduler_main(Datum arg);

#endif							/* A2_SCHEDULER_SHMEM_H */
