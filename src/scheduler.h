/*-------------------------------------------------------------------------
 *
 * scheduler.h
 *	  Announcements of scheduled events when they fall due (docs/semantics.md, "Scheduling"),
 *	  with a2 preloaded: a launcher background worker and one scheduler
 *	  worker per database that has scheduled work.
 *
 *	  Offers: a2_scheduler_init() from _PG_init, and a2_sched_note_due(),
 *	  which an operation calls when it writes a not_before in the future.
 *
 *	  Lock order: the scheduler's one LWLock is taken alone, for a few
 *	  instructions, never while holding another a2 lock or waiting.
 *
 * IDENTIFICATION
 *	  src/scheduler.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SCHEDULER_H
#define A2_SCHEDULER_H

#include "postgres.h"

/* Register the launcher and the shared memory (when preloading). */
extern void a2_scheduler_init(void);

/*
 * The current transaction writes an event that falls due at due_ms (epoch
 * milliseconds).  When that is later than the wall clock and a2 is
 * preloaded, this database's scheduler is woken when the transaction
 * commits (started first if none runs).  Costs nothing otherwise.
 */
extern void a2_sched_note_due(int64 due_ms);

/*
 * For a2_notify_status(): the schedulers running now and the databases
 * that wait for a background worker (as the launcher last counted, at
 * most a second ago).  false without the preloaded library.
 */
extern bool a2_sched_status(int *running, int *waiting);

#endif							/* A2_SCHEDULER_H */
