/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  a2_claim(session_id, holder, ttl_ms, expires_at, exclude_indexes):
 *	  lease every eligible event of a session at once.
 *
 *	  Eligible: unprocessed, not dead-lettered, lane-ready, lease absent or
 *	  expired (claim_expires_at <= now), not excluded.  One statement locks
 *	  the eligible rows in index order (FOR UPDATE, so a concurrent claimer
 *	  waits and then re-checks the rows, never claiming the same attempt)
 *	  and bumps their attempt.  Claim takes row locks only, never the
 *	  session lock.  The update finds its rows by primary key, never by
 *	  joining the session's rows: a generic plan that hashes the whole
 *	  session would make a claim cost the session's length.  Its index
 *	  condition is the range between the least and greatest eligible index
 *	  (one aggregate over the locked rows); the array of their indexes
 *	  alone (idx = ANY (ARRAY (...))) is not used as an index condition
 *	  when the statistics say sessions are short, and the generic plan
 *	  then read every row of the session through a bitmap scan (3,000 rows
 *	  for one claim in a W4 session after 1,500 cycles; bench/RESULTS.md,
 *	  "Bytes per event, time-ordered ids, long transactions").
 *
 *	  With direct writes (direct.h) on one server, a SELECT locks the same
 *	  rows by the same rule and returns their versions, and each is then
 *	  updated without the executor (docs/internals.md, "Direct writes").
 *
 * IDENTIFICATION
 *	  src/claim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "call.h"
#include "claim.h"
#include "clock.h"
#include "direct.h"
#include "queues.h"
#include "json_out.h"
#include "limits.h"
#include "lowwater.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_claim);

/*
 * The claim statement.  a2_claim_next runs the same text with SKIP LOCKED,
 * so both follow one rule; only whether a locked row is waited for differs.
 * Objects older than 0.3.0 have no not_before (no delayed events).
 *
 * The rule itself, CLAIM_WHERE, names its parameters, so that the direct
 * claim's locking SELECT below states the very same rule with its own
 * numbering: the session, now, the excluded indexes, the low-water index.
 */
#define CLAIM_WHERE(session, now, exclude, low_water, due, dispatch) \
	"   WHERE e.session_id OPERATOR(pg_catalog.=) " session " AND e.idx OPERATOR(pg_catalog.>=) " low_water \
	"     AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.lane_ready" \
	"     AND (e.claim_expires_at IS NULL OR e.claim_expires_at OPERATOR(pg_catalog.<=) " now ")" \
	due \
	"     AND e.idx OPERATOR(pg_catalog.<>) ALL (" exclude ")" \
	dispatch

#define CLAIM_ELIGIBLE_SQL(lock_clause, due, columns) \
	CLAIM_ELIGIBLE_SQL_X(lock_clause, due, "", columns)
#define CLAIM_ELIGIBLE_SQL_X(lock_clause, due, dispatch, columns) \
	"WITH eligible AS MATERIALIZED (" \
	"  SELECT e.idx FROM @extschema@.a2_events e" \
	CLAIM_WHERE("$1", "$2", "$5", "$8", due, dispatch) \
	"   ORDER BY e.idx " lock_clause \
	"), claimed AS (" \
	"  UPDATE @extschema@.a2_events e SET" \
	"    attempt_count = e.attempt_count OPERATOR(pg_catalog.+) 1," \
	"    first_claimed_at = COALESCE(e.first_claimed_at, $2)," \
	"    last_claimed_at = $2, claim_holder = $3, claim_expires_at = $4" \
	"    FROM (SELECT pg_catalog.min(eligible.idx) AS lo, pg_catalog.max(eligible.idx) AS hi," \
	"                 pg_catalog.array_agg(eligible.idx) AS ids FROM eligible) b" \
	"   WHERE e.session_id OPERATOR(pg_catalog.=) $1" \
	"     AND e.idx OPERATOR(pg_catalog.>=) b.lo AND e.idx OPERATOR(pg_catalog.<=) b.hi" \
	"     AND e.idx OPERATOR(pg_catalog.=) ANY (b.ids)" \
	"  RETURNING " columns \
	") SELECT * FROM claimed ORDER BY idx"

#define CLAIM_DUE_AT(now) \
	"     AND (e.not_before IS NULL OR e.not_before OPERATOR(pg_catalog.<=) " now ")"
#define CLAIM_DUE CLAIM_DUE_AT("$2")

/*
 * 0.4.0: only the queues served (NULL: all) and not paused; an event with
 * a concurrency key only within its key's limits (limits.c), tested last
 * (a2_admit costs 10000), after every other condition.
 */
#define CLAIM_DISPATCH_AT(now, queues, paused) \
	"     AND (" queues "::pg_catalog.text[] IS NULL OR COALESCE(e.queue, 'default') OPERATOR(pg_catalog.=) ANY (" queues "))" \
	"     AND NOT (COALESCE(e.queue, 'default') OPERATOR(pg_catalog.=) ANY (" paused "))" \
	"     AND (e.concurrency_key IS NULL OR @extschema@.a2_admit(e.concurrency_key, " now "))"
#define CLAIM_DISPATCH CLAIM_DISPATCH_AT("$2", "$6", "$7")

#define CLAIM_PARAMS \
	.nparams = 8, .params = { \
		A2_PARAM("session_id", TEXTOID), A2_PARAM("now", INT8OID), \
		A2_PARAM("holder", TEXTOID), A2_PARAM("expires_at", INT8OID), \
		A2_PARAM("exclude_indexes", INT8ARRAYOID), A2_PARAM("queues", TEXTARRAYOID), \
		A2_PARAM("paused_queues", TEXTARRAYOID), A2_PARAM("low_water", INT8OID)}, \
	.session_param = 1, .columns = A2_COLUMNS(A2_EVENT_COLUMN_NAMES)

static A2Statement claim_eligible = {
	.name = "claim.eligible",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, CLAIM_ELIGIBLE_SQL("FOR UPDATE", "", A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3, CLAIM_ELIGIBLE_SQL("FOR UPDATE", CLAIM_DUE, A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4, CLAIM_ELIGIBLE_SQL_X("FOR UPDATE", CLAIM_DUE, CLAIM_DISPATCH, A2_EVENT_COLUMNS)),
	},
	CLAIM_PARAMS
};

static A2Statement claim_eligible_skip_locked = {
	.name = "claim.eligible_skip_locked",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, CLAIM_ELIGIBLE_SQL("FOR UPDATE SKIP LOCKED", "", A2_EVENT_COLUMNS_0_1)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3, CLAIM_ELIGIBLE_SQL("FOR UPDATE SKIP LOCKED", CLAIM_DUE, A2_EVENT_COLUMNS_0_3)),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4, CLAIM_ELIGIBLE_SQL_X("FOR UPDATE SKIP LOCKED", CLAIM_DUE, CLAIM_DISPATCH, A2_EVENT_COLUMNS)),
	},
	CLAIM_PARAMS
};

/*
 * With direct writes (direct.h), on one server: the same eligible rows,
 * locked in index order by a SELECT that returns each row version and
 * what the update computes from; each is then updated directly, and its
 * new version is the answer row.  The same rule as the statements above,
 * the same locks, and the same re-check of a row updated meanwhile (the
 * executor's, in the SELECT); no second scan of the session, no
 * aggregate, no UPDATE plan, and no 29 columns projected per row.
 */
#define CLAIM_LOCK_SQL(lock_clause) \
	"SELECT e.idx, e.attempt_count, e.first_claimed_at, e.ctid AS row_id" \
	"  FROM @extschema@.a2_events e" \
	CLAIM_WHERE("$1", "$2", "$3", "$6", CLAIM_DUE_AT("$2"), CLAIM_DISPATCH_AT("$2", "$4", "$5")) \
	" ORDER BY e.idx " lock_clause

#define CLAIM_LOCK_PARAMS \
	.nparams = 6, .params = { \
		A2_PARAM("session_id", TEXTOID), A2_PARAM("now", INT8OID), \
		A2_PARAM("exclude_indexes", INT8ARRAYOID), A2_PARAM("queues", TEXTARRAYOID), \
		A2_PARAM("paused_queues", TEXTARRAYOID), A2_PARAM("low_water", INT8OID)}, \
	.session_param = 1, .columns = A2_COLUMNS("idx", "attempt_count", "first_claimed_at", "row_id")

enum
{
	CLAIM_LOCK_IDX = 1,
	CLAIM_LOCK_ATTEMPT_COUNT,
	CLAIM_LOCK_FIRST_CLAIMED_AT,
	CLAIM_LOCK_ROW_ID
};

static A2Statement claim_lock = {
	.name = "claim.lock_eligible",
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, CLAIM_LOCK_SQL("FOR UPDATE"))},
	CLAIM_LOCK_PARAMS
};

static A2Statement claim_lock_skip_locked = {
	.name = "claim.lock_eligible_skip_locked",
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, CLAIM_LOCK_SQL("FOR UPDATE SKIP LOCKED"))},
	CLAIM_LOCK_PARAMS
};

/*
 * When the session's unfinished lane-ready work next becomes claimable
 * (retryAt, docs/semantics.md): per event, the later of its live lease's
 * expiry and its future not_before; the earliest of those.  NULL: nothing
 * is leased or scheduled, so the session is settled.
 */
enum
{
	NEXT_EXPIRY_RETRY_AT = 1
};

static A2Statement next_expiry = {
	.name = "claim.next_expiry",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT pg_catalog.min(e.claim_expires_at) AS retry_at"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
				"   AND e.failed_at IS NULL AND e.lane_ready"
				"   AND e.claim_expires_at OPERATOR(pg_catalog.>) $2"),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_3,
				"SELECT pg_catalog.min(GREATEST("
				"         CASE WHEN e.claim_expires_at OPERATOR(pg_catalog.>) $2 THEN e.claim_expires_at END,"
				"         CASE WHEN e.not_before OPERATOR(pg_catalog.>) $2 THEN e.not_before END)) AS retry_at"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
				"   AND e.failed_at IS NULL AND e.lane_ready"
				"   AND (e.claim_expires_at OPERATOR(pg_catalog.>) $2"
				"        OR e.not_before OPERATOR(pg_catalog.>) $2)"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("now", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS("retry_at")
};

/*
 * The session's low-water probe (lowwater.h): the anchor, a hash of the
 * session's lowest event row (index, xmin, event id), which tells one
 * incarnation of the session from another (a row deleted and appended
 * again, even with the same id and a2.now, has another xmin; a processed
 * row is never updated again, so the anchor of a session whose lowest
 * event is processed stays put), and the least index of an
 * unprocessed event at or above $2, the mark known so far.  Both are
 * index probes: the first of the primary key, the second of
 * a2_events_unprocessed from the mark on, so it passes over the dead
 * entries of the events processed since the mark was taken, not of the
 * whole session.  One server only: distributed mode keeps no marks.
 */
enum
{
	LOW_WATER_ANCHOR = 1,
	LOW_WATER_FIRST_UNPROCESSED
};

static A2Statement low_water = {
	.name = "claim.low_water",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_1,
				"SELECT (SELECT pg_catalog.hashtextextended(pg_catalog.concat_ws('/', f.idx, f.xmin, f.event_id), 0)"
				"          FROM @extschema@.a2_events f WHERE f.session_id OPERATOR(pg_catalog.=) $1"
				"         ORDER BY f.idx LIMIT 1) AS anchor,"
				"       (SELECT u.idx FROM @extschema@.a2_events u"
				"         WHERE u.session_id OPERATOR(pg_catalog.=) $1 AND u.processed_at IS NULL"
				"           AND u.idx OPERATOR(pg_catalog.>=) $2"
				"         ORDER BY u.idx LIMIT 1) AS first_unprocessed"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("low_water", INT8OID)},
	.columns = A2_COLUMNS("anchor", "first_unprocessed")
};

A2_STATEMENT_GROUP(claim, &claim_eligible, &claim_eligible_skip_locked, &claim_lock,
				   &claim_lock_skip_locked, &next_expiry, &low_water);

/* Run the probe from `from`; false when the session has no events. */
static bool
probe_low_water(const char *session_id, int64 from, uint64 *anchor,
				int64 *first, bool *have_first)
{
	A2Args		a;
	bool		isnull;
	Datum		d;
	int			direct = a2_direct_low_water(CStringGetTextDatum(session_id), from,
											 anchor, first, have_first);

	if (direct >= 0)
		return direct == 1;
	a2_args_init(&a, &low_water);
	a2_bind_text(&a, 1, session_id);
	a2_bind_int8(&a, 2, from);
	a2_exec_latest(&a, SPI_OK_SELECT);
	d = a2_col(0, LOW_WATER_ANCHOR, &isnull);
	if (isnull)
		return false;
	*anchor = (uint64) DatumGetInt64(d);
	d = a2_col(0, LOW_WATER_FIRST_UNPROCESSED, &isnull);
	*have_first = !isnull;
	*first = isnull ? 0 : DatumGetInt64(d);
	return true;
}

/*
 * The index the claim's scan of the session starts at: every event below
 * it is processed (docs/internals.md, "Claim low-water marks").  Under a
 * long-held snapshot elsewhere the claim's index, a2_events_dispatch_ready,
 * keeps an entry for every version of every event that was ever
 * claimable, none of which a scan may remove, and the claim would visit
 * them all from the session's first index on.
 *
 * The mark known for the session (lowwater.c) is checked against the
 * session's current anchor, then the probe moves it up to the first
 * unprocessed event.  The new mark is recorded only by a transaction that
 * has no transaction id yet: its snapshot then shows committed changes
 * only, and processed is final, so the mark can never be too high for a
 * later transaction; a transaction that has completed events itself may
 * still roll them back (it uses the mark for this claim only, where its
 * own view is the right one).  The caller holds the session lock, so no
 * append, completion or drop of the session runs between the probe and
 * the claim.
 */
static int64
claim_low_water(const char *session_id)
{
	int64		mark = 1;
	uint64		anchor = 0;
	uint64		now_anchor;
	int64		first;
	bool		have_first;
	bool		known;

	if (!a2_low_water_enabled())
		return 1;
	known = a2_low_water_get(session_id, &mark, &anchor);
	if (!known)
		mark = 1;
	if (!probe_low_water(session_id, mark, &now_anchor, &first, &have_first))
		return 1;				/* no events: nothing to claim */
	if (known && now_anchor != anchor)
	{
		/* another incarnation of the session: its mark says nothing */
		known = false;
		mark = 1;
		if (!probe_low_water(session_id, mark, &now_anchor, &first, &have_first))
			return 1;
	}
	if (!have_first)
		return mark;			/* nothing unprocessed from the mark on */
	if ((!known || first > mark) &&
		!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		a2_low_water_set(session_id, first, now_anchor);
	return first;
}

void
a2_claim_args_init_dispatch(A2ClaimArgs *args)
{
	args->queues = (Datum) 0;
	args->paused = a2_text_array(NULL, 0);
	args->limits_denied = false;
	args->limits_retry_at = PG_INT64_MAX;
}

/*
 * Some snapshot still sees the row versions of a transaction that began
 * about DEAD_HELD_XIDS transaction ids ago: dead versions are piling up in
 * the session indexes, out of reach of vacuum and of index scans' pruning.
 * The horizon is the whole server's (a long transaction in another
 * database counts too).  Either answer is safe; it only chooses the
 * cheaper claim.
 */
#define DEAD_HELD_XIDS 1000

static bool
dead_versions_held(void)
{
	TransactionId next = ReadNextTransactionId();
	TransactionId recent = next - DEAD_HELD_XIDS;

	if (!TransactionIdIsNormal(recent) || !TransactionIdPrecedes(recent, next))
		return false;
	return !GlobalVisCheckRemovableXid(NULL, recent);
}

/*
 * Update the rows claim_lock locked (SPI_tuptable), each directly; the
 * tuple table then holds their new versions as rows of A2_EVENT_COLUMNS,
 * the claim statement's answer, in its own memory context.
 */
static void
claim_locked_rows(A2DirectClaim *dc, A2ClaimArgs *args, uint64 n)
{
	Datum		session = CStringGetTextDatum(args->session_id);
	Datum		holder = CStringGetTextDatum(args->holder);
	SPITupleTable *tt = SPI_tuptable;
	MemoryContext old = MemoryContextSwitchTo(tt->tuptabcxt);
	TupleDesc	answer = a2_direct_claim_answer_desc();

	for (uint64 r = 0; r < n; r++)
	{
		bool		isnull;
		ItemPointerData tid;
		int32		attempt = (int32) a2_col_int64(r, CLAIM_LOCK_ATTEMPT_COUNT);
		Datum		first = a2_col(r, CLAIM_LOCK_FIRST_CLAIMED_AT, &isnull);

		if (!a2_col_tid(r, CLAIM_LOCK_ROW_ID, &tid))
			elog(ERROR, "a2: claim.lock_eligible returned no row version");
		/* the statement's attempt_count + 1, its overflow error included */
		tt->vals[r] = a2_direct_claim_row(dc, session, a2_col_int64(r, CLAIM_LOCK_IDX), &tid,
										  DirectFunctionCall2(int4pl, Int32GetDatum(attempt),
															  Int32GetDatum(1)),
										  isnull ? Int64GetDatum(args->now_ms) : first,
										  Int64GetDatum(args->now_ms), holder,
										  Int64GetDatum(args->expires_ms), answer);
	}
	tt->tupdesc = answer;
	MemoryContextSwitchTo(old);
}

/* claim_lock's run, and the direct updates of what it locked. */
static uint64
claim_directly(A2DirectClaim *dc, A2ClaimArgs *args, bool skip_locked,
			   int64 low_water)
{
	A2Args		a;
	uint64		n;

	a2_args_init(&a, skip_locked ? &claim_lock_skip_locked : &claim_lock);
	a2_bind_text(&a, 1, args->session_id);
	a2_bind_int8(&a, 2, args->now_ms);
	a2_bind(&a, 3, INT8ARRAYOID, args->exclude);
	if (args->queues)
		a2_bind(&a, 4, TEXTARRAYOID, args->queues);
	else
		a2_bind_null(&a, 4);
	a2_bind(&a, 5, TEXTARRAYOID, args->paused);
	a2_bind_int8(&a, 6, low_water);
	n = a2_exec_latest(&a, SPI_OK_SELECT);
	claim_locked_rows(dc, args, n);
	return n;
}

/* The claim statement's run (every mode). */
static uint64
claim_by_statement(A2ClaimArgs *args, bool skip_locked, int64 low_water)
{
	A2Args		a;

	a2_args_init(&a, skip_locked ? &claim_eligible_skip_locked : &claim_eligible);
	a2_bind_text(&a, 1, args->session_id);
	a2_bind_int8(&a, 2, args->now_ms);
	a2_bind_text(&a, 3, args->holder);
	a2_bind_int8(&a, 4, args->expires_ms);
	a2_bind(&a, 5, INT8ARRAYOID, args->exclude);
	if (args->queues)
		a2_bind(&a, 6, TEXTARRAYOID, args->queues);
	else
		a2_bind_null(&a, 6);
	a2_bind(&a, 7, TEXTARRAYOID, args->paused);
	a2_bind_int8(&a, 8, low_water);
	return a2_exec_latest(&a, SPI_OK_SELECT);
}

uint64
a2_claim_session(A2ClaimArgs *args, bool skip_locked)
{
	volatile uint64 n = 0;
	bool		denied = false;
	int64		retry_at = PG_INT64_MAX;
	A2DirectClaim *dc;
	int64		low_water;

	a2_walk_mark_lower(args->expires_ms, args->expires_ms);	/* the leases' key */

	/*
	 * No mark while dead versions are reclaimed: the claim's index then
	 * holds the session's eligible events and few dead entries, which the
	 * scan passes as cheaply as the probe would (its statement and its two
	 * row fetches are a third of a claim's buffers).  Under a snapshot
	 * held open the session's dead entries pile up, and the mark passes
	 * them.
	 */
	low_water = dead_versions_held() ? claim_low_water(args->session_id) : 1;
	dc = a2_direct_claim_begin();
	a2_limits_pass_begin();
	PG_TRY();
	{
		if (dc)
			n = claim_directly(dc, args, skip_locked, low_water);
		else
			n = claim_by_statement(args, skip_locked, low_water);
	}
	PG_FINALLY();
	{
		a2_limits_pass_end(&denied, &retry_at);
	}
	PG_END_TRY();
	if (dc)
		a2_direct_claim_end(dc);
	if (denied)
	{
		args->limits_denied = true;
		args->limits_retry_at = Min(args->limits_retry_at, retry_at);
	}
	if (n > 0 && a2_has_dispatch())
		a2_limits_note_claims(n, args->now_ms);
	return n;
}

static Jsonb *
claim_events(A2ClaimArgs *args)
{
	A2Call		call;
	A2Json		js = NULL;
	uint64		n;
	Jsonb	   *result;

	a2_call_begin(&call, args->session_id);
	/* the one lock order: the session lock, then rows in index order */
	a2_lock_session(args->session_id);
	args->paused = a2_paused_queues();
	n = a2_claim_session(args, false);

	a2j_begin_object(&js, NULL);
	if (n > 0)
	{
		a2j_string(&js, "outcome", "claimed");
		a2j_begin_array(&js, "events");
		for (uint64 r = 0; r < n; r++)
			a2j_event_row(&js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
		a2j_end_array(&js);
	}
	else
	{
		A2Args		a;
		bool		isnull;
		Datum		retry;

		a2_args_init(&a, &next_expiry);
		a2_bind_text(&a, 1, args->session_id);
		a2_bind_int8(&a, 2, args->now_ms);
		a2_exec_latest(&a, SPI_OK_SELECT);
		retry = a2_col(0, NEXT_EXPIRY_RETRY_AT, &isnull);
		if (isnull && !args->limits_denied)
			a2j_string(&js, "outcome", "settled");
		else
		{
			/* work a limit skipped is claimable when the limit frees */
			int64		at = isnull ? args->limits_retry_at :
				Min(DatumGetInt64(retry), args->limits_retry_at);

			a2j_string(&js, "outcome", "busy");
			a2j_iso(&js, "retryAt", at);
		}
	}
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

/* exclude_indexes: NULL means none; elements must be non-null and >= 1. */
static Datum
exclude_arg(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (PG_ARGISNULL(argno))
		return a2_int8_array(NULL, NULL, 0);
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	if (n > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("argument \"exclude_indexes\" has %d element; the limit is %d",
							   "argument \"exclude_indexes\" has %d elements; the limit is %d",
							   n, n, A2_MAX_LIST_ITEMS)));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"exclude_indexes\" must not contain nulls")));
		a2_check_min(DatumGetInt64(elems[i]), 1, "exclude_indexes");
	}
	/* validated as is: pass the caller's array through */
	return PointerGetDatum(arr);
}

Datum
a2_claim(PG_FUNCTION_ARGS)
{
	A2ClaimArgs args;
	int64		ttl_ms;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.holder = a2_name_arg(fcinfo, 1, "holder");
	ttl_ms = a2_int8_arg(fcinfo, 2, "ttl_ms", 0);
	args.exclude = exclude_arg(fcinfo, 4);
	a2_claim_args_init_dispatch(&args);
	args.queues = a2_queues_arg(fcinfo, 5);
	args.now_ms = a2_clock_now_ms();
	if (PG_ARGISNULL(3))
		args.expires_ms = a2_add_ttl(args.now_ms, ttl_ms);
	else
		args.expires_ms = a2_timestamptz_to_ms(PG_GETARG_TIMESTAMPTZ(3), "expires_at");
	PG_RETURN_JSONB_P(claim_events(&args));
}
