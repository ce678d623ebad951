/*-------------------------------------------------------------------------
 *
 * inspect.h
 *	  Read-only inspection for dashboards and devtools (the TypeScript
 *	  0.5 A2StoreInspection): a2_list_sessions pages StoredSessionSummary
 *	  objects in session-id order, a2_list_snapshots lists a session's
 *	  reducer checkpoints.  Event pages are a2_read's job.
 *
 *	  Locking: none.  Both read with the caller's snapshot and take no row
 *	  or advisory locks, so they never block a worker.
 *
 * IDENTIFICATION
 *	  src/inspect.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_INSPECT_H
#define A2_INSPECT_H

#include "fmgr.h"

extern Datum a2_list_sessions(PG_FUNCTION_ARGS);
extern Datum a2_list_snapshots(PG_FUNCTION_ARGS);

#endif							/* A2_INSPECT_H */
