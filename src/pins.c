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
	.sql = "WITH " A2_RELEASE_PINS_SQL,
	.session_param = 1, .nargs = 2, .argtypes = {TEXTOID, INT8OID}
};

void
a2_release_pins(const char *session_id, int64 event_index)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(session_id);
	values[1] = Int64GetDatum(event_index);
	a2_exec_latest(&release_pins, values, NULL, SPI_OK_DELETE);
}
