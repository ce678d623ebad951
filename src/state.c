/*-------------------------------------------------------------------------
 *
 * state.c
 *	  a2_read_state and a2_read_states: one consistent read of a reducer
 *	  checkpoint plus the events after it.
 *
 *	  For each request the selected snapshot is the greatest checkpoint with
 *	  index <= snapshotThroughIndex (default throughIndex; unbounded when
 *	  both are absent) among the head (a2_snapshots) and the history rows;
 *	  headIndex reports the head even when an older checkpoint is selected.
 *	  The events are those after the selected checkpoint (or all) up to
 *	  throughIndex.  Every request is answered by one statement, hence one
 *	  MVCC snapshot; a2_read_state is the one-request case.  Each request's
 *	  checkpoint is a bounded backward index probe and its tail a LATERAL
 *	  index range scan on (session_id, idx) -- OFFSET 0 keeps the planner
 *	  from flattening it into a hash join over the whole table -- so the
 *	  cost follows the tail's length, never the table's or the history's.
 *
 * IDENTIFICATION
 *	  src/state.c
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

PG_FUNCTION_INFO_V1(a2_read_state);
PG_FUNCTION_INFO_V1(a2_read_states);

/*
 * Columns 1-6 are the Event columns of A2_EVENT_COLUMNS (NULL on the one
 * checkpoint row per request), then ord, kind, head, snapshot index/state.
 */
#define COL_ORD			7
#define COL_KIND		8
#define COL_HEAD		9
#define COL_SNAP_INDEX	10
#define COL_SNAP_STATE	11

static A2Statement read_states = {
	.sql = "WITH req AS ("
	"  SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3))"
	"    WITH ORDINALITY AS r(session_id, through, snap_through, ord)"
	"), sel AS MATERIALIZED ("
	"  SELECT r.ord, r.session_id, r.through, h.up_to_index AS head_index,"
	"         c.up_to_index AS snap_index, c.state AS snap_state"
	"    FROM req r"
	"    LEFT JOIN @extschema@.a2_snapshots h"
	"      ON h.session_id OPERATOR(pg_catalog.=) r.session_id AND h.reducer_name OPERATOR(pg_catalog.=) $4"
	"    LEFT JOIN LATERAL ("
	"      SELECT u.up_to_index, u.state FROM ("
	"        (SELECT s.up_to_index, s.state FROM @extschema@.a2_snapshots s"
	"          WHERE s.session_id OPERATOR(pg_catalog.=) r.session_id AND s.reducer_name OPERATOR(pg_catalog.=) $4"
	"            AND s.up_to_index OPERATOR(pg_catalog.<=) COALESCE(r.snap_through, 9223372036854775807))"
	"        UNION ALL"
	"        (SELECT x.up_to_index, x.state FROM @extschema@.a2_snapshot_history x"
	"          WHERE x.session_id OPERATOR(pg_catalog.=) r.session_id AND x.reducer_name OPERATOR(pg_catalog.=) $4"
	"            AND x.up_to_index OPERATOR(pg_catalog.<=) COALESCE(r.snap_through, 9223372036854775807)"
	"          ORDER BY x.up_to_index DESC LIMIT 1)"
	"      ) u ORDER BY u.up_to_index DESC LIMIT 1"
	"    ) c ON true"
	") "
	"SELECT NULL::pg_catalog.text, NULL::bigint, NULL::pg_catalog.text, NULL::pg_catalog.jsonb, NULL::pg_catalog.text, NULL::bigint,"
	"       sel.ord, 0, sel.head_index, sel.snap_index, sel.snap_state"
	"  FROM sel "
	"UNION ALL "
	"SELECT e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at,"
	"       sel.ord, 1, NULL, NULL, NULL"
	"  FROM sel CROSS JOIN LATERAL ("
	"    SELECT x.session_id, x.idx, x.event_type, x.payload, x.event_id, x.created_at"
	"      FROM @extschema@.a2_events x"
	"     WHERE x.session_id OPERATOR(pg_catalog.=) sel.session_id"
	"       AND x.idx OPERATOR(pg_catalog.>) COALESCE(sel.snap_index, -1)"
	"       AND x.idx OPERATOR(pg_catalog.<=) COALESCE(sel.through, 9223372036854775807)"
	"    OFFSET 0"
	"  ) e "
	"ORDER BY 7, 8, 2",
	.nargs = 4, .argtypes = {TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID, TEXTOID}
};

/*
 * Distributed mode: the same for one request ($1 session, $2 through, $3
 * snapshot-through, $4 reducer), every relation filtered on session_id =
 * $1, so Citus routes it whole to the session's shard (one snapshot
 * there).  a2_read_states runs it once per request, in request order.
 */
static A2Statement read_state_one = {
	.sql = "WITH sel AS MATERIALIZED ("
	"  SELECT (SELECT h.up_to_index FROM @extschema@.a2_snapshots h"
	"           WHERE h.session_id OPERATOR(pg_catalog.=) $1 AND h.reducer_name OPERATOR(pg_catalog.=) $4) AS head_index,"
	"         c.up_to_index AS snap_index, c.state AS snap_state"
	"    FROM (SELECT 1) AS one"
	"    LEFT JOIN LATERAL ("
	"      SELECT u.up_to_index, u.state FROM ("
	"        (SELECT s.up_to_index, s.state FROM @extschema@.a2_snapshots s"
	"          WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $4"
	"            AND s.up_to_index OPERATOR(pg_catalog.<=) COALESCE($3, 9223372036854775807))"
	"        UNION ALL"
	"        (SELECT x.up_to_index, x.state FROM @extschema@.a2_snapshot_history x"
	"          WHERE x.session_id OPERATOR(pg_catalog.=) $1 AND x.reducer_name OPERATOR(pg_catalog.=) $4"
	"            AND x.up_to_index OPERATOR(pg_catalog.<=) COALESCE($3, 9223372036854775807)"
	"          ORDER BY x.up_to_index DESC LIMIT 1)"
	"      ) u ORDER BY u.up_to_index DESC LIMIT 1"
	"    ) c ON true"
	") "
	"SELECT NULL::pg_catalog.text, NULL::bigint, NULL::pg_catalog.text, NULL::pg_catalog.jsonb, NULL::pg_catalog.text, NULL::bigint,"
	"       1, 0, sel.head_index, sel.snap_index, sel.snap_state"
	"  FROM sel "
	"UNION ALL "
	"SELECT e.session_id, e.idx, e.event_type, e.payload, e.event_id, e.created_at,"
	"       1, 1, NULL, NULL, NULL"
	"  FROM sel, @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1"
	"   AND e.idx OPERATOR(pg_catalog.>) COALESCE(sel.snap_index, -1)"
	"   AND e.idx OPERATOR(pg_catalog.<=) COALESCE($2, 9223372036854775807) "
	"ORDER BY 8, 2",
	.nargs = 4, .argtypes = {TEXTOID, INT8OID, INT8OID, TEXTOID}
};

typedef struct StateRequests
{
	int			count;
	char	  **sessions;
	int64	   *through;
	int64	   *snap_through;
	bool	   *through_null;
	bool	   *snap_null;
} StateRequests;

static void
alloc_requests(StateRequests *req, int count)
{
	int			n = Max(count, 1);

	req->count = count;
	req->sessions = palloc(sizeof(char *) * n);
	req->through = palloc(sizeof(int64) * n);
	req->snap_through = palloc(sizeof(int64) * n);
	req->through_null = palloc(sizeof(bool) * n);
	req->snap_null = palloc(sizeof(bool) * n);
}

static void emit_results(uint64 n, A2Json *js);

/* Distributed mode: one routed statement per request, in request order. */
static void
run_requests_routed(StateRequests *req, const char *reducer, A2Json *js)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[3] = CStringGetTextDatum(reducer);
	for (int i = 0; i < req->count; i++)
	{
		values[0] = CStringGetTextDatum(req->sessions[i]);
		values[1] = Int64GetDatum(req->through[i]);
		nulls[1] = req->through_null[i] ? 'n' : ' ';
		values[2] = Int64GetDatum(req->snap_through[i]);
		nulls[2] = req->snap_null[i] ? 'n' : ' ';
		emit_results(a2_exec(&read_state_one, values, nulls, true, SPI_OK_SELECT), js);
	}
}

/* Emits one result object per request into the open array `js`. */
static void
run_requests(StateRequests *req, const char *reducer, A2Json *js)
{
	Datum		values[4];

	if (req->count == 0)
		return;
	if (a2_distributed())
	{
		run_requests_routed(req, reducer, js);
		return;
	}
	values[0] = a2_text_array(req->sessions, req->count);
	values[1] = a2_int8_array(req->through, req->through_null, req->count);
	values[2] = a2_int8_array(req->snap_through, req->snap_null, req->count);
	values[3] = CStringGetTextDatum(reducer);
	emit_results(a2_exec(&read_states, values, NULL, true, SPI_OK_SELECT), js);
}

/* Turn the rows of one read_states/read_state_one result into objects. */
static void
emit_results(uint64 n, A2Json *js)
{
	bool		open = false;

	for (uint64 r = 0; r < n; r++)
	{
		bool		isnull;

		if (a2_col_int64(r, COL_KIND) == 0)
		{
			Datum		state;

			if (open)
			{
				a2j_end_array(js);
				a2j_end_object(js);
			}
			open = true;
			a2j_begin_object(js, NULL);
			(void) a2_col(r, COL_HEAD, &isnull);
			if (isnull)
				a2j_null(js, "headIndex");
			else
				a2j_int(js, "headIndex", a2_col_int64(r, COL_HEAD));
			state = a2_col(r, COL_SNAP_STATE, &isnull);
			(void) a2_col(r, COL_SNAP_INDEX, &isnull);
			if (isnull)
				a2j_null(js, "snapshot");
			else
			{
				a2j_begin_object(js, "snapshot");
				a2j_int(js, "index", a2_col_int64(r, COL_SNAP_INDEX));
				a2j_jsonb(js, "state", DatumGetJsonbP(state));
				a2j_end_object(js);
			}
			a2j_begin_array(js, "events");
		}
		else
			a2j_event_row(js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, false);
	}
	if (open)
	{
		a2j_end_array(js);
		a2j_end_object(js);
	}
}

static Jsonb *
read_state_results(StateRequests *req, const char *reducer, bool single)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	JsonbValue *root;
	Jsonb	   *result;

	a2j_begin_array(&js, NULL);
	run_requests(req, reducer, &js);
	root = a2j_end_array(&js);
	if (single)
	{
		/* the one element of the array */
		root = &root->val.array.elems[0];
	}
	result = a2j_finish(root, caller);
	a2_spi_end();
	return result;
}

static void
set_bounds(StateRequests *req, int i, bool has_through, int64 through,
		   bool has_snap, int64 snap)
{
	req->through_null[i] = !has_through;
	req->through[i] = through;
	/* snapshotThroughIndex defaults to throughIndex */
	if (!has_snap)
	{
		has_snap = has_through;
		snap = through;
	}
	req->snap_null[i] = !has_snap;
	req->snap_through[i] = snap;
}

Datum
a2_read_state(PG_FUNCTION_ARGS)
{
	StateRequests req;
	char	   *reducer;
	int64		through = 0,
				snap = 0;

	alloc_requests(&req, 1);
	req.sessions[0] = a2_name_arg(fcinfo, 0, "session_id");
	reducer = a2_name_arg(fcinfo, 1, "reducer_name");
	if (!PG_ARGISNULL(2))
	{
		through = PG_GETARG_INT64(2);
		a2_check_min(through, 0, "through_index");
	}
	if (!PG_ARGISNULL(3))
	{
		snap = PG_GETARG_INT64(3);
		a2_check_min(snap, 0, "snapshot_through_index");
	}
	set_bounds(&req, 0, !PG_ARGISNULL(2), through, !PG_ARGISNULL(3), snap);
	PG_RETURN_JSONB_P(read_state_results(&req, reducer, true));
}

Datum
a2_read_states(PG_FUNCTION_ARGS)
{
	StateRequests req;
	Jsonb	   *requests;
	int			count;
	char	   *reducer;
	static const char *const request_keys[] = {"sessionId", "throughIndex", "snapshotThroughIndex", NULL};

	requests = a2_array_arg(fcinfo, 0, "requests", &count);
	reducer = a2_name_arg(fcinfo, 1, "reducer_name");
	alloc_requests(&req, count);
	for (int i = 0; i < count; i++)
	{
		JsonbContainer *obj = a2_json_object_elem(&requests->root, i, "requests", NULL);
		JsonbValue	f;
		char		path[64];
		bool		has_through,
					has_snap;
		int64		through = 0,
					snap = 0;

		snprintf(path, sizeof(path), "requests[%d]", i);
		a2_json_check_keys(obj, request_keys, "requests", NULL, path);
		snprintf(path, sizeof(path), "requests[%d].sessionId", i);
		if (!a2_json_field(obj, "sessionId", &f))
			a2_invalid("requests", NULL, "%s is required.", path);
		req.sessions[i] = a2_json_name_field(&f, "requests", NULL, path);

		snprintf(path, sizeof(path), "requests[%d].throughIndex", i);
		has_through = a2_json_field(obj, "throughIndex", &f);
		if (has_through)
			through = a2_json_int_field(&f, 0, "requests", NULL, path);

		snprintf(path, sizeof(path), "requests[%d].snapshotThroughIndex", i);
		has_snap = a2_json_field(obj, "snapshotThroughIndex", &f);
		if (has_snap)
			snap = a2_json_int_field(&f, 0, "requests", NULL, path);
		set_bounds(&req, i, has_through, through, has_snap, snap);
	}
	PG_RETURN_JSONB_P(read_state_results(&req, reducer, false));
}
