/*-------------------------------------------------------------------------
 *
 * events.h
 *	  Inserting a validated batch of events and reading stored ones back:
 *	  what a2_append and a2_complete's returned events share.  The caller
 *	  holds the session lock (layer.h's lock order) and is inside SPI.
 *
 * IDENTIFICATION
 *	  src/events.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_EVENTS_H
#define A2_EVENTS_H

#include "json_out.h"
#include "validate.h"

/*
 * Insert a validated batch after the session's greatest index, with lane
 * readiness and `settled` (docs/semantics.md, "append"), and push each new StoredEvent
 * into the open array `js`.  The caller holds the session lock.  Events
 * without an id get a generated one.  When had_pending is not NULL, sets
 * it to whether the session had an unprocessed event before.  Records the
 * NOTIFY.
 */
extern void a2_insert_events(const char *session_id, A2EventInput *events,
							 int count, int64 now_ms, A2Json *js,
							 bool *had_pending);


/*
 * Stored events with the given ids, in the given order (ids that do not
 * exist are skipped).  Any session's in single-node mode; only session_id's
 * in distributed mode, where ids are unique per session.  Leaves them in SPI_tuptable, columns
 * A2_EVENT_COLUMNS; returns the count.
 */
extern uint64 a2_fetch_events_by_ids(const char *session_id, char **ids,
									  int count);

/* Whether stored row `row` of SPI_tuptable matches a batch element. */
extern bool a2_stored_matches(uint64 row, const A2EventInput *ev, bool check_cause);

/* Raise 0A000 unless a2_events has 0.3.0's not_before column. */
extern void a2_require_not_before(void);

/* Raise 0A000 unless queue/priority/concurrencyKey can be stored (0.4.0, single node). */
extern void a2_require_dispatch(void);

#endif							/* A2_EVENTS_H */
