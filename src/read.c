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
#include "call.h"
#include "json_out.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_read);

#define READ_RANGE_SQL(columns) \
	"SELECT " columns \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.>) $2" \
	"   AND e.idx OPERATOR(pg_catalog.<=) $3" \
	" ORDER BY e.idx LIMIT $4"

static A2Statement read_range = {
	.name = "read.range",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, READ_RANGE_SQL(A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3, READ_RANGE_SQL(A2_EVENT_COLUMNS)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4, READ_RANGE_SQL(A2_EVENT_COLUMNS_0_4)),
	},
	.nparams = 4,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("after_index", INT8OID),
	A2_PARAM("through_index", INT8OID), A2_PARAM("max_events", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)
};

A2_STATEMENT_GROUP(read, &read_range);

static Jsonb *
read_events(const char *session_id, int64 after, int64 through, int64 limit,
			bool has_limit)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	uint64		n;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2_args_init(&a, &read_range);
	a2_bind(&a, 1, TEXTOID, call.session);
	a2_bind_int8(&a, 2, after);
	a2_bind_int8(&a, 3, through);
	if (has_limit)
		a2_bind_int8(&a, 4, limit);
	else
		a2_bind_null(&a, 4);
	n = a2_exec(&a, true, SPI_OK_SELECT);

	a2j_begin_array(&js, NULL);
	for (uint64 r = 0; r < n; r++)
		a2j_event_row(&js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
	result = a2j_finish(a2j_end_array(&js), call.caller);
	a2_call_end(&call);
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
