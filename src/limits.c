/*-------------------------------------------------------------------------
 *
 * limits.c
 *	  Concurrency and rate limits per concurrency key (0.4.0,
 *	  docs/semantics.md "Queues, priorities and limits"): the admission
 *	  test a claim statement applies to each eligible event with a key, and
 *	  the rate log a claim writes.
 *
 *	  A claim pass (a2_limits_pass_begin .. a2_limits_pass_end) brackets
 *	  one run of the claim statement (claim.c).  The statement calls
 *	  a2_admit(key, now) for each eligible event with a key, last among its
 *	  conditions.  The first time a pass meets a key it reads the key's
 *	  limits (a2_limits); a key without limits is admitted freely.  For a
 *	  limited key it tries the key's lock and, when taken, counts with the
 *	  latest committed state the key's live leases (a2_events_key_leases)
 *	  and its claims in the rate window (a2_rate_claims); the budget is the
 *	  smaller of max_leased - leases and rate_max - claims, and each
 *	  admitted event spends one.  A key whose lock another transaction
 *	  holds gets no budget: claims skip, they never wait.
 *
 *	  Why this holds the limits under any interleaving: every claim of a
 *	  limited key's event happens under that key's lock, held to the end of
 *	  the claiming transaction, so claims of one key are serialized; the
 *	  lock is released after the transaction's commit is visible, and the
 *	  next holder counts with a snapshot taken after it took the lock, so it
 *	  sees every lease and rate-log row of the previous holders.  Within a
 *	  transaction the counts see its own earlier statements, and within one
 *	  statement the budget counts what that statement admitted.  An
 *	  admitted event the statement then does not claim (locked by another
 *	  transaction, or re-checked after a concurrent update) only wastes
 *	  budget, never exceeds it.  Rate-log rows are written after the
 *	  statement for the events it did claim (a2_limits_note_claims).
 *
 *	  Within an a2_claim_next call the decisions carry over from pass to
 *	  pass, and the walk asks for a head's key before the claim statement
 *	  (a2_limits_key_open, under that session's lock): a key found to
 *	  admit nothing more is left out of the rest of the walk
 *	  (a2_limits_held_keys), so its held-back work costs no claim attempt.
 *
 *	  Parked keys (key_park.h): a key counted at its limit is proposed for
 *	  parking until it may admit again; a later decision finds it parked
 *	  and denies without the lock or the counts, and an a2_claim_next call
 *	  holds the keys parked at its start from the beginning.
 *
 *	  Lock order: the session lock (taken by the claim before its
 *	  statement), then a key's try-lock (a two-key advisory lock in class
 *	  A2_KEY_LOCK_CLASS, never waited for), then event rows in index order.
 *
 * IDENTIFICATION
 *	  src/limits.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "a2.h"
#include "clock.h"
#include "direct.h"
#include "json_out.h"
#include "key_park.h"
#include "limits.h"
#include "prepared.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_admit);
PG_FUNCTION_INFO_V1(a2_limits_changed);

#define A2_KEY_LOCK_CLASS	0x6132004B	/* "a2" "K" */

typedef struct KeyEntry
{
	char		key[A2_MAX_NAME_BYTES + 1];
	bool		limited;
	bool		rated;			/* has a rate limit: log its claims */
	int64		budget;
	int64		retry_at;		/* when the key may admit again, if budget <= 0 */
} KeyEntry;

static MemoryContext pass_cxt = NULL;
static HTAB *pass_keys = NULL;
static bool pass_active = false;
static bool call_active = false;	/* a2_claim_next: keys decided once per call */
static Datum held_array = (Datum) 0;	/* their text[], in pass_cxt; 0: stale */
static bool pass_denied = false;
static int64 pass_retry_at = PG_INT64_MAX;
static bool callback_registered = false;
static int64 call_parked_until = PG_INT64_MAX;	/* the call's parked keys' first until */

/* the limits of one key; read with the latest committed state */
enum
{
	KEY_LIMITS_MAX_LEASED = 1,
	KEY_LIMITS_RATE_MAX,
	KEY_LIMITS_RATE_PER_MS
};

static A2Statement key_limits = {
	.name = "limits.key_limits",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"SELECT l.max_leased, l.rate_max, l.rate_per_ms FROM @extschema@.a2_limits l"
				" WHERE l.key OPERATOR(pg_catalog.=) $1"),
	},
	.nparams = 1, .params = {A2_PARAM("key", TEXTOID)},
	.columns = A2_COLUMNS("max_leased", "rate_max", "rate_per_ms")
};

/* a key's live leases and the earliest of their expiries */
enum
{
	KEY_LEASES_LEASED = 1,
	KEY_LEASES_FIRST_EXPIRY
};

static A2Statement key_leases = {
	.name = "limits.key_leases",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(*) AS leased, pg_catalog.min(e.claim_expires_at) AS first_expiry"
				"  FROM @extschema@.a2_events e"
				" WHERE e.concurrency_key OPERATOR(pg_catalog.=) $1 AND e.processed_at IS NULL"
				"   AND e.failed_at IS NULL AND e.claim_expires_at IS NOT NULL"
				"   AND e.claim_expires_at OPERATOR(pg_catalog.>) $2"),
	},
	.nparams = 2, .params = {A2_PARAM("key", TEXTOID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("leased", "first_expiry")
};

/* a key's claims in the window (now - per_ms, now] and the oldest of them */
enum
{
	KEY_CLAIMS_CLAIMS = 1,
	KEY_CLAIMS_OLDEST
};

static A2Statement key_claims = {
	.name = "limits.key_claims",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(*) AS claims, pg_catalog.min(r.claimed_at) AS oldest"
				"  FROM @extschema@.a2_rate_claims r"
				" WHERE r.key OPERATOR(pg_catalog.=) $1"
				"   AND r.claimed_at OPERATOR(pg_catalog.>) ($2 OPERATOR(pg_catalog.-) $3)"),
	},
	.nparams = 3, .params = {A2_PARAM("key", TEXTOID), A2_PARAM("now", INT8OID),
	A2_PARAM("per_ms", INT8OID)},
	.columns = A2_COLUMNS("claims", "oldest")
};

/*
 * Log the claims that started now for rate-limited keys, and forget those
 * that left every window (older than the key's per_ms).
 */
static A2Statement log_claims = {
	.name = "limits.log_claims",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"WITH gone AS ("
				"  DELETE FROM @extschema@.a2_rate_claims r USING @extschema@.a2_limits l"
				"   WHERE r.key OPERATOR(pg_catalog.=) ANY ($1) AND l.key OPERATOR(pg_catalog.=) r.key"
				"     AND r.claimed_at OPERATOR(pg_catalog.<=) ($2 OPERATOR(pg_catalog.-) COALESCE(l.rate_per_ms, 0))"
				") INSERT INTO @extschema@.a2_rate_claims (key, claimed_at)"
				"  SELECT k.key, $2 FROM pg_catalog.unnest($1) AS k(key)"),
	},
	.nparams = 2, .params = {A2_PARAM("keys", TEXTARRAYOID), A2_PARAM("now", INT8OID)},
};

A2_STATEMENT_GROUP(limits, &key_limits, &key_leases, &key_claims, &log_claims);

/* A key parked until `until` (key_park.h): it admits nothing, uncounted. */
static void
hold_parked(KeyEntry *entry, int64 until)
{
	entry->limited = true;
	entry->rated = false;
	entry->budget = 0;
	entry->retry_at = until;
}

/* A key of the table now admits nothing more: the held keys' array is stale. */
static void
note_held(void)
{
	held_array = (Datum) 0;
}

static void
limits_xact_callback(XactEvent event, void *arg)
{
	pass_active = false;
	call_active = false;
}

/* A fresh table of keys (the previous one's memory is freed). */
static void
new_key_table(void)
{
	HASHCTL		ctl;

	if (pass_cxt == NULL)
		pass_cxt = AllocSetContextCreate(TopMemoryContext, "a2 limits pass",
										 (Size) 0, (Size) 1024, (Size) 8192);
	if (!callback_registered)
	{
		RegisterXactCallback(limits_xact_callback, NULL);
		callback_registered = true;
	}
	MemoryContextReset(pass_cxt);
	held_array = (Datum) 0;
	ctl.keysize = A2_MAX_NAME_BYTES + 1;
	ctl.entrysize = sizeof(KeyEntry);
	ctl.hcxt = pass_cxt;
	pass_keys = hash_create("a2 limits keys", 8, &ctl,
							HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

void
a2_limits_pass_begin(void)
{
	/*
	 * Within one a2_claim_next call the keys' decisions carry over from
	 * pass to pass: this transaction holds the lock of every key it decided
	 * a budget for, so no other claim of the key runs meanwhile, and its own
	 * claims spend the budget; the call's clock does not move, so no lease
	 * expires.  A completion elsewhere can only free a slot, which the next
	 * call sees: conservative.
	 */
	if (!call_active || pass_keys == NULL)
		new_key_table();
	pass_active = true;
	pass_denied = false;
	pass_retry_at = PG_INT64_MAX;
}

void
a2_limits_call_begin(int64 now_ms)
{
	char	  **keys;
	int64	   *untils;
	int			n;

	call_active = false;
	new_key_table();			/* the call's passes and walk share it */
	call_active = true;
	call_parked_until = PG_INT64_MAX;

	/*
	 * The keys parked now (key_park.h) are held from the start, so the walk
	 * leaves their events out without meeting them; what a parked key holds
	 * back may be claimable at its until, which retryAt includes.
	 */
	n = a2_key_park_list(now_ms, 1024, &keys, &untils);
	for (int i = 0; i < n; i++)
	{
		hold_parked(hash_search(pass_keys, keys[i], HASH_ENTER, NULL), untils[i]);
		call_parked_until = Min(call_parked_until, untils[i]);
	}
	if (n > 0)
		note_held();
}

bool
a2_limits_call_parked_until(int64 *until)
{
	*until = call_parked_until;
	return call_parked_until != PG_INT64_MAX;
}

void
a2_limits_call_end(void)
{
	call_active = false;
	pass_keys = NULL;			/* no pass after the call reuses its budgets */
}

void
a2_limits_pass_end(bool *denied, int64 *retry_at)
{
	pass_active = false;
	if (denied)
		*denied = pass_denied;
	if (retry_at)
		*retry_at = pass_retry_at;
}

static bool
try_lock_key(const char *key)
{
	Datum		h = DirectFunctionCall1Coll(hashtext, DEFAULT_COLLATION_OID,
											CStringGetTextDatum(key));

	return DatumGetBool(DirectFunctionCall2(pg_try_advisory_xact_lock_int4,
											Int32GetDatum(A2_KEY_LOCK_CLASS), h));
}

/*
 * The key's a2_limits row, read directly where it may (direct.h), else by
 * the key_limits statement; false: the key has no limit.  A null limit
 * reads as -1, a null window as 0.
 */
static bool
key_limits_row(const char *key, int32 *max_leased, int32 *rate_max, int64 *per_ms)
{
	A2Args		a;
	bool		isnull;
	int			direct = a2_direct_key_limits(key, max_leased, rate_max, per_ms);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &key_limits);
	a2_bind_text(&a, 1, key);
	if (a2_exec_latest(&a, SPI_OK_SELECT) == 0)
		return false;
	*max_leased = DatumGetInt32(a2_col(0, KEY_LIMITS_MAX_LEASED, &isnull));
	if (isnull)
		*max_leased = -1;
	*rate_max = DatumGetInt32(a2_col(0, KEY_LIMITS_RATE_MAX, &isnull));
	if (isnull)
		*rate_max = -1;
	*per_ms = DatumGetInt64(a2_col(0, KEY_LIMITS_RATE_PER_MS, &isnull));
	if (isnull)
		*per_ms = 0;
	return true;
}

/*
 * The key's live leases and the earliest of their expiries (PG_INT64_MAX
 * without one), read directly where they may (direct.h), else by the
 * key_leases statement.
 */
static int64
key_lease_count(const char *key, int64 now_ms, int64 *first_expiry)
{
	A2Args		a;
	int64		leased = 0;

	*first_expiry = PG_INT64_MAX;
	if (a2_direct_key_leases(key, now_ms, &leased, first_expiry) >= 0)
		return leased;
	a2_args_init(&a, &key_leases);
	a2_bind_text(&a, 1, key);
	a2_bind_int8(&a, 2, now_ms);
	a2_exec_latest(&a, SPI_OK_SELECT);
	leased = a2_col_int64(0, KEY_LEASES_LEASED);
	if (leased > 0)
		*first_expiry = a2_col_int64(0, KEY_LEASES_FIRST_EXPIRY);
	return leased;
}

/*
 * The key's budget from its counts (the latest committed state): its live
 * leases under max_leased (> 0), its claims of the last per_ms under
 * rate_max (> 0); retry_at, when the budget is spent, the first time
 * either may admit again.
 */
static void
count_budget(KeyEntry *entry, const char *key, int64 now_ms, int32 max_leased,
			 int32 rate_max, int64 per_ms)
{
	A2Args		a;

	entry->budget = PG_INT64_MAX;
	entry->retry_at = PG_INT64_MAX;
	if (max_leased > 0)
	{
		int64		first_expiry;

		entry->budget = max_leased - key_lease_count(key, now_ms, &first_expiry);
		if (entry->budget <= 0)
			entry->retry_at = first_expiry;
	}
	if (entry->rated)
	{
		int64		claims;
		int64		rate_budget;

		a2_args_init(&a, &key_claims);
		a2_bind_text(&a, 1, key);
		a2_bind_int8(&a, 2, now_ms);
		a2_bind_int8(&a, 3, per_ms);
		a2_exec_latest(&a, SPI_OK_SELECT);
		claims = a2_col_int64(0, KEY_CLAIMS_CLAIMS);
		rate_budget = rate_max - claims;
		if (rate_budget <= 0)
		{
			int64		free_at = a2_col_int64(0, KEY_CLAIMS_OLDEST) + per_ms;

			entry->retry_at = entry->budget <= 0 ? Max(entry->retry_at, free_at) : free_at;
		}
		entry->budget = Min(entry->budget, rate_budget);
	}
}

/* Read a key's limits and counts: its budget for this pass. */
static void
decide(KeyEntry *entry, const char *key, int64 now_ms)
{
	int32		max_leased,
				rate_max;
	int64		per_ms;
	uint64		version;
	int64		until;

	/* counted at its limit by a committed claim, and nothing freed since */
	if (a2_key_park_lookup(key, now_ms, &until))
	{
		hold_parked(entry, until);
		return;
	}

	entry->limited = false;
	entry->rated = false;
	entry->budget = PG_INT64_MAX;
	entry->retry_at = PG_INT64_MAX;

	if (!key_limits_row(key, &max_leased, &rate_max, &per_ms))
		return;
	entry->limited = true;
	entry->rated = rate_max > 0;

	if (!try_lock_key(key))
	{
		/* another transaction is claiming this key's work: skip, retry now */
		entry->budget = 0;
		entry->retry_at = now_ms;
		return;
	}
	count_budget(entry, key, now_ms, max_leased, rate_max, per_ms);
	if (entry->budget > 0 || entry->retry_at == PG_INT64_MAX)
		return;

	/*
	 * Spent until retry_at: the key may be parked (key_park.h), on counts
	 * taken again after its version is read.  A release that commits
	 * after that read changes the version, unless it was prepared before,
	 * which the check of prepared transactions, also before the counts,
	 * finds: then nothing is parked.  A key with budget is never parked,
	 * so it pays for neither.
	 */
	version = a2_key_park_version(key);
	if (version == 0 || a2_prepared_xacts_waiting())
		return;
	count_budget(entry, key, now_ms, max_leased, rate_max, per_ms);
	if (entry->budget <= 0 && entry->retry_at != PG_INT64_MAX)
		a2_key_park_propose(key, version, now_ms, entry->retry_at);
}

/*
 * a2_admit(key, now_ms): whether one more event with this key may be
 * claimed in the current pass.  Raises 55000 outside a claim.
 */
Datum
a2_admit(PG_FUNCTION_ARGS)
{
	char	   *key;
	int64		now_ms;
	KeyEntry   *entry;
	bool		found;

	a2_require_arg(fcinfo, 0, "key");
	a2_require_arg(fcinfo, 1, "now_ms");
	key = text_to_cstring(PG_GETARG_TEXT_PP(0));
	now_ms = PG_GETARG_INT64(1);
	if (!pass_active)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a2_admit is called by a2_claim and a2_claim_next only")));
	if (strlen(key) > A2_MAX_NAME_BYTES)
		PG_RETURN_BOOL(false);	/* cannot be stored: a2_append checks keys */
	entry = hash_search(pass_keys, key, HASH_ENTER, &found);
	if (!found)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PG_TRY();
		{
			decide(entry, key, now_ms);
		}
		PG_CATCH();
		{
			/* the entry must not stay half-decided */
			(void) hash_search(pass_keys, key, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
		SPI_finish();
		if (entry->limited && entry->budget <= 0)
			note_held();
	}
	if (!entry->limited)
		PG_RETURN_BOOL(true);
	if (entry->budget <= 0)
	{
		pass_denied = true;
		pass_retry_at = Min(pass_retry_at, entry->retry_at);
		PG_RETURN_BOOL(false);
	}
	entry->budget--;
	if (entry->budget == 0)
		note_held();			/* spent: the walk leaves the key out from now on */
	PG_RETURN_BOOL(true);
}

/*
 * a2_limits_changed(): the statement trigger of a2_limits.  A changed
 * limit may admit more, so no key stays parked past this transaction's
 * commit (key_park.h).
 */
Datum
a2_limits_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a2_limits_changed is the trigger of a2_limits only")));
	a2_key_park_release_all();
	return PointerGetDatum(NULL);
}

/*
 * The walk's test of a head's key (a2_claim_next, with the head's session
 * lock held, so the lock order is a2_admit's): decide the key as a2_admit
 * would the first time the call meets it, and answer whether it admits
 * one more event, without spending budget.  False: *retry_at is when it
 * may admit again (PG_INT64_MAX when the call's own claims spent the
 * budget: their leases are in the walk's retryAt).
 */
bool
a2_limits_key_open(const char *key, int64 now_ms, int64 *retry_at)
{
	KeyEntry   *entry;
	bool		found;

	Assert(call_active);
	*retry_at = PG_INT64_MAX;
	if (strlen(key) > A2_MAX_NAME_BYTES)
		return true;			/* a2_admit's answer: false for its events */
	entry = hash_search(pass_keys, key, HASH_ENTER, &found);
	if (!found)
	{
		PG_TRY();
		{
			decide(entry, key, now_ms);
		}
		PG_CATCH();
		{
			(void) hash_search(pass_keys, key, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (entry->limited && entry->budget <= 0)
			note_held();
	}
	if (!entry->limited || entry->budget > 0)
		return true;
	*retry_at = entry->retry_at;
	return false;
}

/* Whether the call has found this key admits nothing more (no query). */
bool
a2_limits_key_held(const char *key)
{
	KeyEntry   *entry;

	if (!call_active || pass_keys == NULL || strlen(key) > A2_MAX_NAME_BYTES)
		return false;
	entry = hash_search(pass_keys, key, HASH_FIND, NULL);
	return entry != NULL && entry->limited && entry->budget <= 0;
}

/*
 * The keys this call has found admit nothing more, as text[] for the
 * walk's statements: their events are left out of the walk for the rest
 * of the call (none of them would be claimed in it).
 */
Datum
a2_limits_held_keys(void)
{
	HASH_SEQ_STATUS seq;
	KeyEntry   *entry;
	char	  **keys;
	int			n = 0;
	MemoryContext old;

	if (!call_active || pass_keys == NULL)
		return a2_text_array(NULL, 0);
	if (held_array)
		return held_array;		/* no key became held since it was built */
	old = MemoryContextSwitchTo(pass_cxt);
	keys = palloc(sizeof(char *) * Max(hash_get_num_entries(pass_keys), 1));
	hash_seq_init(&seq, pass_keys);
	while ((entry = hash_seq_search(&seq)) != NULL)
		if (entry->limited && entry->budget <= 0)
			keys[n++] = entry->key;
	held_array = a2_text_array(keys, n);
	MemoryContextSwitchTo(old);
	return held_array;
}

void
a2_limits_note_claims(uint64 n, int64 now_ms)
{
	SPITupleTable *saved = SPI_tuptable;
	uint64		saved_n = SPI_processed;
	char	  **keys = palloc(sizeof(char *) * Max(n, 1));
	int			nkeys = 0;
	A2Args		a;

	if (pass_keys == NULL)
		return;
	for (uint64 r = 0; r < n; r++)
	{
		char	   *key = a2_col_text(r, A2C_CONCURRENCY_KEY);
		KeyEntry   *entry;

		if (key == NULL)
			continue;
		entry = hash_search(pass_keys, key, HASH_FIND, NULL);
		if (entry && entry->rated)
			keys[nkeys++] = key;
	}
	if (nkeys == 0)
		return;
	a2_args_init(&a, &log_claims);
	a2_bind(&a, 1, TEXTARRAYOID, a2_text_array(keys, nkeys));
	a2_bind_int8(&a, 2, now_ms);
	a2_exec_latest(&a, SPI_OK_INSERT);
	/* the caller prints the claimed rows */
	SPI_tuptable = saved;
	SPI_processed = saved_n;
}

