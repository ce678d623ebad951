/*-------------------------------------------------------------------------
 *
 * claim_next.c
 *	  a2_claim_next(holder, ttl_ms, max_sessions, expires_at): claim the
 *	  work of up to max_sessions sessions that have eligible work now,
 *	  without knowing which sessions those are.
 *
 *	  Order (fairness): oldest "available since" first.  An eligible
 *	  event is available since its lease expired, or, when it carries no
 *	  lease, since it was created or fell due (not_before, docs/semantics.md "Scheduling"),
 *	  whichever is later: coalesce(claim_expires_at, greatest(not_before,
 *	  created_at)).  The
 *	  partial index a2_events_default_available holds exactly the rows that can
 *	  become eligible (lane-ready, unprocessed, not dead-lettered) keyed by
 *	  that time and the session id, so the walk below reads them oldest
 *	  first and stops at now: a session is served once every session whose
 *	  work became available before its own has been served, whatever
 *	  arrives later.
 *
 *	  Cost and locking: the lock order of every a2 operation (module.c),
 *	  without ever waiting.  Each step of the walk is one index probe for
 *	  the first available entry after the previous one; then the entry's
 *	  session lock is tried (pg_try_advisory_xact_lock's rule: taken or
 *	  not, at once) and, when taken, the session is claimed by key through
 *	  a2_claim_session(), a2_claim's own statement, under SKIP LOCKED.  A
 *	  session another transaction holds -- it is appending, claiming,
 *	  completing or failing there -- is passed over and stays available for
 *	  the next call.  So concurrent callers get disjoint work and never
 *	  block one another, and a transaction that claims here and later
 *	  completes, fails or appends in the same session already holds the
 *	  session lock those take first: no lock is ever taken out of order
 *	  (docs/semantics.md, "Isolation and re-entrancy").  The work is a few index probes per session returned,
 *	  whatever the number of sessions with work, and finished events are
 *	  not in the index at all.  Each probe reads the latest committed state
 *	  (also under REPEATABLE READ), so the events this call has just
 *	  claimed (now leased, available later) are not met again.
 *
 *	  retryAt: the first available-since time after now, an index probe on
 *	  the same index taken after the claims: the earliest live lease expiry
 *	  among lane-ready unfinished events (the leases this call just took
 *	  included).  Null when nothing is leased.  (An unleased event whose
 *	  createdAt lies after now -- a clock that stepped back, or a2.now set
 *	  into the past -- is offered from its createdAt on, and that time is
 *	  then the retryAt; a2_claim would take it at once.)
 *
 *	  Limits (0.4.0): the keys' decisions stand for the whole call
 *	  (limits.c).  A candidate whose event carries a key is tested under
 *	  its session lock before the claim statement runs; a key that admits
 *	  nothing more is left out of the rest of the walk (dispatch_walk.c),
 *	  and its first free time is part of the retryAt.
 *
 * IDENTIFICATION
 *	  src/claim_next.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "call.h"
#include "claim.h"
#include "clock.h"
#include "dispatch_walk.h"
#include "queues.h"
#include "json_out.h"
#include "limits.h"
#include "layer.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_claim_next);

typedef struct NextArgs
{
	char	   *holder;
	int64		now_ms;
	int64		expires_ms;
	int			max_sessions;
	Datum		queues;			/* text[]; 0: every queue */
} NextArgs;

typedef struct WalkState
{
	A2ClaimArgs *claim;
	A2Json	   *js;
} WalkState;

/*
 * Claim one session unless another transaction holds its lock; push
 * {sessionId, events} and return true if it gave work.
 */
static bool
claim_candidate(A2ClaimArgs *claim, A2Json *js)
{
	uint64		n;

	if (!a2_try_lock_session(claim->session_id))
		return false;
	n = a2_claim_session(claim, true);
	if (n == 0)
		return false;			/* claimed meanwhile by a finished transaction */
	a2j_begin_object(js, NULL);
	a2j_string(js, "sessionId", claim->session_id);
	a2j_begin_array(js, "events");
	for (uint64 r = 0; r < n; r++)
		a2j_event_row(js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
	a2j_end_array(js);
	a2j_end_object(js);
	return true;
}

/*
 * The sessions this call has claimed.  A session can be met again later in
 * the walk: an entry its claim skipped because another transaction held it
 * may be released and available by the time the walk reaches it.  Such an
 * entry is left for the next call, so each session appears once.
 */
static HTAB *
served_sessions(void)
{
	HASHCTL		ctl;

	ctl.keysize = A2_MAX_NAME_BYTES + 1;
	ctl.entrysize = A2_MAX_NAME_BYTES + 1;
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("a2_claim_next sessions", 16, &ctl,
					   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

/*
 * dispatch_walk.c's callback: claim one session of the walk.  key: the
 * concurrency key of the event that made it a candidate.  The key is
 * tested under the session lock (the order of a2_admit, limits.h); when
 * it admits nothing more in this call the claim statement is not run and
 * the walk leaves the key's events out from then on (the session's other
 * work, if any, is met later in the walk).  Its denial counts in retryAt
 * as a2_admit's does.
 */
static A2WalkAnswer
walk_try_claim(char *session_id, char *key, void *arg)
{
	WalkState  *w = arg;
	int64		free_at;

	w->claim->session_id = session_id;
	if (key != NULL)
	{
		if (!a2_try_lock_session(session_id))
			return A2_WALK_PASSED;
		if (!a2_limits_key_open(key, w->claim->now_ms, &free_at))
		{
			if (free_at != PG_INT64_MAX)
			{
				w->claim->limits_denied = true;
				w->claim->limits_retry_at = Min(w->claim->limits_retry_at, free_at);
			}
			return A2_WALK_HELD;
		}
	}
	return claim_candidate(w->claim, w->js) ? A2_WALK_CLAIMED : A2_WALK_PASSED;
}

static Jsonb *
claim_next(NextArgs *args)
{
	A2Call		call;
	A2Json		js = NULL;
	A2ClaimArgs claim;
	int			claimed = 0;
	int64		after_at = PG_INT64_MIN;
	char	   *after_session = "";
	int64		retry_at;
	Jsonb	   *result;
	HTAB	   *served;

	a2_call_begin(&call, NULL);
	claim.holder = args->holder;
	claim.now_ms = args->now_ms;
	claim.expires_ms = args->expires_ms;
	claim.exclude = a2_int8_array(NULL, NULL, 0);
	a2_claim_args_init_dispatch(&claim);
	claim.queues = args->queues;

	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "claims");
	if (a2_dispatch_walk_enabled())
	{
		/* 0.4.0: queues and priorities (dispatch_walk.c) */
		WalkState	w = {&claim, &js};
		bool		has_retry;

		/*
		 * On an error the keys' budgets must not outlive the call: a
		 * rolled-back savepoint releases the key locks they rest on.
		 */
		a2_limits_call_begin(args->now_ms);
		PG_TRY();
		{
			int64		parked_until;

			a2_dispatch_walk(args->queues, &claim.paused, args->now_ms,
							 args->max_sessions, walk_try_claim, &w,
							 &has_retry, &retry_at);
			if (a2_limits_call_parked_until(&parked_until))
			{
				claim.limits_denied = true;
				claim.limits_retry_at = Min(claim.limits_retry_at, parked_until);
			}
		}
		PG_FINALLY();
		{
			a2_limits_call_end();
		}
		PG_END_TRY();
		a2j_end_array(&js);
		if (claim.limits_denied)
		{
			retry_at = has_retry ? Min(retry_at, claim.limits_retry_at) : claim.limits_retry_at;
			has_retry = true;
		}
		if (has_retry)
			a2j_iso(&js, "retryAt", retry_at);
		else
			a2j_null(&js, "retryAt");
		result = a2j_finish(a2j_end_object(&js), call.caller);
		a2_call_end(&call);
		return result;
	}

	claim.paused = a2_paused_queues();
	served = served_sessions();
	while (claimed < args->max_sessions &&
		   a2_layer()->next_available(args->now_ms, &after_at, &after_session))
	{
		bool		seen;

		(void) hash_search(served, after_session, HASH_ENTER, &seen);
		if (seen)
			continue;
		claim.session_id = after_session;
		if (claim_candidate(&claim, &js))
			claimed++;
	}
	hash_destroy(served);
	a2j_end_array(&js);

	if (a2_layer()->next_retry_at(args->now_ms, &retry_at))
		a2j_iso(&js, "retryAt", retry_at);
	else
		a2j_null(&js, "retryAt");

	result = a2j_finish(a2j_end_object(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_claim_next(PG_FUNCTION_ARGS)
{
	NextArgs	args;
	int64		ttl_ms;

	args.holder = a2_name_arg(fcinfo, 0, "holder");
	ttl_ms = a2_int8_arg(fcinfo, 1, "ttl_ms", 0);
	args.max_sessions = (int) a2_int4_arg(fcinfo, 2, "max_sessions", 1);
	if (args.max_sessions > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_sessions\" must be at most %d, not %d",
						A2_MAX_LIST_ITEMS, args.max_sessions)));
	args.now_ms = a2_clock_now_ms();
	if (PG_ARGISNULL(3))
		args.expires_ms = a2_add_ttl(args.now_ms, ttl_ms);
	else
		args.expires_ms = a2_timestamptz_to_ms(PG_GETARG_TIMESTAMPTZ(3), "expires_at");
	args.queues = a2_queues_arg(fcinfo, 4);
	PG_RETURN_JSONB_P(claim_next(&args));
}
