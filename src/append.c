/*-------------------------------------------------------------------------
 *
 * append.c
 *	  a2_append(session_id, events): append a batch of events to a session.
 *
 *	  Order of work (docs/semantics.md, "append"): validate the whole batch; take
 *	  the session lock; detect an idempotent replay (every id already stored
 *	  in this session, unchanged) and return it without writing; check the
 *	  attempt-currency fence with the parent rows locked in index order;
 *	  then insert the batch (events.h).
 *
 * IDENTIFICATION
 *	  src/append.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "port.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "a2.h"
#include "events.h"
#include "call.h"
#include "clock.h"
#include "layer.h"
#include "notify.h"
#include "scheduler.h"
#include "session.h"
#include "spi_util.h"
#include "statements.h"
#include "uuid7.h"

PG_FUNCTION_INFO_V1(a2_append);

enum
{
	LOCK_PARENTS_IDX = 1,
	LOCK_PARENTS_ATTEMPT_COUNT,
	LOCK_PARENTS_DEAD_LETTERED
};

static A2Statement lock_parents = {
	.name = "append.lock_parents",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT e.idx, e.attempt_count, e.failed_at IS NOT NULL AS dead_lettered"
				"  FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"
				" ORDER BY e.idx FOR UPDATE"),
	},
	.nparams = 2,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("parent_indexes", INT8ARRAYOID)},
	.session_param = 1, .columns = A2_COLUMNS("idx", "attempt_count", "dead_lettered")
};

A2_STATEMENT_GROUP(append, &lock_parents);

/*
 * Replay detection.  Returns true (and fills `js`) when every event of the
 * batch is already stored in this session with the same content.
 */
static bool
detect_replay(const char *session_id, A2EventInput *events, int count,
			  A2Json *js)
{
	char	  **ids = palloc(sizeof(char *) * count);
	int			nids = 0;
	uint64		found;

	for (int i = 0; i < count; i++)
		if (events[i].id)
			ids[nids++] = events[i].id;
	if (nids == 0)
		return false;

	found = a2_fetch_events_by_ids(session_id, ids, nids);
	if (found == 0)
		return false;

	for (uint64 r = 0; r < found; r++)
	{
		char	   *stored_session = a2_col_text(r, A2C_SESSION_ID);

		if (strcmp(stored_session, session_id) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
					 errmsg("event id \"%s\" already exists in another session",
							a2_col_text(r, A2C_EVENT_ID)),
					 errdetail("Appending to session \"%s\"; the id belongs to session \"%s\".",
							   session_id, stored_session)));
	}
	if (found != (uint64) count)
		ereport(ERROR,
				(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
				 errmsg("batch for session \"%s\" mixes %llu already-appended and %llu fresh events",
						session_id, (unsigned long long) found,
						(unsigned long long) (count - found)),
				 errhint("Replay the whole stored batch, or append only fresh events.")));

	/* every event has an id and rows are in batch order */
	for (int i = 0; i < count; i++)
		if (!a2_stored_matches(i, &events[i], true))
			ereport(ERROR,
					(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
					 errmsg("replayed event \"%s\" differs from stored event %lld of session \"%s\"",
							events[i].id,
							(long long) a2_col_int64(i, A2C_IDX), session_id),
					 errdetail("A replay must repeat the stored type, payload, lane, cause, notBefore and waitFor.")));

	for (uint64 r = 0; r < found; r++)
		a2j_event_row(js, NULL, SPI_tuptable->vals[r], SPI_tuptable->tupdesc, true);
	return true;
}

/* The attempt-currency fence, parents locked in index order. */
static void
check_fence(const char *session_id, A2EventInput *events, int count)
{
	int64	   *idxs = palloc(sizeof(int64) * count);
	int			n = 0;
	A2Args		a;
	uint64		found;

	for (int i = 0; i < count; i++)
		if (events[i].cause)
			idxs[n++] = events[i].cause_index;
	if (n == 0)
		return;

	a2_args_init(&a, &lock_parents);
	a2_bind_text(&a, 1, session_id);
	a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(idxs, NULL, n));
	found = a2_exec_latest(&a, SPI_OK_SELECT);

	for (int i = 0; i < count; i++)
	{
		A2EventInput *ev = &events[i];
		bool		matched = false;

		if (!ev->cause)
			continue;
		for (uint64 r = 0; r < found; r++)
		{
			if (a2_col_int64(r, LOCK_PARENTS_IDX) != ev->cause_index)
				continue;
			matched = true;
			if (a2_col_bool(r, LOCK_PARENTS_DEAD_LETTERED))
				ereport(ERROR,
						(errcode(ERRCODE_A2_SUPERSEDED_ATTEMPT),
						 errmsg("attempt %lld no longer owns event %lld in session \"%s\"",
								(long long) ev->cause_attempt,
								(long long) ev->cause_index, session_id),
						 errdetail("The event was dead-lettered.")));
			if (a2_col_int64(r, LOCK_PARENTS_ATTEMPT_COUNT) != ev->cause_attempt)
				ereport(ERROR,
						(errcode(ERRCODE_A2_SUPERSEDED_ATTEMPT),
						 errmsg("attempt %lld no longer owns event %lld in session \"%s\"",
								(long long) ev->cause_attempt,
								(long long) ev->cause_index, session_id),
						 errdetail("The event's current attempt is %lld.",
								   (long long) a2_col_int64(r, LOCK_PARENTS_ATTEMPT_COUNT))));
			break;
		}
		if (!matched)
			ereport(ERROR,
					(errcode(ERRCODE_A2_NOT_FOUND),
					 errmsg("no event at index %lld in session \"%s\"",
							(long long) ev->cause_index, session_id),
					 errdetail("events[%d].cause names a parent that does not exist.", i)));
	}
}

static Jsonb *
append_batch(const char *session_id, A2EventInput *events, int count)
{
	A2Call		call;
	A2Json		js = NULL;
	bool		has_pending;
	JsonbValue *root;
	Jsonb	   *result;

	a2_call_begin(&call, session_id);
	a2j_begin_object(&js, NULL);
	a2j_begin_array(&js, "events");
	if (count == 0)
		has_pending = a2_session_has_pending(session_id);
	else
	{
		int64		now_ms;

		a2_check_duplicate_ids(events, count, session_id);
		a2_lock_session(session_id);
		if (detect_replay(session_id, events, count, &js))
			has_pending = a2_session_has_pending(session_id);
		else
		{
			bool		any_unsettled = false;

			check_fence(session_id, events, count);
			now_ms = a2_clock_now_ms();
			for (int i = 0; i < count; i++)
				any_unsettled |= !events[i].settled;
			/* an unsettled new event makes the session pending anyway */
			has_pending = true;
			a2_insert_events(session_id, events, count, now_ms, &js,
							 any_unsettled ? NULL : &has_pending);
		}
	}
	a2j_end_array(&js);
	a2j_bool(&js, "hasPending", has_pending);
	root = a2j_end_object(&js);
	result = a2j_finish(root, call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_append(PG_FUNCTION_ARGS)
{
	char	   *session_id = a2_name_arg(fcinfo, 0, "session_id");
	A2EventInput *events;
	int			count;

	a2_require_arg(fcinfo, 1, "events");
	events = a2_parse_events(PG_GETARG_JSONB_P(1), session_id, false, &count);
	PG_RETURN_JSONB_P(append_batch(session_id, events, count));
}
