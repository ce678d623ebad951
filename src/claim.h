/*-------------------------------------------------------------------------
 *
 * claim.h
 *	  The claim rule of a2_claim, shared with a2_claim_next.
 *
 *	  Lock order: claims take row locks only (the eligible rows of one
 *	  session, in index order), never the session lock.
 *
 * IDENTIFICATION
 *	  src/claim.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CLAIM_H
#define A2_CLAIM_H

#include "postgres.h"

typedef struct A2ClaimArgs
{
	char	   *session_id;
	char	   *holder;
	int64		now_ms;
	int64		expires_ms;
	Datum		exclude;		/* bigint[] of excluded indexes */
	Datum		queues;			/* text[] of the queues served; 0: every queue */
	Datum		paused;			/* text[] of the paused queues (skipped) */
	bool		limits_denied;	/* out: a limit skipped an event (accumulates) */
	int64		limits_retry_at;	/* out: when a skipped key may admit (min, accumulates) */
} A2ClaimArgs;

/* Set the dispatch fields to "every queue, none paused, nothing denied". */
extern void a2_claim_args_init_dispatch(A2ClaimArgs *args);

/*
 * Claim every eligible event of args->session_id (docs/semantics.md, "Work: claims, leases and attempts"):
 * unprocessed, not dead-lettered, lane-ready, lease absent or expired at
 * now_ms, not excluded.  With skip_locked, rows another transaction has
 * locked are passed over instead of waited for.  Without it (a2_claim)
 * the scan starts at the session's low-water mark (lowwater.h).  Runs inside SPI; leaves
 * the claimed rows (A2_EVENT_COLUMNS, by index) in SPI_tuptable and
 * returns their number.
 */
extern uint64 a2_claim_session(A2ClaimArgs *args, bool skip_locked);

#endif							/* A2_CLAIM_H */
