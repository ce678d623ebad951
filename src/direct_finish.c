/*-------------------------------------------------------------------------
 *
 * direct_finish.c
 *	  A completed event marked processed without the executor (direct.h;
 *	  docs/internals.md, "Direct writes").
 *
 *	  complete.c's finish_event statement does three things: it marks the
 *	  event processed, makes the next event of its lane lane-ready, and
 *	  releases the event's snapshot pins with the history rows no other
 *	  pin holds.  For an event with no lane, no pin of its own and no
 *	  history row in its session, only the first finds a row, so it is
 *	  done here: the locked row version (complete.lock_event read it FOR
 *	  UPDATE, with the latest snapshot) becomes a new version with
 *	  processed_at, processed_by_attempt and returned_event_ids set, the
 *	  lease cleared and lane_ready false, through the table access method,
 *	  with its index entries unless the update was HOT.
 *
 *	  The statement would also have checked DELETE on a2_snapshot_pins
 *	  and a2_snapshot_history and fired their statement triggers, finding
 *	  no row: those tables are checked for both (direct_shape.h,
 *	  a2_direct_bystander), and the statement runs when either would.
 *
 * IDENTIFICATION
 *	  src/direct_finish.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "nodes/bitmapset.h"
#include "utils/builtins.h"

#include "direct.h"
#include "direct_shape.h"
#include "pg_compat.h"

/* The columns finish_event sets. */
static const A2DirectColumn finished[] = {
	A2D_PROCESSED_AT, A2D_PROCESSED_BY_ATTEMPT, A2D_RETURNED_EVENT_IDS,
	A2D_LANE_READY, A2D_CLAIM_HOLDER, A2D_CLAIM_EXPIRES_AT
};

/* The locked version is the event's: its session and index. */
static bool
is_event(A2DirectTable *t, Datum session, int64 index)
{
	TupleTableSlot *slot = t->slot;
	int			s = a2_direct_att(A2D_SESSION_ID) - 1;
	int			i = a2_direct_att(A2D_IDX) - 1;

	return !slot->tts_isnull[s] && !slot->tts_isnull[i] &&
		DatumGetInt64(slot->tts_values[i]) == index &&
		DatumGetBool(DirectFunctionCall2Coll(texteq, C_COLLATION_OID,
											 slot->tts_values[s], session));
}

bool
a2_direct_finish(Datum session, int64 index, ItemPointer tid, int64 now_ms,
				 int32 attempt, Jsonb *returned_ids)
{
	A2DirectTable t;
	Bitmapset  *changed = NULL;
	bool		need_entries;
	TM_Result	result;

	if (!a2_direct_open(&t, ACL_UPDATE | ACL_SELECT))
		return false;
	/* the statement's lock order: a2_events, then the pins' tables */
	if (!a2_direct_bystander("a2_snapshot_pins", ACL_DELETE | ACL_SELECT) ||
		!a2_direct_bystander("a2_snapshot_history", ACL_DELETE | ACL_SELECT) ||
		!a2_direct_row_from(&t, tid))
	{
		a2_direct_close(&t);
		return false;
	}
	if (!is_event(&t, session, index))
		elog(ERROR, "a2: row %u/%u is not event %lld of its session",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 (long long) index);

	a2_direct_set(&t, A2D_PROCESSED_AT, Int64GetDatum(now_ms), false);
	a2_direct_set(&t, A2D_PROCESSED_BY_ATTEMPT, Int32GetDatum(attempt), false);
	a2_direct_set(&t, A2D_RETURNED_EVENT_IDS, JsonbPGetDatum(returned_ids), false);
	a2_direct_set(&t, A2D_LANE_READY, BoolGetDatum(false), false);
	a2_direct_set(&t, A2D_CLAIM_HOLDER, (Datum) 0, true);
	a2_direct_set(&t, A2D_CLAIM_EXPIRES_AT, (Datum) 0, true);
	if (!a2_direct_row_done(&t))
	{
		a2_direct_close(&t);
		return false;
	}

	/* as SPI does before each statement of a call that writes */
	CommandCounterIncrement();
	result = a2_table_update(t.rel, tid, t.slot, GetCurrentCommandId(true),
							 &need_entries);
	/* the caller's lock keeps every other writer out */
	if (result != TM_Ok)
		elog(ERROR, "a2: event %lld changed under its row lock (%d)",
			 (long long) index, (int) result);
	if (need_entries)
	{
		for (int i = 0; i < (int) lengthof(finished); i++)
			changed = bms_add_member(changed, a2_direct_att(finished[i]));
		a2_direct_index_entries(&t, changed);
	}
	a2_direct_close(&t);
	CommandCounterIncrement();
	return true;
}
