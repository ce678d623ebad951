/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  Deferred NOTIFY a2_events, one per session per transaction.
 *
 *	  Appends and completions record (session, greatest new index, subxact
 *	  level) here instead of notifying at once; just before commit (or
 *	  PREPARE, which PostgreSQL then refuses as it refuses any NOTIFY) the
 *	  greatest index per session becomes one Async_Notify() with payload
 *	  {"sessionId": ..., "index": n}.  Entries made in an aborted
 *	  subtransaction are dropped, so a rolled-back savepoint notifies
 *	  nothing.  The list lives in TopTransactionContext and is forgotten
 *	  at transaction end.
 *
 *	  PostgreSQL serializes the commits of notifying transactions (one
 *	  database-wide lock around the queue write), so the setting a2.notify
 *	  (default on, as the contract says) lets a deployment that never
 *	  LISTENs turn the notifications off.
 *
 * IDENTIFICATION
 *	  src/notify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "notify.h"

#define A2_NOTIFY_CHANNEL "a2_events"

typedef struct PendingNotify
{
	char	   *session_id;
	int64		max_index;
	int			nest_level;
} PendingNotify;

static List *pending = NIL;
static bool a2_notify_enabled = true;

static void
send_pending(void)
{
	ListCell   *lc;
	List	   *sent = NIL;

	foreach(lc, pending)
	{
		PendingNotify *p = lfirst(lc);
		int64		max_index = p->max_index;
		bool		seen = false;
		ListCell   *lc2;
		StringInfoData payload;

		/* one notification per session: the greatest index wins */
		foreach(lc2, sent)
		{
			if (strcmp((char *) lfirst(lc2), p->session_id) == 0)
			{
				seen = true;
				break;
			}
		}
		if (seen)
			continue;
		for_each_cell(lc2, pending, lnext(pending, lc))
		{
			PendingNotify *q = lfirst(lc2);

			if (strcmp(q->session_id, p->session_id) == 0 && q->max_index > max_index)
				max_index = q->max_index;
		}
		sent = lappend(sent, p->session_id);

		initStringInfo(&payload);
		appendStringInfoString(&payload, "{\"sessionId\": ");
		escape_json(&payload, p->session_id);
		appendStringInfo(&payload, ", \"index\": " INT64_FORMAT "}", max_index);
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
	}
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (pending != NIL)
				send_pending();
			pending = NIL;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending = NIL;
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (pending == NIL)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, pending)
		{
			PendingNotify *p = lfirst(lc);

			if (p->nest_level >= level)
				pending = foreach_delete_current(pending, lc);
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, pending)
		{
			PendingNotify *p = lfirst(lc);

			if (p->nest_level >= level)
				p->nest_level = level - 1;
		}
	}
}

void
a2_notify_init(void)
{
	DefineCustomBoolVariable("a2.notify",
							 "Sends NOTIFY a2_events when a transaction adds events.",
							 "Turn off only where nobody LISTENs: notifying commits "
							 "are serialized by PostgreSQL.",
							 &a2_notify_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
}

void
a2_notify_session(const char *session_id, int64 max_index)
{
	int			level = GetCurrentTransactionNestLevel();
	MemoryContext old;
	PendingNotify *p;
	ListCell   *lc;

	if (!a2_notify_enabled)
		return;

	/* a later call at the same level only raises the index */
	foreach(lc, pending)
	{
		p = lfirst(lc);
		if (p->nest_level == level && strcmp(p->session_id, session_id) == 0)
		{
			p->max_index = Max(p->max_index, max_index);
			return;
		}
	}

	old = MemoryContextSwitchTo(TopTransactionContext);
	p = palloc(sizeof(PendingNotify));
	p->session_id = pstrdup(session_id);
	p->max_index = max_index;
	p->nest_level = level;
	pending = lappend(pending, p);
	MemoryContextSwitchTo(old);
}
