/*-------------------------------------------------------------------------
 *
 * renew.c
 *	  a2_renew(session_id, holder, claims, ttl_ms, expires_at): extend live
 *	  leases.
 *
 *	  A listed {index, attempt} is renewed when the event is unprocessed,
 *	  not dead-lettered, at that attempt, held by `holder` and its lease has
 *	  not expired; otherwise it is superseded when the event has moved to a
 *	  later attempt, and in neither list in every other case.  The listed
 *	  rows are locked in index order (row locks only, no session lock) so
 *	  the decision and the update see the same row version.
 *
 * IDENTIFICATION
 *	  src/renew.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "clock.h"
#include "json_out.h"
#include "spi_plans.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_renew);

static A2Statement renew_listed = {
	"WITH listed AS ("
	"  SELECT * FROM ROWS FROM (unnest($2), unnest($3)) AS l(idx, attempt)"
	"), locked AS MATERIALIZED ("
	"  SELECT e.idx, l.attempt, e.attempt_count,"
	"         (e.processed_at IS NULL AND e.failed_at IS NULL"
	"          AND e.attempt_count = l.attempt AND e.claim_holder = $4"
	"          AND e.claim_expires_at > $5) AS ok"
	"    FROM @extschema@.a2_events e JOIN listed l ON e.idx = l.idx"
	"   WHERE e.session_id = $1 AND e.idx = ANY ($2)"
	"   ORDER BY e.idx FOR UPDATE OF e"
	"), renewed AS ("
	"  UPDATE @extschema@.a2_events e SET claim_expires_at = $6"
	"   WHERE e.session_id = $1"
	"     AND e.idx = ANY (ARRAY (SELECT locked.idx FROM locked WHERE locked.ok))"
	") SELECT idx, ok, attempt_count > attempt FROM locked ORDER BY idx",
	6, {TEXTOID, INT8ARRAYOID, INT8ARRAYOID, TEXTOID, INT8OID, INT8OID}
};

typedef struct RenewArgs
{
	char	   *session_id;
	char	   *holder;
	int			count;
	int64	   *indexes;
	int64	   *attempts;
	int64		now_ms;
	int64		expires_ms;
} RenewArgs;

static Jsonb *
renew_claims(RenewArgs *args)
{
	MemoryContext caller = a2_spi_begin();
	A2Json		js = NULL;
	uint64		n = 0;
	Jsonb	   *result;

	if (args->count > 0)
	{
		Datum		values[6];

		values[0] = CStringGetTextDatum(args->session_id);
		values[1] = a2_int8_array(args->indexes, args->count);
		values[2] = a2_int8_array(args->attempts, args->count);
		values[3] = CStringGetTextDatum(args->holder);
		values[4] = Int64GetDatum(args->now_ms);
		values[5] = Int64GetDatum(args->expires_ms);
		n = a2_exec(&renew_listed, values, NULL, false, SPI_OK_SELECT);
	}

	/* rows arrive in index order, so both lists come out sorted */
	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "renewed");
	for (uint64 r = 0; r < n; r++)
		if (a2_col_bool(r, 2))
			a2j_int(&js, NULL, a2_col_int64(r, 1));
	a2j_end_array(&js);
	a2j_begin_array(&js, "superseded");
	for (uint64 r = 0; r < n; r++)
		if (!a2_col_bool(r, 2) && a2_col_bool(r, 3))
			a2j_int(&js, NULL, a2_col_int64(r, 1));
	a2j_end_array(&js);
	result = a2j_finish(a2j_end_object(&js), caller);
	a2_spi_end();
	return result;
}

/* claims: [{index >= 1, attempt >= 1}], each index at most once */
static void
parse_claims(Jsonb *claims, int count, RenewArgs *args)
{
	args->count = count;
	args->indexes = palloc(sizeof(int64) * Max(count, 1));
	args->attempts = palloc(sizeof(int64) * Max(count, 1));
	for (int i = 0; i < count; i++)
	{
		JsonbContainer *obj = a2_json_object_elem(&claims->root, i, "claims",
												  args->session_id);
		JsonbValue	f;
		char		path[64];

		snprintf(path, sizeof(path), "claims[%d].index", i);
		if (!a2_json_field(obj, "index", &f))
			a2_invalid("claims", args->session_id, "%s is required.", path);
		args->indexes[i] = a2_json_int_field(&f, 1, "claims", args->session_id, path);

		snprintf(path, sizeof(path), "claims[%d].attempt", i);
		if (!a2_json_field(obj, "attempt", &f))
			a2_invalid("claims", args->session_id, "%s is required.", path);
		args->attempts[i] = a2_json_int_field(&f, 1, "claims", args->session_id, path);

		for (int j = 0; j < i; j++)
			if (args->indexes[j] == args->indexes[i])
				a2_invalid("claims", args->session_id,
						   "claims[%d] and claims[%d] both name index %lld.",
						   j, i, (long long) args->indexes[i]);
	}
}

Datum
a2_renew(PG_FUNCTION_ARGS)
{
	RenewArgs	args;
	Jsonb	   *claims;
	int			count;
	int64		ttl_ms;

	args.session_id = a2_name_arg(fcinfo, 0, "session_id");
	args.holder = a2_name_arg(fcinfo, 1, "holder");
	claims = a2_array_arg(fcinfo, 2, "claims", &count);
	ttl_ms = a2_int8_arg(fcinfo, 3, "ttl_ms", 0);
	parse_claims(claims, count, &args);
	args.now_ms = a2_clock_now_ms();
	if (PG_ARGISNULL(4))
		args.expires_ms = a2_add_ttl(args.now_ms, ttl_ms);
	else
		args.expires_ms = a2_timestamptz_to_ms(PG_GETARG_TIMESTAMPTZ(4), "expires_at");
	PG_RETURN_JSONB_P(renew_claims(&args));
}
