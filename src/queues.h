/*-------------------------------------------------------------------------
 *
 * queues.h
 *	  The queues of a2_claim and a2_claim_next (0.4.0, queues.c): their
 *	  "queues" argument and the paused queues.  No lock of its own:
 *	  reading a2_queues (its size, or its rows) takes AccessShareLock on
 *	  it, at the point where its statement always took it.
 *
 * IDENTIFICATION
 *	  src/queues.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_QUEUES_H
#define A2_QUEUES_H

#include "fmgr.h"

/* The paused queues, sorted, as one text[] row (dispatch_walk.c reads it too). */
#define A2_PAUSED_QUEUES_SQL \
	"SELECT COALESCE(pg_catalog.array_agg(q.queue ORDER BY q.queue)," \
	"                '{}'::pg_catalog.text[]) AS queues" \
	"  FROM @extschema@.a2_queues q WHERE q.paused"

/*
 * A "queues text[]" argument: (Datum) 0 for NULL or an absent argument
 * (an older SQL declaration); else the validated array (22004 for a null
 * element, 22023 for an empty array, an empty name or one over 1024
 * bytes, or over 10000 names; 0A000 before 0.4.0 or in distributed mode).
 */
extern Datum a2_queues_arg(FunctionCallInfo fcinfo, int argno);

/* No queue was ever paused in this database: a2_queues has no page. */
extern bool a2_queues_never_paused(void);

/* The paused queues as text[] (empty before 0.4.0); inside SPI. */
extern Datum a2_paused_queues(void);

/* Whether a2_claim_next walks queues and priorities (0.4.0, one node). */
extern bool a2_dispatch_walk_enabled(void);

#endif							/* A2_QUEUES_H */
