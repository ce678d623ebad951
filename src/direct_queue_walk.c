/*-------------------------------------------------------------------------
 *
 * direct_queue_walk.c
 *	  The probes of a2_claim_next's walk over queues and priority levels
 *	  (dispatch_probes.c's statements) read without the executor
 *	  (docs/internals.md, "Direct writes"): a2_events_queue_available,
 *	  keyed (queue, COALESCE(priority, 0), available-since, session_id)
 *	  and including the concurrency key, and a2_events_queue_retry.
 *
 *	  Each is an ordered scan of the index with the statement's bounds as
 *	  scan keys, read as the statement's index-only scan reads it: an
 *	  entry's values come from the index tuple, and its row is visited
 *	  only where the visibility map does not say the page is all visible
 *	  (else the page gets the predicate lock a visit would have taken
 *	  under SERIALIZABLE).  The first entry whose row the statement's
 *	  snapshot sees is the answer, where the walk leaves out the work of
 *	  the keys held in the call (the statements' filter) before any visit.
 *
 *	  Snapshots: as direct_walk.c's (a2_direct_push_snapshot): the
 *	  latest committed state for the walk's probes (a2_exec_latest), the
 *	  statement's snapshot for retryAt.
 *
 *	  Locks: a2_events and the index in ACCESS SHARE mode, as the
 *	  statements (direct_shape.h).
 *
 * IDENTIFICATION
 *	  src/direct_queue_walk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/itup.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "a2.h"
#include "direct.h"
#include "direct_shape.h"
#include "limits.h"
#include "pg_compat.h"

/* a2_events_queue_available's columns, as its index tuples hold them */
enum
{
	QA_QUEUE = 1,
	QA_PRIORITY,				/* COALESCE(priority, 0) */
	QA_AVAILABLE_AT,
	QA_SESSION_ID,
	QA_CONCURRENCY_KEY,			/* the first INCLUDE column */
	QA_NATTS = QA_CONCURRENCY_KEY
};

/* The scan keys of one probe, in the order of the index's columns. */
typedef struct Keys
{
	ScanKeyData k[5];
	int			n;
} Keys;

static void
add_key(Keys *keys, int flags, AttrNumber att, StrategyNumber strategy,
		Oid collation, RegProcedure proc, Datum arg)
{
	Assert(keys->n < lengthof(keys->k));
	ScanKeyEntryInitialize(&keys->k[keys->n++], flags, att, strategy, InvalidOid,
						   collation, proc, arg);
}

/* queue = `queue` (NULL: the default queue, queue IS NULL) */
static void
queue_key(Keys *keys, Relation index, const char *queue)
{
	if (queue == NULL)
		add_key(keys, SK_ISNULL | SK_SEARCHNULL, QA_QUEUE, InvalidStrategy,
				InvalidOid, InvalidOid, (Datum) 0);
	else
		add_key(keys, 0, QA_QUEUE, BTEqualStrategyNumber,
				index->rd_indcollation[QA_QUEUE - 1], F_TEXTEQ,
				CStringGetTextDatum(queue));
}

static void
int8_key(Keys *keys, AttrNumber att, StrategyNumber strategy, int64 value)
{
	RegProcedure proc;

	switch (strategy)
	{
		case BTLessEqualStrategyNumber:
			proc = F_INT8LE;
			break;
		case BTEqualStrategyNumber:
			proc = F_INT8EQ;
			break;
		case BTGreaterEqualStrategyNumber:
			proc = F_INT8GE;
			break;
		default:
			proc = F_INT8GT;
			break;
	}
	add_key(keys, 0, att, strategy, InvalidOid, proc, Int64GetDatum(value));
}

/* The entry's concurrency key is one the call holds (limits.h). */
static bool
held(IndexTuple itup, TupleDesc desc)
{
	bool		isnull;
	Datum		d = index_getattr(itup, QA_CONCURRENCY_KEY, desc, &isnull);
	text	   *t;
	int			len;
	char		buf[A2_MAX_NAME_BYTES + 1];

	if (isnull)
		return false;
	t = DatumGetTextPP(d);
	len = VARSIZE_ANY_EXHDR(t);
	if (len > A2_MAX_NAME_BYTES)
		return false;			/* never held: longer than any key a limit names */
	memcpy(buf, VARDATA_ANY(t), len);
	buf[len] = '\0';
	return a2_limits_key_held(buf);
}

/*
 * The first entry within `keys`, read in `dir`, whose row the active
 * snapshot sees (and, with skip_held, whose concurrency key the call
 * does not hold): its first `natts` columns copied into values/isnull.
 */
static bool
first_visible(A2DirectRead *r, Keys *keys, ScanDirection dir, bool skip_held,
			  int natts, Datum *values, bool *isnull)
{
	Snapshot	snapshot = GetActiveSnapshot();
	IndexScanDesc scan;
	TupleTableSlot *slot = NULL;
	Buffer		vmbuffer = InvalidBuffer;
	ItemPointer tid;
	bool		found = false;

	scan = a2_index_beginscan(r->rel, r->index, snapshot, keys->n);
	scan->xs_want_itup = true;
	index_rescan(scan, keys->k, keys->n, NULL, 0);
	while ((tid = index_getnext_tid(scan, dir)) != NULL)
	{
		BlockNumber block = ItemPointerGetBlockNumber(tid);

		CHECK_FOR_INTERRUPTS();
		if (skip_held && held(scan->xs_itup, scan->xs_itupdesc))
			continue;
		if (VM_ALL_VISIBLE(r->rel, block, &vmbuffer))
			PredicateLockPage(r->rel, block, snapshot);
		else
		{
			if (slot == NULL)
				slot = table_slot_create(r->rel, NULL);
			if (!index_fetch_heap(scan, slot))
				continue;
			ExecClearTuple(slot);
		}
		for (int i = 0; i < natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(scan->xs_itupdesc, i);

			values[i] = index_getattr(scan->xs_itup, i + 1, scan->xs_itupdesc, &isnull[i]);
			if (!isnull[i])
				values[i] = datumCopy(values[i], att->attbyval, att->attlen);
		}
		found = true;
		break;
	}
	if (BufferIsValid(vmbuffer))
		ReleaseBuffer(vmbuffer);
	index_endscan(scan);
	if (slot)
		ExecDropSingleTupleTableSlot(slot);
	return found;
}

/* One probe: open, snapshot, read, close.  -1: the statement is to run. */
static int
probe(A2DirectReadIndex which, bool latest,
	  void (*build) (Keys *keys, Relation index, const void *arg), const void *arg,
	  ScanDirection dir, bool skip_held, int natts, Datum *values, bool *isnull)
{
	A2DirectRead r;
	Keys		keys;
	bool		found;

	if (!a2_direct_open_read(&r, which))
		return -1;
	a2_direct_push_snapshot(latest);
	keys.n = 0;
	build(&keys, r.index, arg);
	found = first_visible(&r, &keys, dir, skip_held, natts, values, isnull);
	PopActiveSnapshot();
	a2_direct_close_read(&r);
	return found ? 1 : 0;
}

/* ---- the probes ---------------------------------------------------------- */

typedef struct Bounds
{
	const char *queue;
	int32		level;
	int64		now_ms;
	int64		after_at;
	const char *after_session;
	bool		rest_of_time;	/* the rest of after_at's entries, else the later times */
} Bounds;

static void
next_keys(Keys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;

	queue_key(keys, index, b->queue);
	add_key(keys, 0, QA_PRIORITY, BTEqualStrategyNumber, InvalidOid, F_INT4EQ,
			Int32GetDatum(b->level));
	if (b->rest_of_time)
	{
		int8_key(keys, QA_AVAILABLE_AT, BTEqualStrategyNumber, b->after_at);
		add_key(keys, 0, QA_SESSION_ID, BTGreaterStrategyNumber,
				index->rd_indcollation[QA_SESSION_ID - 1], F_TEXT_GT,
				CStringGetTextDatum(b->after_session));
	}
	else
	{
		int8_key(keys, QA_AVAILABLE_AT, b->after_session[0] != '\0' ?
				 BTGreaterStrategyNumber : BTGreaterEqualStrategyNumber, b->after_at);
		int8_key(keys, QA_AVAILABLE_AT, BTLessEqualStrategyNumber, b->now_ms);
	}
}

int
a2_direct_queue_next(const char *queue, int32 level, int64 now_ms,
					 int64 *after_at, char **after_session, char **key)
{
	Bounds		b = {queue, level, now_ms, *after_at, *after_session, false};
	Datum		v[QA_NATTS];
	bool		n[QA_NATTS];
	int			found = 0;

	/*
	 * (time, session) > (after_at, after_session), as direct_walk.c reads
	 * it: the rest of after_at's entries, then the times after it.
	 */
	if (b.after_session[0] != '\0' && b.after_at <= now_ms)
	{
		b.rest_of_time = true;
		found = probe(A2D_READ_QUEUE_AVAILABLE, true, next_keys, &b,
					  ForwardScanDirection, true, QA_NATTS, v, n);
		b.rest_of_time = false;
	}
	if (found == 0)
		found = probe(A2D_READ_QUEUE_AVAILABLE, true, next_keys, &b,
					  ForwardScanDirection, true, QA_NATTS, v, n);
	if (found > 0)
	{
		*after_at = DatumGetInt64(v[QA_AVAILABLE_AT - 1]);
		*after_session = TextDatumGetCString(v[QA_SESSION_ID - 1]);
		*key = n[QA_CONCURRENCY_KEY - 1] ? NULL :
			TextDatumGetCString(v[QA_CONCURRENCY_KEY - 1]);
	}
	return found;
}

static void
level_keys(Keys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;

	queue_key(keys, index, b->queue);
	add_key(keys, 0, QA_PRIORITY, BTLessStrategyNumber, InvalidOid, F_INT4LT,
			Int32GetDatum(b->level));
}

int
a2_direct_queue_level(const char *queue, int32 below, int32 *level)
{
	Bounds		b = {.queue = queue, .level = below};
	Datum		v[QA_PRIORITY];
	bool		n[QA_PRIORITY];
	int			found;

	found = probe(A2D_READ_QUEUE_AVAILABLE, true, level_keys, &b,
				  BackwardScanDirection, false, QA_PRIORITY, v, n);
	if (found > 0)
		*level = DatumGetInt32(v[QA_PRIORITY - 1]);
	return found;
}

static void
retry_keys(Keys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;

	queue_key(keys, index, b->queue);
	add_key(keys, 0, QA_PRIORITY, BTEqualStrategyNumber, InvalidOid, F_INT4EQ,
			Int32GetDatum(b->level));
	int8_key(keys, QA_AVAILABLE_AT, BTGreaterStrategyNumber, b->now_ms);
}

int
a2_direct_queue_retry(const char *queue, int32 level, int64 now_ms, int64 *at)
{
	Bounds		b = {.queue = queue, .level = level, .now_ms = now_ms};
	Datum		v[QA_AVAILABLE_AT];
	bool		n[QA_AVAILABLE_AT];
	int			found;

	found = probe(A2D_READ_QUEUE_AVAILABLE, false, retry_keys, &b,
				  ForwardScanDirection, false, QA_AVAILABLE_AT, v, n);
	if (found > 0)
		*at = DatumGetInt64(v[QA_AVAILABLE_AT - 1]);
	return found;
}

static void
prev_keys(Keys *keys, Relation index, const void *arg)
{
	const char *before = arg;

	if (before == NULL)
		add_key(keys, SK_ISNULL | SK_SEARCHNOTNULL, QA_QUEUE, InvalidStrategy,
				InvalidOid, InvalidOid, (Datum) 0);
	else
		add_key(keys, 0, QA_QUEUE, BTLessStrategyNumber,
				index->rd_indcollation[QA_QUEUE - 1], F_TEXT_LT,
				CStringGetTextDatum(before));
}

int
a2_direct_queue_prev(const char *before, char **queue, int32 *level)
{
	Datum		v[QA_PRIORITY];
	bool		n[QA_PRIORITY];
	int			found;

	found = probe(A2D_READ_QUEUE_AVAILABLE, true, prev_keys, before,
				  BackwardScanDirection, false, QA_PRIORITY, v, n);
	if (found > 0)
	{
		*queue = TextDatumGetCString(v[QA_QUEUE - 1]);
		*level = DatumGetInt32(v[QA_PRIORITY - 1]);
	}
	return found;
}

static void
after_now_keys(Keys *keys, Relation index, const void *arg)
{
	int8_key(keys, 1, BTGreaterStrategyNumber, *(const int64 *) arg);
}

int
a2_direct_queue_any_retry(int64 now_ms, int64 *at)
{
	Datum		v[1];
	bool		n[1];
	int			found;

	found = probe(A2D_READ_QUEUE_RETRY, false, after_now_keys, &now_ms,
				  ForwardScanDirection, false, 1, v, n);
	if (found > 0)
		*at = DatumGetInt64(v[0]);
	return found;
}
