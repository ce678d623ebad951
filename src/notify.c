/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  Announcements on a2_events, one per session per transaction.
 *
 *	  Appends and completions record (session, greatest new index, subxact
 *	  level) here instead of announcing at once.  Entries made in an aborted
 *	  subtransaction are dropped, so a rolled-back savepoint announces
 *	  nothing.  Just before commit (or PREPARE) the greatest index per
 *	  session is handed on, in one of two ways:
 *
 *	  - a2 preloaded (shared_preload_libraries): recorded in the notifier's
 *		shared queue with the top-level xid (notifier.c); the background
 *		notifier sends NOTIFY once the transaction has committed and is
 *		visible, outside this transaction's commit.  When the queue cannot
 *		take all of a transaction's entries, that transaction falls back to
 *		the in-transaction NOTIFY below (counted in a2_notify_status());
 *		a PREPARE, which cannot carry a NOTIFY, waits for room instead.
 *	  - otherwise: one Async_Notify() per session at pre-commit, with
 *		payload {"sessionId": ..., "index": n}, as a2 0.1 did.  PostgreSQL
 *		serializes the commits of notifying transactions, and refuses to
 *		PREPARE them.
 *
 *	  The list lives in TopTransactionContext and is forgotten at
 *	  transaction end; a table from session id to the session's newest
 *	  entry keeps a transaction that appends to n sessions at O(n), not
 *	  O(n^2).  The setting a2.notify (default on) turns
 *	  announcements off for the sessions that set it.
 *
 * IDENTIFICATION
 *	  src/notify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "commands/async.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "notifier.h"
#include "notifier_store.h"
#include "scheduler.h"
#include "notify.h"

typedef struct PendingNotify
{
	char	   *session_id;
	int64		max_index;
	int			nest_level;
	struct PendingNotify *shadowed; /* the session's entry before this one */
} PendingNotify;

/* A table keyed by a session id (a char *, hashed and compared as a string). */
typedef struct SessionEntry
{
	const char *session_id;		/* the key */
	PendingNotify *latest;		/* in `latest`: the session's newest entry */
	int			item;			/* in collect_pending: its item */
} SessionEntry;

static List *pending = NIL;
static HTAB *latest = NULL;		/* session id -> its newest entry, in pending */
static bool a2_notify_on = true;

static uint32
session_key_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	return hash_bytes((const unsigned char *) s, (int) strlen(s));
}

static int
session_key_match(const void *key1, const void *key2, Size keysize)
{
	return strcmp(*(const char *const *) key1, *(const char *const *) key2);
}

/* A table of SessionEntry in the current memory context. */
static HTAB *
session_table(const char *name, long size)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(const char *);
	ctl.entrysize = sizeof(SessionEntry);
	ctl.hash = session_key_hash;
	ctl.match = session_key_match;
	ctl.hcxt = CurrentMemoryContext;
	return hash_create(name, Max(size, 16), &ctl,
					   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

/* Forget the transaction's entries (their memory goes with the transaction). */
static void
forget_pending(void)
{
	pending = NIL;
	latest = NULL;
}

void
a2_notify_payload(StringInfo buf, const char *session_id, int64 max_index)
{
	appendStringInfoString(buf, "{\"sessionId\": ");
	escape_json(buf, session_id);
	appendStringInfo(buf, ", \"index\": " INT64_FORMAT "}", max_index);
}

bool
a2_notify_enabled(void)
{
	return a2_notify_on;
}

/*
 * An announcement falls due at due_ms: the database's scheduler sends it
 * then (scheduler.h), unless announcements are off.  The one way into the
 * scheduler for appends, failures and schedules, so that the scheduler
 * itself needs nothing from this file.
 */
void
a2_notify_due(int64 due_ms)
{
	if (a2_notify_on)
		a2_sched_note_due(due_ms);
}

/* The greatest index per session, one item per session, in first-seen order. */
static int
collect_pending(A2Announcement **items_out)
{
	A2Announcement *items;
	int			n = 0;
	ListCell   *lc;
	HTAB	   *seen = session_table("a2 announcements", list_length(pending));

	items = palloc(sizeof(A2Announcement) * list_length(pending));
	foreach(lc, pending)
	{
		PendingNotify *p = lfirst(lc);
		bool		found;
		SessionEntry *e = hash_search(seen, &p->session_id, HASH_ENTER, &found);

		if (found)
			items[e->item].max_index = Max(items[e->item].max_index, p->max_index);
		else
		{
			e->item = n;
			items[n].session_id = p->session_id;
			items[n].max_index = p->max_index;
			n++;
		}
	}
	hash_destroy(seen);
	*items_out = items;
	return n;
}

static void
notify_in_transaction(const A2Announcement *items, int n)
{
	StringInfoData payload;
	int			i;

	initStringInfo(&payload);
	for (i = 0; i < n; i++)
	{
		resetStringInfo(&payload);
		a2_notify_payload(&payload, items[i].session_id, items[i].max_index);
		Async_Notify(A2_NOTIFY_CHANNEL, payload.data);
	}
}

/*
 * A transaction about to PREPARE cannot NOTIFY.  Its entries go into the
 * queue, marked durable, and into a record on disk that outlives a
 * restart; a failure to write the record fails the PREPARE (nothing is
 * lost: the transaction aborts).  The queue is filled first so that a
 * worker reading the records back meanwhile finds the entries queued and
 * does not queue them twice.  Without room in the queue the record alone
 * holds them, and the worker is asked to read it back when it can.
 */
static void
record_for_prepare(const A2Announcement *items, int n)
{
	FullTransactionId fxid = GetTopFullTransactionIdIfAny();
	bool		queued;

	if (!FullTransactionIdIsValid(fxid))
		return;					/* wrote nothing: nothing to announce */
	queued = a2_notifier_record(fxid, items, n, true);
	a2_store_write_prepared(fxid, MyDatabaseId, items, n);
	if (!queued)
		a2_notifier_request_load(true);
}

static void
dispatch_pending(bool prepare)
{
	A2Announcement *items;
	int			n = collect_pending(&items);

	if (!a2_notifier_available())
		notify_in_transaction(items, n);
	else if (prepare)
		record_for_prepare(items, n);
	else if (!a2_notifier_record(GetTopFullTransactionIdIfAny(), items, n, false))
	{
		a2_notifier_count_fallback();
		notify_in_transaction(items, n);
	}
	pfree(items);
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (pending != NIL)
				dispatch_pending(event == XACT_EVENT_PRE_PREPARE);
			forget_pending();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
			/* this or another transaction (COMMIT PREPARED) may have finished */
			a2_notifier_wake();
			forget_pending();
			break;
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			forget_pending();
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
			SessionEntry *e;
			PendingNotify *keep;

			if (p->nest_level < level)
				continue;
			pending = foreach_delete_current(pending, lc);
			/* the session's newest entry that survives, if any */
			e = hash_search(latest, &p->session_id, HASH_FIND, NULL);
			if (e == NULL)
				continue;
			for (keep = e->latest; keep && keep->nest_level >= level; keep = keep->shadowed)
				;
			if (keep)
				e->latest = keep;
			else
				(void) hash_search(latest, &p->session_id, HASH_REMOVE, NULL);
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
							 "Announces on a2_events the events a transaction adds.",
							 "Turn off only where nobody LISTENs.",
							 &a2_notify_on,
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
	SessionEntry *e;

	if (!a2_notify_on)
		return;

	old = MemoryContextSwitchTo(TopTransactionContext);
	if (latest == NULL)
		latest = session_table("a2 pending announcements", 64);
	e = hash_search(latest, &session_id, HASH_FIND, NULL);
	/* a later call at the same level only raises the index */
	if (e != NULL && e->latest->nest_level == level)
	{
		e->latest->max_index = Max(e->latest->max_index, max_index);
		MemoryContextSwitchTo(old);
		return;
	}
	p = palloc(sizeof(PendingNotify));
	p->session_id = pstrdup(session_id);
	p->max_index = max_index;
	p->nest_level = level;
	p->shadowed = e ? e->latest : NULL;
	pending = lappend(pending, p);
	if (e == NULL)
		e = hash_search(latest, &p->session_id, HASH_ENTER, NULL);
	e->latest = p;
	MemoryContextSwitchTo(old);
}

/* a2_notify_status() */

PG_FUNCTION_INFO_V1(a2_notify_status);

/*
 * One row: the mode announcements take in this session ('notifier',
 * 'in-transaction', or 'off'), then the notifier's queue and counters
 * (a2_notifier_status_columns(); NULL without the preloaded library),
 * then (from 0.4.0's declaration) the durable records on disk and the
 * schedulers: running, and databases waiting for a background worker.
 */
#define NOTIFY_STATUS_COLUMNS_V3	(1 + A2_NOTIFIER_STATUS_COLUMNS)
#define NOTIFY_STATUS_COLUMNS		(NOTIFY_STATUS_COLUMNS_V3 + 4)

Datum
a2_notify_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[NOTIFY_STATUS_COLUMNS];
	bool		nulls[NOTIFY_STATUS_COLUMNS] = {0};
	int			records,
				set_aside,
				running,
				waiting;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	/* 0.3.0's declaration until ALTER EXTENSION a2 UPDATE: its 10 columns */
	if (tupdesc->natts != NOTIFY_STATUS_COLUMNS && tupdesc->natts != NOTIFY_STATUS_COLUMNS_V3)
		elog(ERROR, "a2_notify_status is declared with %d columns, expected %d",
			 tupdesc->natts, NOTIFY_STATUS_COLUMNS);
	values[0] = CStringGetTextDatum(!a2_notify_enabled() ? "off" :
									a2_notifier_available() ? "notifier" : "in-transaction");
	a2_notifier_status_columns(values + 1, nulls + 1);
	if (tupdesc->natts == NOTIFY_STATUS_COLUMNS)
	{
		Datum	   *more = values + NOTIFY_STATUS_COLUMNS_V3;
		bool	   *more_nulls = nulls + NOTIFY_STATUS_COLUMNS_V3;

		if (a2_notifier_available())
		{
			a2_store_count(&records, &set_aside);
			more[0] = Int32GetDatum(records);
			more[1] = Int32GetDatum(set_aside);
		}
		else
			more_nulls[0] = more_nulls[1] = true;
		if (a2_sched_status(&running, &waiting))
		{
			more[2] = Int32GetDatum(running);
			more[3] = Int32GetDatum(waiting);
		}
		else
			more_nulls[2] = more_nulls[3] = true;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
