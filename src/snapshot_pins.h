/*-------------------------------------------------------------------------
 *
 * snapshot_pins.h
 *	  Snapshot pin release, shared by a2_complete, a dead-lettering
 *	  a2_fail and a2_cancel.
 *
 * IDENTIFICATION
 *	  src/snapshot_pins.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SNAPSHOT_PINS_H
#define A2_SNAPSHOT_PINS_H

/*
 * Delete every pin held by event `event_index`, then every history
 * checkpoint of the session that no remaining pin references.  The caller
 * holds the session lock and the event's row lock (snapshot rows come last
 * in the lock order).
 */
extern void a2_release_pins(const char *session_id, int64 event_index);

/*
 * Delete the pins of every event in `indexes` (an int8[] Datum), then the
 * session's history checkpoints no remaining pin references: a2_cancel's
 * release for the events it cancels, in one statement.  Same lock order.
 */
extern void a2_release_pins_of(Datum session_id, Datum indexes);

/*
 * The tail of a statement (after "WITH ..., ") that releases the pins of
 * the events in session $1 that `is` / `is_not` select from $2 (one index,
 * or an array through ANY / ALL) and deletes the session's history
 * checkpoints no other pin references.  The pin delete is a CTE whose
 * effect the outer delete cannot see (one snapshot), so the events' own
 * pins are excluded explicitly.
 */
#define A2_RELEASE_PINS_SQL_FOR(is, is_not) \
	"released AS (" \
	"  DELETE FROM @extschema@.a2_snapshot_pins p" \
	"   WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.event_index " is \
	") DELETE FROM @extschema@.a2_snapshot_history h" \
	"   WHERE h.session_id OPERATOR(pg_catalog.=) $1" \
	"     AND NOT EXISTS (SELECT 1 FROM @extschema@.a2_snapshot_pins p" \
	"                      WHERE p.session_id OPERATOR(pg_catalog.=) h.session_id" \
	"                        AND p.reducer_name OPERATOR(pg_catalog.=) h.reducer_name" \
	"                        AND p.up_to_index OPERATOR(pg_catalog.=) h.up_to_index" \
	"                        AND p.event_index " is_not ")"

/* ... of event $2 alone; a2_complete embeds it in its finishing statement */
#define A2_RELEASE_PINS_SQL \
	A2_RELEASE_PINS_SQL_FOR("OPERATOR(pg_catalog.=) $2", "OPERATOR(pg_catalog.<>) $2")

#endif							/* A2_SNAPSHOT_PINS_H */
