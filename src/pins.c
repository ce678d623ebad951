/*-------------------------------------------------------------------------
 *
 * pins.c
 *	  Releasing snapshot pins when an event finishes.
 *
 *	  A pin (a2_snapshot_pins) keeps a historical checkpoint alive while its
 *	  trigger event is unfinished.  When the event completes or is
 *	  dead-lettered its pins go, and so does every history row of the
 *	  session no pin references any more.  One statement: the pin delete is
 *	  a CTE whose effect the outer delete cannot see (same snapshot), so the
 *	  outer NOT EXISTS ignores this event's pins explicitly.
 *
 * IDENTIFICATION
 *	  src/pins.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "pins.h"
#include "spi_plans.h"

static A2Statement release_pins = {
	"WITH released AS ("
	"  DELETE FROM @extschema@.a2_snapshot_pins p"
	"   WHERE p.session_id = $1 AND p.event_index = $2"
	") DELETE FROM @extschema@.a2_snapshot_history h"
	"   WHERE h.session_id = $1"
	"     AND NOT EXISTS (SELECT 1 FROM @extschema@.a2_snapshot_pins p"
	"                      WHERE p.session_id = h.session_id"
	"                        AND p.reducer_name = h.reducer_name"
	"                        AND p.up_to_index = h.up_to_index"
	"                        AND p.event_index <> $2)",
	2, {TEXTOID, INT8OID}
};

void
a2_release_pins(const char *session_id, int64 event_index)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(session_id);
	values[1] = Int64GetDatum(event_index);
	a2_exec(&release_pins, values, NULL, false, SPI_OK_DELETE);
}
