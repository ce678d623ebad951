/*-------------------------------------------------------------------------
 *
 * cancel.c
 *	  a2_cancel(session_id, indexes = NULL, reason = NULL): cancel
 *	  unfinished events (docs/functions.md, "a2_cancel").
 *
 *	  What it offers.  Every listed event (NULL: every unfinished event of
 *	  the session) that is unfinished -- pending, scheduled, leased or
 *	  dead-lettered -- becomes cancelled: processed_at and cancelled_at are
 *	  set to the store clock's now, cancel_reason to `reason`, and
 *	  processed_by_attempt stays NULL.  Cancelled is terminal: every claim
 *	  path and every partial index already leaves out rows with a
 *	  processed_at, so the event is never claimed again; a2_complete and
 *	  a2_fail of its live attempt answer "superseded" (processed, by no
 *	  attempt), a2_renew lists it as superseded, and a2_redrive refuses it.
 *	  The lease is cleared; failed_at and the failure history are kept
 *	  (an event cancelled after its dead-lettering shows both; cancelledAt
 *	  decides its state).  A lane advances past a cancelled head exactly as
 *	  past a completed one (complete.c's finish_event): the oldest
 *	  unfinished event of the lane becomes lane-ready.  The event's
 *	  snapshot pins are released, as on completion.  A cancel that changed
 *	  something notifies like a redrive (the session's greatest index), so
 *	  listeners look at the session again.  Events already
 *	  finished (completed, settled, cancelled before) are left alone, so a
 *	  second cancel writes nothing and returns nothing.
 *
 *	  Result: {"cancelled": [StoredEvent, ...]}, the events this call
 *	  cancelled, in index order.  A listed index with no event is Z2003 and
 *	  nothing is written.  The columns are 0.4.0's: over older objects the
 *	  call is refused (0A000) before it writes.
 *
 *	  Lock order (docs/internals.md): the session lock, then the event rows
 *	  in index order (FOR UPDATE), then snapshot rows (pin release).  A
 *	  claim takes the session lock too; a2_claim_next's SKIP LOCKED walk
 *	  passes over the locked rows and re-checks processed_at on the rows it
 *	  locks, so a cancel and a claim never both win an event.
 *
 * IDENTIFICATION
 *	  src/cancel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "extension.h"
#include "json_out.h"
#include "key_park.h"
#include "notify.h"
#include "snapshot_pins.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_cancel);

/* A cancel reason is free text, bounded like a name. */
#define MAX_REASON_BYTES	A2_MAX_NAME_BYTES

enum
{
	LOCK_IDX = 1,
	LOCK_UNFINISHED
};

#define LOCK_COLUMNS .columns = A2_COLUMNS("idx", "unfinished")

/* The listed rows, in index order; missing indexes are found in C. */
static A2Statement lock_listed = {
	.name = "cancel.lock_listed",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4,
				"SELECT e.idx, e.processed_at IS NULL AS unfinished"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"
				" ORDER BY e.idx FOR UPDATE"),
	},
	.nparams = 2,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID)},
	.session_param = 1, LOCK_COLUMNS
};

/* Every unfinished row of the session (a2_events_unprocessed). */
static A2Statement lock_unfinished = {
	.name = "cancel.lock_unfinished",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4,
				"SELECT e.idx, true AS unfinished"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
				" ORDER BY e.idx FOR UPDATE"),
	},
	.nparams = 1,
	.params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, LOCK_COLUMNS
};

/*
 * Cancel the locked unfinished rows.  $5 and $6, the least and greatest
 * index, make the primary-key range the index condition (claim.c says why
 * an array alone is not enough for a generic plan).
 */
static A2Statement mark_cancelled = {
	.name = "cancel.mark",
	.walk_keys = true,			/* cancelled rows leave the index */
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4,
				"WITH cancelled AS ("
				"  UPDATE @extschema@.a2_events e SET"
				"    processed_at = $3, cancelled_at = $3, cancel_reason = $4,"
				"    lane_ready = false, claim_holder = NULL, claim_expires_at = NULL"
				"   WHERE e.session_id OPERATOR(pg_catalog.=) $1"
				"     AND e.idx OPERATOR(pg_catalog.>=) $5 AND e.idx OPERATOR(pg_catalog.<=) $6"
				"     AND e.idx OPERATOR(pg_catalog.=) ANY ($2) AND e.processed_at IS NULL"
				"  RETURNING " A2_EVENT_COLUMNS
				") SELECT * FROM cancelled ORDER BY idx"),
	},
	.nparams = 6,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID),
		A2_PARAM("now", INT8OID), A2_PARAM("reason", TEXTOID),
	A2_PARAM("lo", INT8OID), A2_PARAM("hi", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)
};

/*
 * Lanes advance as on completion: in each listed lane that has no
 * lane-ready unfinished event left, the oldest unfinished one becomes
 * lane-ready (a2_events_lane_pending).  Runs after mark_cancelled, whose
 * writes it sees.
 */
static A2Statement promote_lanes = {
	.name = "cancel.promote_lanes",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"UPDATE @extschema@.a2_events e SET lane_ready = true"
				"  FROM (SELECT pg_catalog.min(p.idx) AS idx FROM @extschema@.a2_events p"
				"         WHERE p.session_id OPERATOR(pg_catalog.=) $1"
				"           AND p.lane OPERATOR(pg_catalog.=) ANY ($2) AND p.processed_at IS NULL"
				"         GROUP BY p.lane HAVING NOT pg_catalog.bool_or(p.lane_ready)) h"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) h.idx"
				"   AND NOT e.lane_ready"),
	},
	.nparams = 2,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("lanes", TEXTARRAYOID)},
	.session_param = 1
};

static A2Statement max_index = {
	.name = "cancel.max_index",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT e.idx AS max_index FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 ORDER BY e.idx DESC LIMIT 1"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("max_index")
};

A2_STATEMENT_GROUP(cancel, &lock_listed, &lock_unfinished, &mark_cancelled,
				   &promote_lanes, &max_index);

typedef struct CancelArgs
{
	char	   *session_id;
	int64	   *indexes;		/* sorted, unique; NULL: every unfinished */
	int			count;
	char	   *reason;			/* NULL: none */
	int64		now_ms;
} CancelArgs;

/* 0A000 unless the installed objects have 0.4.0's cancelled_at. */
static void
require_cancel_columns(void)
{
	if (a2_installed_objects() < A2_OBJECTS_0_4)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a2_cancel needs the a2 0.4.0 tables"),
				 errdetail("A cancellation is stored in a2_events.cancelled_at, which this database does not have yet; nothing was written."),
				 errhint("Run ALTER EXTENSION a2 UPDATE.")));
}

/*
 * Lock the rows to cancel (session lock held) and collect the unfinished
 * ones.  A listed index without an event is Z2003, before any write.
 */
static int
lock_targets(CancelArgs *args, Datum session, int64 **targets)
{
	A2Args		a;
	uint64		n;
	int			ntargets = 0;

	if (args->indexes != NULL)
	{
		a2_args_init(&a, &lock_listed);
		a2_bind(&a, 1, TEXTOID, session);
		a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(args->indexes, NULL, args->count));
	}
	else
	{
		a2_args_init(&a, &lock_unfinished);
		a2_bind(&a, 1, TEXTOID, session);
	}
	n = a2_exec_latest(&a, SPI_OK_SELECT);
	*targets = palloc(sizeof(int64) * Max(n, 1));

	/* both the rows and the listed indexes are sorted: merge them */
	for (uint64 r = 0, k = 0; r < n; r++, k++)
	{
		int64		idx = a2_col_int64(r, LOCK_IDX);

		if (args->indexes != NULL && args->indexes[k] != idx)
			break;
		if (a2_col_bool(r, LOCK_UNFINISHED))
			(*targets)[ntargets++] = idx;
	}
	if (args->indexes != NULL && n != (uint64) args->count)
	{
		int			k = 0;

		/* the first listed index that has no row */
		while ((uint64) k < n && args->indexes[k] == a2_col_int64(k, LOCK_IDX))
			k++;
		ereport(ERROR,
				(errcode(ERRCODE_A2_NOT_FOUND),
				 errmsg("no event at index %lld in session \"%s\"",
						(long long) args->indexes[k], args->session_id),
				 errdetail("Nothing was cancelled.")));
	}
	return ntargets;
}

static Jsonb *
cancel_events(CancelArgs *args)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	int64	   *targets;
	int			ntargets;
	uint64		n = 0;
	SPITupleTable *rows = NULL;
	Jsonb	   *result;

	a2_call_begin(&call, args->session_id);
	require_cancel_columns();
	a2_lock_session(args->session_id);
	ntargets = lock_targets(args, call.session, &targets);

	if (ntargets > 0)
	{
		char	  **lanes = palloc(sizeof(char *) * ntargets);
		int			nlanes = 0;
		Datum		target_array = a2_int8_array(targets, NULL, ntargets);

		a2_args_init(&a, &mark_cancelled);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_bind(&a, 2, INT8ARRAYOID, target_array);
		a2_bind_int8(&a, 3, args->now_ms);
		a2_bind_text(&a, 4, args->reason);
		a2_bind_int8(&a, 5, targets[0]);
		a2_bind_int8(&a, 6, targets[ntargets - 1]);
		n = a2_exec_latest(&a, SPI_OK_SELECT);
		if (n != (uint64) ntargets)
			elog(ERROR, "cancel of %d locked events in session \"%s\" updated %llu",
				 ntargets, args->session_id, (unsigned long long) n);
		rows = SPI_tuptable;
		for (uint64 r = 0; r < n; r++)
		{
			char	   *lane = a2_col_text(r, A2C_LANE);
			char	   *key = a2_col_text(r, A2C_CONCURRENCY_KEY);

			if (lane != NULL)
				lanes[nlanes++] = lane;
			if (key != NULL)
				a2_key_park_release(key);	/* a lease it had ends */
		}

		if (nlanes > 0)
		{
			a2_walk_mark_reset();	/* a lane's next event: its own key */
			a2_args_init(&a, &promote_lanes);
			a2_bind(&a, 1, TEXTOID, call.session);
			a2_bind(&a, 2, TEXTARRAYOID, a2_text_array(lanes, nlanes));
			a2_exec_latest(&a, SPI_OK_UPDATE);
		}

		a2_release_pins_of(call.session, target_array);

		/*
		 * The session changed (and a lane may have work again): wake
		 * listeners as a redrive does, with the session's greatest index.
		 */
		a2_args_init(&a, &max_index);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_exec_latest(&a, SPI_OK_SELECT);
		a2_notify_session(args->session_id, a2_col_int64(0, 1));
	}

	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "cancelled");
	for (uint64 r = 0; r < n; r++)
		a2j_event_row(&js, NULL, rows->vals[r], rows->tupdesc, true);
	a2j_end_array(&js);
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * indexes: NULL means every unfinished event; else a one-dimensional array
 * of at most A2_MAX_LIST_ITEMS distinct indexes >= 1, no nulls (an empty
 * one cancels nothing).  Returned sorted.
 */
static int64 *
indexes_arg(FunctionCallInfo fcinfo, int argno, int *count)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64	   *indexes;

	*count = 0;
	if (PG_ARGISNULL(argno))
		return NULL;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"indexes\" must be a one-dimensional array")));
	deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	if (n > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("argument \"indexes\" has %d element; the limit is %d",
							   "argument \"indexes\" has %d elements; the limit is %d",
							   n, n, A2_MAX_LIST_ITEMS)));
	indexes = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"indexes\" must not contain nulls")));
		indexes[i] = DatumGetInt64(elems[i]);
		a2_check_min(indexes[i], 1, "indexes");
	}
	qsort(indexes, n, sizeof(int64), cmp_int64);
	for (int i = 1; i < n; i++)
		if (indexes[i - 1] == indexes[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"indexes\" lists index %lld more than once",
							(long long) indexes[i])));
	*count = n;
	return indexes;
}

Datum
a2_cancel(PG_FUNCTION_ARGS)
{
	CancelArgs	args;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.indexes = indexes_arg(fcinfo, 1, &args.count);
	args.reason = NULL;
	if (!PG_ARGISNULL(2))
	{
		text	   *t = PG_GETARG_TEXT_PP(2);

		if (VARSIZE_ANY_EXHDR(t) > MAX_REASON_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"reason\" is longer than %d bytes",
							MAX_REASON_BYTES)));
		args.reason = text_to_cstring(t);
	}
	args.now_ms = a2_clock_now_ms();
	PG_RETURN_JSONB_P(cancel_events(&args));
}
