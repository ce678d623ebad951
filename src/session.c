/*-------------------------------------------------------------------------
 *
 * session.c
 *	  Reads of one session's state that several operations share.
 *
 * IDENTIFICATION
 *	  src/session.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "session.h"
#include "spi_plans.h"

static A2Statement session_pending = {
	.sql = "SELECT EXISTS (SELECT 1 FROM @extschema@.a2_events e"
	"                WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL)",
	.nargs = 1, .argtypes = {TEXTOID}
};

bool
a2_session_has_pending(const char *session_id)
{
	Datum		values[1] = {CStringGetTextDatum(session_id)};

	a2_exec_latest(&session_pending, values, NULL, SPI_OK_SELECT);
	return a2_col_bool(0, 1);
}
