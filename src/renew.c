/*-------------------------------------------------------------------------
 *
 * renew.c
 *	  a2_renew(session_id, holder, claims, ttl_ms, expires_at): extend live
 *	  leases.
 *
 *	  A listed {index, attempt} is renewed when the event is unprocessed,
 *	  not dead-lettered, at that attempt, held by `holder` and its lease has
 *	  not expired; otherwise it is superseded when the event has moved to a
 *	  later attempt or was cancelled (a2_cancel) at this attempt, and in
 *	  neither list in every other case.  The listed
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
#include "call.h"
#include "clock.h"
#include "json_out.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"
#include "walk_mark.h"

PG_FUNCTION_INFO_V1(a2_renew);

/*
 * Lock the listed rows in index order and report, per row, its attempt and
 * whether its lease is live and held by $3.  The listed attempts are
 * matched in C (a merge over both sorted lists), so no plan ever joins the
 * list against the session's rows.
 */
enum
{
	LOCK_LISTED_IDX = 1,
	LOCK_LISTED_ATTEMPT_COUNT,
	LOCK_LISTED_RENEWABLE,
	LOCK_LISTED_CANCELLED
};

/* `cancelled`: 0.4.0's a2_cancel (objects without cancelled_at: false) */
#define LOCK_LISTED_SQL(cancelled) \
	"SELECT e.idx, e.attempt_count," \
	"       e.processed_at IS NULL AND e.failed_at IS NULL" \
	"       AND e.claim_holder OPERATOR(pg_catalog.=) $3" \
	"       AND e.claim_expires_at OPERATOR(pg_catalog.>) $4 AS renewable," \
	"       " cancelled " AS cancelled" \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)" \
	" ORDER BY e.idx FOR UPDATE"

static A2Statement lock_listed = {
	.name = "renew.lock_listed",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1, LOCK_LISTED_SQL("false")),
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_4, LOCK_LISTED_SQL("e.cancelled_at IS NOT NULL")),
	},
	.nparams = 4,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID),
	A2_PARAM("holder", TEXTOID), A2_PARAM("now", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS("idx", "attempt_count", "renewable", "cancelled")
};

static A2Statement extend_leases = {
	.name = "renew.extend_leases",
	.walk_keys = true,
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"UPDATE @extschema@.a2_events e SET claim_expires_at = $3"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"),
	},
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("indexes", INT8ARRAYOID),
	A2_PARAM("expires_at", INT8OID)},
	.session_param = 1
};

A2_STATEMENT_GROUP(renew, &lock_listed, &extend_leases);

typedef struct ListedClaim
{
	int64		index;
	int64		attempt;
} ListedClaim;

typedef struct RenewArgs
{
	char	   *session_id;
	char	   *holder;
	int			count;
	ListedClaim *claims;		/* sorted by index, indexes unique */
	int64		now_ms;
	int64		expires_ms;
} RenewArgs;

static Jsonb *
renew_claims(RenewArgs *args)
{
	A2Call		call;
	A2Json		js = NULL;
	int64	   *indexes = palloc(sizeof(int64) * Max(args->count, 1));
	int64	   *renewed = palloc(sizeof(int64) * Max(args->count, 1));
	int64	   *superseded = palloc(sizeof(int64) * Max(args->count, 1));
	int			nrenewed = 0,
				nsuperseded = 0;
	uint64		n = 0;
	A2Args		a;
	Jsonb	   *result;

	a2_call_begin(&call, args->session_id);
	for (int i = 0; i < args->count; i++)
		indexes[i] = args->claims[i].index;
	if (args->count > 0)
	{
		/* the one lock order: the session lock, then rows in index order */
		a2_lock_session(args->session_id);
		a2_args_init(&a, &lock_listed);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(indexes, NULL, args->count));
		a2_bind_text(&a, 3, args->holder);
		a2_bind_int8(&a, 4, args->now_ms);
		n = a2_exec_latest(&a, SPI_OK_SELECT);
	}

	/* both the rows and the claims are sorted by index: merge them */
	for (uint64 r = 0, k = 0; r < n; r++)
	{
		int64		idx = a2_col_int64(r, LOCK_LISTED_IDX);
		int64		attempt_count = a2_col_int64(r, LOCK_LISTED_ATTEMPT_COUNT);

		while (args->claims[k].index < idx)
			k++;
		if (a2_col_bool(r, LOCK_LISTED_RENEWABLE) && attempt_count == args->claims[k].attempt)
			renewed[nrenewed++] = idx;
		else if (attempt_count > args->claims[k].attempt ||
				 (attempt_count == args->claims[k].attempt &&
				  a2_col_bool(r, LOCK_LISTED_CANCELLED)))
			superseded[nsuperseded++] = idx;
	}
	if (nrenewed > 0)
	{
		a2_args_init(&a, &extend_leases);
		a2_bind(&a, 1, TEXTOID, call.session);
		a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(renewed, NULL, nrenewed));
		a2_bind_int8(&a, 3, args->expires_ms);
		a2_walk_mark_lower(args->expires_ms, args->expires_ms);
		a2_exec_latest(&a, SPI_OK_UPDATE);
	}

	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "renewed");
	for (int i = 0; i < nrenewed; i++)
		a2j_int(&js, NULL, renewed[i]);
	a2j_end_array(&js);
	a2j_begin_array(&js, "superseded");
	for (int i = 0; i < nsuperseded; i++)
		a2j_int(&js, NULL, superseded[i]);
	a2j_end_array(&js);
	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

static int
cmp_claim(const void *a, const void *b)
{
	int64		x = ((const ListedClaim *) a)->index;
	int64		y = ((const ListedClaim *) b)->index;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* claims: [{index >= 1, attempt >= 1}], each index at most once */
static void
parse_claims(Jsonb *claims, int count, RenewArgs *args)
{
	static const char *const claim_keys[] = {"index", "attempt", NULL};

	args->count = count;
	args->claims = palloc(sizeof(ListedClaim) * Max(count, 1));
	for (int i = 0; i < count; i++)
	{
		JsonbContainer *obj = a2_json_object_elem(&claims->root, i, "claims",
												  args->session_id);
		JsonbValue	f;
		char		path[64];

		snprintf(path, sizeof(path), "claims[%d]", i);
		a2_json_check_keys(obj, claim_keys, "claims", args->session_id, path);
		snprintf(path, sizeof(path), "claims[%d].index", i);
		if (!a2_json_field(obj, "index", &f))
			a2_invalid("claims", args->session_id, "%s is required.", path);
		args->claims[i].index = a2_json_int_field(&f, 1, "claims", args->session_id, path);

		snprintf(path, sizeof(path), "claims[%d].attempt", i);
		if (!a2_json_field(obj, "attempt", &f))
			a2_invalid("claims", args->session_id, "%s is required.", path);
		args->claims[i].attempt = a2_json_int_field(&f, 1, "claims", args->session_id, path);
	}
	qsort(args->claims, count, sizeof(ListedClaim), cmp_claim);
	for (int i = 1; i < count; i++)
		if (args->claims[i - 1].index == args->claims[i].index)
			a2_invalid("claims", args->session_id,
					   "Index %lld is listed more than once.",
					   (long long) args->claims[i].index);
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
