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
#include "call.h"
#include "json_out.h"
#include "layer.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_read_state);
PG_FUNCTION_INFO_V1(a2_read_states);

/*
 * The rows of a state read (the layers' read_states, layer.h): columns
 * 1-6 are the Event columns of A2_EVENT_COLUMNS (NULL on the one
 * checkpoint row per request), then ord, kind, head, snapshot index/state.
 */
#define COL_ORD			7
#define COL_KIND		8
#define COL_HEAD		9
#define COL_SNAP_INDEX	10
#define COL_SNAP_STATE	11




static void
alloc_requests(A2StateRequests *req, int count)
{
	int			n = Max(count, 1);

	req->count = count;
	req->sessions = palloc(sizeof(char *) * n);
	req->through = palloc(sizeof(int64) * n);
	req->snap_through = palloc(sizeof(int64) * n);
	req->through_null = palloc(sizeof(bool) * n);
	req->snap_null = palloc(sizeof(bool) * n);
}

static void emit_results(uint64 n, void *arg);


/* Emits one result object per request into the open array `js`. */
static void
run_requests(A2StateRequests *req, const char *reducer, A2Json *js)
{
	if (req->count == 0)
		return;
	a2_layer()->read_states(req, reducer, emit_results, js);
}

/* Turn the rows of one read_states/read_state_one result into objects. */
static void
emit_results(uint64 n, void *arg)
{
	A2Json	   *js = arg;
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
read_state_results(A2StateRequests *req, const char *reducer, bool single)
{
	A2Call		call;
	A2Json		js = NULL;
	JsonbValue *root;
	Jsonb	   *result;

	a2_call_begin(&call, NULL);
	a2j_begin_array(&js, NULL);
	run_requests(req, reducer, &js);
	root = a2j_end_array(&js);
	if (single)
	{
		/* the one element of the array */
		root = &root->val.array.elems[0];
	}
	result = a2j_finish(root, call.caller);
	a2_call_end(&call);
	return result;
}

static void
set_bounds(A2StateRequests *req, int i, bool has_through, int64 through,
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
	A2StateRequests req;
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
	A2StateRequests req;
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
