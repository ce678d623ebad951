/*-------------------------------------------------------------------------
 *
 * walk_mark.h
 *	  Walk marks: where a2_claim_next's walk of the default queue's plain
 *	  work (a2_events_default_available) may start, and where its retryAt
 *	  probe may start, so that neither reads the dead index entries a
 *	  held snapshot keeps (docs/internals.md, "Walk marks").
 *
 *	  Per database and a2_events relfilenode, in shared memory: a mark
 *	  (no live entry has a key below it) and a gap (no live entry has a key
 *	  strictly between its two ends).  A walk that read the index from the
 *	  start records them; a write that may put an entry below the mark or
 *	  into the gap lowers them at its commit.  a2's own writes report the
 *	  keys they write (a2_walk_mark_lower); any other write to a2_events
 *	  (the TypeScript backend, a user's SQL or trigger, COPY, logical
 *	  replication's apply, or an a2 statement whose row a user BEFORE
 *	  trigger may change) drops both.  Marks may only be too low and gaps
 *	  too small, never the reverse.
 *
 *	  Only when a2 is preloaded (other backends' writes must reach the
 *	  marks); distributed mode keeps none.
 *
 *	  Locking: one LWLock ("a2_walk_mark"), taken alone for a few
 *	  instructions, never while waiting for anything else.
 *
 * IDENTIFICATION
 *	  src/walk_mark.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_WALK_MARK_H
#define A2_WALK_MARK_H

#include "postgres.h"

/* What a walk read: the state it starts from and may raise. */
typedef struct A2WalkMark
{
	bool		usable;			/* marks are kept for this database */
	Oid			relnode;		/* a2_events' relfilenode when read */
	bool		may_raise;		/* this transaction may record what it saw */
	uint64		seq;			/* the lowerings counted when read */
	int64		mark;			/* PG_INT64_MIN: none */
	bool		has_gap;
	int64		gap_lo;			/* no live entry in (gap_lo, gap_hi) */
	int64		gap_hi;
} A2WalkMark;

/* From _PG_init: shared memory, hooks and callbacks, when preloaded. */
extern void a2_walk_mark_init(void);

/*
 * A write of this transaction may make a2_events entries available from
 * key on (up to key_max): the marks are lowered at its commit (or its
 * PREPARE), and at once for its own walks.
 */
extern void a2_walk_mark_lower(int64 key, int64 key_max);

/* The same for a write whose keys are unknown: drops the marks. */
extern void a2_walk_mark_reset(void);

/*
 * Read the marks, the transaction's own pending writes applied.
 * may_raise: the transaction has written nothing and no prepared
 * transaction of the database is waiting (checked here); clean_before:
 * the caller's check that nothing was written before it started.
 */
extern void a2_walk_mark_read(A2WalkMark *m, bool clean_before);

/* A walk from m->mark found no live entry below mark. */
extern void a2_walk_mark_raise(const A2WalkMark *m, int64 mark);

/* A probe found no live entry in (lo, hi). */
extern void a2_walk_mark_set_gap(const A2WalkMark *m, int64 lo, int64 hi);

/* The transaction has written nothing yet (no transaction id). */
extern bool a2_walk_mark_clean(void);

#endif							/* A2_WALK_MARK_H */
