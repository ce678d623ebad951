/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  Durable waits (docs/semantics.md, "Waits"; docs/json.md, "waitFor").
 *
 *	  An event appended (by a2_append, or returned by a2_complete) with
 *	  "waitFor": {"types": [...], "timeoutMs": n} is not eligible until an
 *	  event of one of those types is appended to the same session after it,
 *	  or until its timeout (created_at + timeoutMs), whichever comes first.
 *
 *	  Offers (waits.h): what a waiting row stores; ending the waits a
 *	  batch satisfies; the replay check.  The waitFor object itself is
 *	  validated with the rest of an event (validate.c).
 *
 *	  Storage, and why nothing else changes: a waiting event's wait_for is
 *	  {"types", "timeoutMs"?, "until"?, "notBefore"?} (until: the timeout's
 *	  due time; notBefore: the event's own, epoch ms) and its not_before is
 *	  the gate greatest(own notBefore, until), or A2_WAIT_FOREVER without a
 *	  timeout (wait_gate.h).  Claims, a2_claim_next's walk
 *	  (a2_events_available), retryAt and the due announcements
 *	  (a2_events_due) all honour not_before already, so they need no
 *	  change, and a waiting event at a lane's head blocks the lane as a
 *	  delayed one does.  A satisfying append sets
 *	  wait_result {"index", "type"} and not_before back to the own notBefore
 *	  (or NULL), in its own transaction.  A timeout is never written: it is
 *	  derived when an event is printed (json_out.c: wait_for set,
 *	  wait_result NULL, store clock >= until).  A wait is ended only while
 *	  the event was never claimed: once claimed after its timeout, it stays
 *	  timed out.
 *
 *	  Cost: an append to a session reads the partial index a2_events_waiting
 *	  once (one page when the session has no waiting event) and writes
 *	  nothing; with waiting events it reads those only, never the session's
 *	  other events.  Not offered in distributed mode (0A000).
 *
 *	  Lock order: the caller holds the session lock (layer.h's step 1);
 *	  the waits ended are updated one by one in index order (step 2).
 *
 * IDENTIFICATION
 *	  src/waits.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "a2.h"
#include "clock.h"
#include "extension.h"
#include "json_out.h"
#include "layer.h"
#include "notify.h"
#include "spi_util.h"
#include "statements.h"
#include "waits.h"
#include "walk_mark.h"

/*
 * The session's waits that one of the batch's events satisfies, each with
 * the first satisfying event after it: unprocessed, never claimed, not
 * timed out ($4, now < until).  $2 holds the batch's types, $3 the index
 * before the batch.  The outer conditions are a2_events_waiting's
 * predicate, so the scan reads that index only.
 */
enum
{
	FIND_WAITING = 1,
	FIND_IDX,
	FIND_TYPE
};

static A2Statement find_satisfied = {
	.name = "waits.find_satisfied",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"SELECT w.idx AS waiting, n.idx, n.event_type"
				"  FROM @extschema@.a2_events w"
				"  CROSS JOIN LATERAL ("
				"    SELECT $3 OPERATOR(pg_catalog.+) i.ord AS idx, i.t AS event_type"
				"      FROM pg_catalog.unnest($2) WITH ORDINALITY AS i(t, ord)"
				"     WHERE $3 OPERATOR(pg_catalog.+) i.ord OPERATOR(pg_catalog.>) w.idx"
				"       AND (w.wait_for OPERATOR(pg_catalog.->) 'types') OPERATOR(pg_catalog.?) i.t"
				"     ORDER BY i.ord LIMIT 1) n"
				" WHERE w.session_id OPERATOR(pg_catalog.=) $1 AND w.wait_for IS NOT NULL"
				"   AND w.wait_result IS NULL AND w.processed_at IS NULL"
				"   AND w.attempt_count OPERATOR(pg_catalog.=) 0"
				"   AND COALESCE((w.wait_for OPERATOR(pg_catalog.->>) 'until')::pg_catalog.int8"
				"                OPERATOR(pg_catalog.>) $4, true)"
				" ORDER BY w.idx"),
	},
	.nparams = 4,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("event_types", TEXTARRAYOID),
	A2_PARAM("base", INT8OID), A2_PARAM("now", INT8OID)},
	.session_param = 1, .columns = A2_COLUMNS("waiting", "idx", "event_type")
};

/* End one wait: its result, and its own notBefore back as the gate. */
enum
{
	END_WAIT_NOT_BEFORE = 1,
	END_WAIT_AVAILABLE_AT
};

static A2Statement end_wait = {
	.name = "waits.end_wait",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"UPDATE @extschema@.a2_events e"
				"   SET wait_result = $3,"
				"       not_before = (e.wait_for OPERATOR(pg_catalog.->>) 'notBefore')::pg_catalog.int8"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) $2"
				" RETURNING e.not_before, " A2_AVAILABLE_KEY " AS available_at"),
	},
	.walk_keys = true,
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("idx", INT8OID),
	A2_PARAM("wait_result", JSONBOID)},
	.session_param = 1, .columns = A2_COLUMNS("not_before", "available_at")
};

A2_STATEMENT_GROUP(waits, &find_satisfied, &end_wait);

void
a2_waits_prepare(A2EventInput *events, int count, int64 now_ms)
{
	for (int i = 0; i < count; i++)
	{
		A2EventInput *ev = &events[i];
		A2Json		js = NULL;
		int64		until = 0;

		if (ev->wait_types == NULL)
			continue;
		if (a2_installed_objects() < A2_OBJECTS_0_4)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("waitFor needs the a2 0.4.0 tables"),
					 errdetail("A wait is stored in a2_events.wait_for, which this database does not have yet; nothing was written."),
					 errhint("Run ALTER EXTENSION a2 UPDATE.")));
		if (a2_distributed())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("waitFor is not supported in distributed mode"),
					 errdetail("events[%d] has a waitFor; nothing was written.", i)));

		a2j_begin_object(&js, NULL);
		a2j_jsonb(&js, "types", ev->wait_types);
		if (ev->has_wait_timeout)
		{
			char		path[64];

			snprintf(path, sizeof(path), "events[%d].waitFor.timeoutMs", i);
			until = a2_add_ms(now_ms, ev->wait_timeout_ms, path);
			a2j_int(&js, "timeoutMs", ev->wait_timeout_ms);
			a2j_int(&js, "until", until);
		}
		if (ev->has_not_before)
			a2j_int(&js, "notBefore", ev->not_before);
		ev->wait_gate = a2_wait_gate(ev->has_wait_timeout, until,
									 ev->has_not_before, ev->not_before);
		ev->wait_stored = JsonbValueToJsonb(a2j_end_object(&js));
	}
}

Jsonb **
a2_waits_satisfy(const char *session_id, A2EventInput *events, int count,
				 int64 base, int64 now_ms)
{
	A2Args		a;
	char	  **types;
	uint64		found;
	int64	   *waiting;
	Jsonb	  **results;
	Jsonb	  **own = NULL;

	if (count == 0 || a2_installed_objects() < A2_OBJECTS_0_4 || a2_distributed())
		return NULL;

	types = palloc(sizeof(char *) * count);
	for (int i = 0; i < count; i++)
		types[i] = events[i].type;
	a2_args_init(&a, &find_satisfied);
	a2_bind_text(&a, 1, session_id);
	a2_bind(&a, 2, TEXTARRAYOID, a2_text_array(types, count));
	a2_bind_int8(&a, 3, base);
	a2_bind_int8(&a, 4, now_ms);
	found = a2_exec_latest(&a, SPI_OK_SELECT);
	if (found == 0)
		return NULL;

	/* read them all before the updates replace SPI_tuptable */
	waiting = palloc(sizeof(int64) * found);
	results = palloc(sizeof(Jsonb *) * found);
	for (uint64 r = 0; r < found; r++)
	{
		A2Json		js = NULL;

		waiting[r] = a2_col_int64(r, FIND_WAITING);
		a2j_begin_object(&js, NULL);
		a2j_int(&js, "index", a2_col_int64(r, FIND_IDX));
		a2j_string(&js, "type", a2_col_text(r, FIND_TYPE));
		results[r] = JsonbValueToJsonb(a2j_end_object(&js));
	}

	for (uint64 r = 0; r < found; r++)
	{
		bool		isnull;
		Datum		nb;

		a2_args_init(&a, &end_wait);
		a2_bind_text(&a, 1, session_id);
		a2_bind_int8(&a, 2, waiting[r]);
		a2_bind(&a, 3, JSONBOID, JsonbPGetDatum(results[r]));
		if (a2_exec_latest(&a, SPI_OK_UPDATE_RETURNING) != 1)
			elog(ERROR, "waiting event %lld of session \"%s\" vanished under the session lock",
				 (long long) waiting[r], session_id);
		a2_walk_mark_lower(a2_col_int64(0, END_WAIT_AVAILABLE_AT),
						   a2_col_int64(0, END_WAIT_AVAILABLE_AT));
		nb = a2_col(0, END_WAIT_NOT_BEFORE, &isnull);
		/* a later own notBefore still needs its announcement */
		if (!isnull)
			a2_notify_due(DatumGetInt64(nb));
		if (waiting[r] > base)
		{
			if (own == NULL)
				own = palloc0(sizeof(Jsonb *) * count);
			own[waiting[r] - base - 1] = results[r];
		}
	}
	return own;
}

bool
a2_wait_matches(uint64 row, const A2EventInput *ev, bool check_not_before,
				bool *handled)
{
	bool		isnull;
	Datum		d = a2_col(row, A2C_WAIT_FOR, &isnull);
	Jsonb	   *stored;
	JsonbValue	f;
	int64		n;
	bool		has;

	*handled = !isnull;
	if (isnull)
		return ev->wait_types == NULL;
	if (ev->wait_types == NULL)
		return false;
	stored = DatumGetJsonbP(d);

	if (getKeyJsonValueFromContainer(&stored->root, "types", 5, &f) == NULL ||
		!DatumGetBool(DirectFunctionCall2(jsonb_eq,
										  JsonbPGetDatum(JsonbValueToJsonb(&f)),
										  JsonbPGetDatum(ev->wait_types))))
		return false;
	has = a2_json_field(&stored->root, "timeoutMs", &f) && a2_json_int64(&f, &n);
	if (has != ev->has_wait_timeout || (has && n != ev->wait_timeout_ms))
		return false;
	if (!check_not_before)
		return true;
	has = a2_json_field(&stored->root, "notBefore", &f) && a2_json_int64(&f, &n);
	return has == ev->has_not_before && (!has || n == ev->not_before);
}
