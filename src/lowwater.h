/*-------------------------------------------------------------------------
 *
 * lowwater.h
 *	  Claim low-water marks: per session, an index below which every event
 *	  is processed, so that a claim's scan of the session's claimable
 *	  events may start there while a snapshot keeps dead versions
 *	  (docs/internals.md, "Claim low-water marks").
 *
 *	  A mark may only be too low, never too high.  Marks live in shared
 *	  memory when a2 is preloaded (one table for the server, guarded by the
 *	  LWLock tranche "a2_low_water", taken alone and never while waiting for
 *	  anything else), else in the backend.  The table is small and
 *	  approximate: a session whose slot another session took simply has no
 *	  mark.
 *
 * IDENTIFICATION
 *	  src/lowwater.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_LOWWATER_H
#define A2_LOWWATER_H

#include "postgres.h"

/* From _PG_init: the shared-memory request when a2 is preloaded. */
extern void a2_low_water_init(void);

/* Marks are kept on one server only; distributed mode keeps none. */
extern bool a2_low_water_enabled(void);

/*
 * The mark recorded for session_id in this database's a2_events, with the
 * anchor it was recorded with (a2_low_water_anchor of the session then).
 * false: none.
 */
extern bool a2_low_water_get(const char *session_id, int64 *mark, uint64 *anchor);

/*
 * Record mark for session_id: the least index of an unprocessed event
 * that a snapshot taken by a transaction that has written nothing saw
 * (the caller checks both).  A lower mark with the same anchor is kept.
 */
extern void a2_low_water_set(const char *session_id, int64 mark, uint64 anchor);

#endif							/* A2_LOWWATER_H */
