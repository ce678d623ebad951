/*-------------------------------------------------------------------------
 *
 * session.c
 *	  Reads of one session's state that several operations share.
 *
 * IDENTIFICATION
 *	  src/session.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "session.h"
#include "spi_util.h"
#include "statements.h"

static A2Statement session_pending = {
	.name = "session.pending",
	.texts = {
		A2_TEXT(A2_EVERYWHERE, A2_OBJECTS_0_1,
				"SELECT EXISTS (SELECT 1 FROM @extschema@.a2_events e"
				"                WHERE e.session_id OPERATOR(pg_catalog.=) $1"
				"                  AND e.processed_at IS NULL) AS pending"),
	},
	.nparams = 1, .params = {A2_PARAM("session_id", TEXTOID)},
	.session_param = 1, .columns = A2_COLUMNS("pending")
};

A2_STATEMENT_GROUP(session, &session_pending);

bool
a2_session_has_pending(const char *session_id)
{
	A2Args		a;

	a2_args_init(&a, &session_pending);
	a2_bind_text(&a, 1, session_id);
	a2_exec_latest(&a, SPI_OK_SELECT);
	return a2_col_bool(0, 1);	/* pending */
}

typedef struct LaneSlot
{
	const char *lane;
	int			pos;
} LaneSlot;

static int
cmp_lane_slot(const void *a, const void *b)
{
	const LaneSlot *x = a;
	const LaneSlot *y = b;
	int			c = strcmp(x->lane, y->lane);

	return c != 0 ? c : x->pos - y->pos;
}

/*
 * Sorting by (lane, position) keeps this O(n log n) for large batches.
 */
void
a2_batch_blocked_lanes(A2EventInput *events, int count, bool *blocked)
{
	LaneSlot   *slots = palloc(sizeof(LaneSlot) * Max(count, 1));
	int			n = 0;

	for (int i = 0; i < count; i++)
	{
		blocked[i] = false;
		if (events[i].lane)
		{
			slots[n].lane = events[i].lane;
			slots[n].pos = i;
			n++;
		}
	}
	qsort(slots, n, sizeof(LaneSlot), cmp_lane_slot);
	for (int k = 0; k < n; k++)
	{
		bool		same_lane = k > 0 && strcmp(slots[k - 1].lane, slots[k].lane) == 0;

		/* carry "blocked" along the lane's group, set by unsettled events */
		blocked[slots[k].pos] = same_lane &&
			(blocked[slots[k - 1].pos] || !events[slots[k - 1].pos].settled);
	}
	pfree(slots);
}
