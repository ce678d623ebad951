/*-------------------------------------------------------------------------
 *
 * pins.h
 *	  Snapshot pin release, shared by a2_complete and a dead-lettering
 *	  a2_fail.
 *
 * IDENTIFICATION
 *	  src/pins.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_PINS_H
#define A2_PINS_H

/*
 * Delete every pin held by event `event_index`, then every history
 * checkpoint of the session that no remaining pin references.  The caller
 * holds the session lock and the event's row lock (snapshot rows come last
 * in the lock order).
 */
extern void a2_release_pins(const char *session_id, int64 event_index);

#endif							/* A2_PINS_H */
