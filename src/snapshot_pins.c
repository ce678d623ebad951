/*-------------------------------------------------------------------------
 *
 * snapshot_pins.c
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
 *	  src/snapshot_pins.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "snapshot_pins.h"
#include "spi_util.h"
#include "statements.h"

static A2Statement release_pins = {
	.name = "snapshot_pins.release",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, "WITH " A2_RELEASE_PINS_SQL),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_index", INT8OID)},
	.session_param = 1
};

static A2Statement release_pins_of = {
	.name = "snapshot_pins.release_of",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"WITH " A2_RELEASE_PINS_SQL_FOR("OPERATOR(pg_catalog.=) ANY ($2)",
												"OPERATOR(pg_catalog.<>) ALL ($2)")),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID)},
	.session_param = 1
};

A2_STATEMENT_GROUP(snapshot_pins, &release_pins, &release_pins_of);

void
a2_release_pins(const char *session_id, int64 event_index)
{
	A2Args		a;

	a2_args_init(&a, &release_pins);
	a2_bind_text(&a, 1, session_id);
	a2_bind_int8(&a, 2, event_index);
	a2_exec_latest(&a, SPI_OK_DELETE);
}

void
a2_release_pins_of(Datum session_id, Datum indexes)
{
	A2Args		a;

	a2_args_init(&a, &release_pins_of);
	a2_bind(&a, 1, TEXTOID, session_id);
	a2_bind(&a, 2, INT8ARRAYOID, indexes);
	a2_exec_latest(&a, SPI_OK_DELETE);
}
