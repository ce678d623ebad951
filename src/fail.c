/*-------------------------------------------------------------------------
 *
 * fail.c
 *	  a2_fail(session_id, event_index, attempt, error, max_failures,
 *	  retry_after_ms = NULL): record a failed attempt.
 *
 *	  Lock order: session lock, then the event row.  When the event is
 *	  unprocessed, alive, at this attempt and held, the failure is counted,
 *	  the lease cleared and, at max_failures, the event dead-lettered, which
 *	  releases its snapshot pins as completion does.  A "failed" outcome is
 *	  re-claimable at once, or with retry_after_ms > 0 (SPEC 7.1 backoff)
 *	  from now + retry_after_ms: that becomes the event's not_before.  A
 *	  dead-lettered event stays unprocessed, so its lane stays blocked.
 *	  Otherwise the outcome is the one the seed's CASE computes, which makes
 *	  a repeated fail of the same attempt idempotent.
 *
 * IDENTIFICATION
 *	  src/fail.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "append.h"
#include "clock.h"
#include "json_out.h"
#include "pins.h"
#include "scheduler.h"
#include "spi_plans.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_fail);

static A2Statement lock_event = {
	.sql = "SELECT e.processed_at IS NOT NULL, e.failed_at IS NOT NULL,"
	"       e.attempt_count, e.claim_holder IS NOT NULL, e.failure_count,"
	"       COALESCE(e.last_failed_attempt OPERATOR(pg_catalog.=) $3,"
	"                e.last_failed_attempt IS NULL AND $3 IS NULL)"
	"  FROM @extschema@.a2_events e"
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2 FOR UPDATE",
	.session_param = 1, .nargs = 3, .argtypes = {TEXTOID, INT8OID, INT4OID}
};

static A2Statement record_failure = {
	.sql = "UPDATE @extschema@.a2_events e SET"
	"  failure_count = e.failure_count OPERATOR(pg_catalog.+) 1, last_error = $3,"
	"  last_failed_at = $4, last_failed_attempt = $5,"
	"  failed_at = CASE WHEN $6 THEN $4 END,"
	"  claim_holder = NULL, claim_expires_at = NULL"
	A2_NB(", not_before = COALESCE($7, e.not_before)", "")
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2",
	.session_param = 1, .nargs = 7, .argtypes = {TEXTOID, INT8OID, TEXTOID, INT8OID, INT4OID, BOOLOID, INT8OID}
};

typedef struct FailArgs
{
	char	   *session_id;
	int64		index;
	int32		attempt;
	char	   *error;			/* NULL: stored as null */
	int64		max_failures;
	int64		now_ms;
	bool		backoff;		/* retry_after_ms > 0 */
	int64		retry_at_ms;	/* now + retry_after_ms, when backoff */
} FailArgs;

static Jsonb *
fail_attempt(FailArgs *args)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		processed,
				dead,
				held,
				failed_by_this;
	int64		attempt_count,
				failures;
	const char *outcome;
	Jsonb	   *result;

	a2_lock_session(args->session_id);
	values[0] = CStringGetTextDatum(args->session_id);
	values[1] = Int64GetDatum(args->index);
	values[2] = Int32GetDatum(args->attempt);
	if (a2_exec_latest(&lock_event, values, NULL, SPI_OK_SELECT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_A2_NOT_FOUND),
				 errmsg("no event at index %lld in session \"%s\"",
						(long long) args->index, args->session_id)));
	processed = a2_col_bool(0, 1);
	dead = a2_col_bool(0, 2);
	attempt_count = a2_col_int64(0, 3);
	held = a2_col_bool(0, 4);
	failures = a2_col_int64(0, 5);
	failed_by_this = a2_col_bool(0, 6);

	if (!processed && !dead && attempt_count == args->attempt && held)
	{
		bool		dead_letter = failures + 1 >= args->max_failures;

		if (args->error)
			values[2] = CStringGetTextDatum(args->error);
		else
			nulls[2] = 'n';
		values[3] = Int64GetDatum(args->now_ms);
		values[4] = Int32GetDatum(args->attempt);
		values[5] = BoolGetDatum(dead_letter);
		/* backoff (SPEC 7.1): a failed attempt's event is due again later */
		if (args->backoff && !dead_letter)
		{
			values[6] = Int64GetDatum(args->retry_at_ms);
			a2_sched_note_due(args->retry_at_ms);
		}
		else
			nulls[6] = 'n';
		a2_exec_latest(&record_failure, values, nulls, SPI_OK_UPDATE);
		failures += 1;
		if (dead_letter)
			a2_release_pins(args->session_id, args->index);
		outcome = dead_letter ? "dead_lettered" : "failed";
	}
	else if (!processed && attempt_count == args->attempt && dead)
		outcome = "dead_lettered";
	else if (!processed && attempt_count == args->attempt && !held && failed_by_this)
		outcome = "failed";		/* the same attempt failed before */
	else
		outcome = "superseded"; /* processed, or another attempt */

	a2j_begin_object(&js, NULL);
	a2j_string(&js, "outcome", outcome);
	a2j_int(&js, "failureCount", failures);
	result = a2j_finish(a2j_end_object(&js), caller);
	a2_spi_end();
	return result;
}

Datum
a2_fail(PG_FUNCTION_ARGS)
{
	FailArgs	args;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.index = a2_int8_arg(fcinfo, 1, "event_index", 1);
	args.attempt = (int32) a2_int4_arg(fcinfo, 2, "attempt", 1);
	args.error = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	args.max_failures = a2_int4_arg(fcinfo, 4, "max_failures", 1);
	args.now_ms = a2_clock_now_ms();
	args.backoff = false;
	args.retry_at_ms = 0;
	/* retry_after_ms: 0.3.0's sixth argument; NULL or 0, no backoff */
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
	{
		int64		retry_after_ms = a2_int8_arg(fcinfo, 5, "retry_after_ms", 0);

		args.retry_at_ms = a2_add_ms(args.now_ms, retry_after_ms, "retry_after_ms");
		args.backoff = retry_after_ms > 0;
		if (args.backoff)
			a2_require_not_before();
	}
	PG_RETURN_JSONB_P(fail_attempt(&args));
}
