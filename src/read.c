/*-------------------------------------------------------------------------
 *
 * read.c
 *	  a2_read(session_id, after_index, through_index, max_events): stored
 *	  events with after_index < idx <= through_index, ordered by index, the
 *	  first max_events of them.  NULL bounds are absent; the bounds become
 *	  an index range on the primary key.  Reads take no locks.
 *
 * IDENTIFICATION
 *	  src/read.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "json_out.h"
#include "spi_plans.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_read);

static A2Statement read_range = {
	.sql = "SELECT " A2_EVENT_COLUMNS
	"  FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.>) $2 AND e.idx OPERATOR(pg_catalog.<=) $3"
	" ORDER BY e.idx LIMIT $4",
	.session_param = 1, .nargs = 4, .argtypes = {TEXTOID, INT8OID, INT8OID, INT8OID}
};

static Jsonb *
read_events(const char *session_id, int64 after, int64 through, int64 limit,
			bool has_limit)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', has_limit ? ' ' : 'n'};
	uint64		n;
	Jsonb	   *result;

	values[0] = CStringGetTextDatum(session_id);
	values[1] = Int64GetDatum(after);
	values[2] = Int64GetDatum(through);
	values[3] = Int64GetDatum(limit);
	n = a2_exec(&read_range, values, nulls, true, SPI_OK_SELECT);

	a2j_begin_array(&js, NULL);
	for (uint64 r = 0; r < n; r++)
		a2j_event_row(&js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
	result = a2j_finish(a2j_end_array(&js), caller);
	a2_spi_end();
	return result;
}

Datum
a2_read(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	int64		after = -1;
	int64		through = PG_INT64_MAX;
	int64		limit = 0;

	if (!PG_ARGISNULL(1))
	{
		after = PG_GETARG_INT64(1);
		a2_check_min(after, 0, "after_index");
	}
	if (!PG_ARGISNULL(2))
	{
		through = PG_GETARG_INT64(2);
		a2_check_min(through, 0, "through_index");
	}
	if (!PG_ARGISNULL(3))
	{
		limit = PG_GETARG_INT32(3);
		a2_check_min(limit, 1, "max_events");
	}
	PG_RETURN_JSONB_P(read_events(session_id, after, through, limit,
								  !PG_ARGISNULL(3)));
}
