/*-------------------------------------------------------------------------
 *
 * direct_queue_walk.c
 *	  The probes of a2_claim_next's walk over queues and priority levels
 *	  (dispatch_probes.c's statements) read without the executor
 *	  (docs/internals.md, "Direct writes"): a2_events_queue_available,
 *	  keyed (queue, COALESCE(priority, 0), available-since, session_id)
 *	  and including the concurrency key; a2_events_level_available, the
 *	  same keys less the queue, which it includes, the level descending;
 *	  a2_events_queue_retry.
 *
 *	  Each is an ordered scan of the index with the statement's bounds as
 *	  scan keys, read as the statement's index-only scan reads it: an
 *	  entry's values come from the index tuple, and its row is visited
 *	  only where the visibility map does not say the page is all visible
 *	  (else the page gets the predicate lock a visit would have taken
 *	  under SERIALIZABLE).  The first entry whose row the statement's
 *	  snapshot sees is the answer, where the walk leaves out the work of
 *	  the keys held in the call, and of the paused queues in a call for
 *	  every queue (the statements' filters), before any visit.
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

#include "access/nbtree.h"
#include "access/skey.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "a2.h"
#include "direct.h"
#include "direct_scan.h"
#include "direct_shape.h"
#include "limits.h"
#include "pg_compat.h"
#include "validate.h"

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

/* queue = `queue` (NULL: the default queue, queue IS NULL) */
static void
queue_key(A2ScanKeys *keys, Relation index, const char *queue)
{
	if (queue == NULL)
		a2_scan_key(keys, SK_ISNULL | SK_SEARCHNULL, QA_QUEUE, InvalidStrategy,
				InvalidOid, InvalidOid, (Datum) 0);
	else
		a2_scan_key(keys, 0, QA_QUEUE, BTEqualStrategyNumber,
				index->rd_indcollation[QA_QUEUE - 1], F_TEXTEQ,
				CStringGetTextDatum(queue));
}

/*
 * Text attribute `att` of the index tuple into buf (A2_MAX_NAME_BYTES + 1
 * bytes): false when null or longer than any name a2 stores.
 */
static bool
name_attr(IndexTuple itup, TupleDesc desc, int att, char *buf)
{
	bool		isnull;
	Datum		d = index_getattr(itup, att, desc, &isnull);
	text	   *t;
	int			len;

	if (isnull)
		return false;
	t = DatumGetTextPP(d);
	len = VARSIZE_ANY_EXHDR(t);
	if (len > A2_MAX_NAME_BYTES)
		return false;
	memcpy(buf, VARDATA_ANY(t), len);
	buf[len] = '\0';
	return true;
}

/* What a probe leaves out: the entries whose concurrency key the call holds (limits.h) ... */
typedef struct Skip
{
	int			key_att;		/* the concurrency key's attribute, 0: none left out */
	int			queue_att;		/* the queue's attribute, 0: no queue left out */
	const char *const *paused;	/* ... and those of these queues ("default": NULL) */
	int			npaused;
	int			level_att;		/* the level's attribute, 0: no level left out */
	int32		below;			/* ... and the levels not below this one */
} Skip;

static bool
skipped(IndexTuple itup, TupleDesc desc, const void *arg)
{
	const Skip *skip = arg;
	char		buf[A2_MAX_NAME_BYTES + 1];

	if (skip->level_att > 0)
	{
		bool		isnull;
		Datum		level = index_getattr(itup, skip->level_att, desc, &isnull);

		if (isnull || DatumGetInt32(level) >= skip->below)
			return true;
	}

	if (skip->key_att > 0 && name_attr(itup, desc, skip->key_att, buf) &&
		a2_limits_key_held(buf))
		return true;
	if (skip->queue_att > 0 && skip->npaused > 0)
	{
		const char *queue = name_attr(itup, desc, skip->queue_att, buf) ? buf : "default";

		for (int i = 0; i < skip->npaused; i++)
			if (strcmp(skip->paused[i], queue) == 0)
				return true;
	}
	return false;
}

/* One probe: open, snapshot, read, close.  -1: the statement is to run. */
static int
probe(A2DirectReadIndex which, bool latest,
	  void (*build) (A2ScanKeys *keys, Relation index, const void *arg), const void *arg,
	  ScanDirection dir, const Skip *skip, int natts, Datum *values, bool *isnull)
{
	A2DirectRead r;
	A2ScanKeys	keys;
	bool		found;

	if (!a2_direct_open_read(&r, which))
		return -1;
	a2_direct_push_snapshot(latest);
	keys.n = 0;
	build(&keys, r.index, arg);
	found = a2_scan_first_visible(r.rel, r.index, &keys, dir, skip ? skipped : NULL,
								  skip, natts, values, isnull, NULL);
	PopActiveSnapshot();
	a2_direct_close_read(&r);
	return found ? 1 : 0;
}

/* ---- the probes ---------------------------------------------------------- */

static const Skip held_keys = {.key_att = QA_CONCURRENCY_KEY};

typedef struct Bounds
{
	bool		all_queues;		/* a2_events_level_available: no queue column */
	const char *queue;
	int32		level;
	int64		now_ms;
	int64		after_at;
	const char *after_session;
	bool		rest_of_time;	/* the rest of after_at's entries, else the later times */
} Bounds;

/*
 * The level's keys: queue (unless all_queues) and priority, then the
 * position's; a2_events_level_available's columns are the queue index's
 * less the first.
 */
static void
next_keys(A2ScanKeys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;
	int			shift = b->all_queues ? 1 : 0;
	AttrNumber	session = QA_SESSION_ID - shift;

	if (!b->all_queues)
		queue_key(keys, index, b->queue);
	a2_scan_key(keys, 0, QA_PRIORITY - shift, BTEqualStrategyNumber, InvalidOid, F_INT4EQ,
			Int32GetDatum(b->level));
	if (b->rest_of_time)
	{
		a2_scan_int8_key(keys, QA_AVAILABLE_AT - shift, BTEqualStrategyNumber, b->after_at);
		a2_scan_key(keys, 0, session, BTGreaterStrategyNumber,
				index->rd_indcollation[session - 1], F_TEXT_GT,
				CStringGetTextDatum(b->after_session));
	}
	else
	{
		a2_scan_int8_key(keys, QA_AVAILABLE_AT - shift, b->after_session[0] != '\0' ?
				 BTGreaterStrategyNumber : BTGreaterEqualStrategyNumber, b->after_at);
		a2_scan_int8_key(keys, QA_AVAILABLE_AT - shift, BTLessEqualStrategyNumber, b->now_ms);
	}
}

/*
 * The next head after (*after_at, *after_session) within `b`'s level, in
 * index `which`, as a2_direct_next_available reads it: the rest of
 * after_at's entries, then the times after it.  v/n: the entry's first
 * `natts` columns.
 */
static int
next_head(A2DirectReadIndex which, Bounds *b, const Skip *skip, int natts,
		  Datum *v, bool *n)
{
	int			found = 0;

	if (b->after_session[0] != '\0' && b->after_at <= b->now_ms)
	{
		b->rest_of_time = true;
		found = probe(which, true, next_keys, b, ForwardScanDirection, skip, natts, v, n);
		b->rest_of_time = false;
	}
	if (found == 0)
		found = probe(which, true, next_keys, b, ForwardScanDirection, skip, natts, v, n);
	return found;
}

int
a2_direct_queue_next(const char *queue, int32 level, int64 now_ms,
					 int64 *after_at, char **after_session, char **key)
{
	Bounds		b = {false, queue, level, now_ms, *after_at, *after_session, false};
	Datum		v[QA_NATTS];
	bool		n[QA_NATTS];
	int			found = next_head(A2D_READ_QUEUE_AVAILABLE, &b, &held_keys, QA_NATTS, v, n);

	if (found > 0)
	{
		*after_at = DatumGetInt64(v[QA_AVAILABLE_AT - 1]);
		*after_session = TextDatumGetCString(v[QA_SESSION_ID - 1]);
		*key = n[QA_CONCURRENCY_KEY - 1] ? NULL :
			TextDatumGetCString(v[QA_CONCURRENCY_KEY - 1]);
	}
	return found;
}

/* A read of the whole index, in order. */
static void
no_keys(A2ScanKeys *keys, Relation index, const void *arg)
{
}

static void
level_keys(A2ScanKeys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;

	if (!b->all_queues)
		queue_key(keys, index, b->queue);
	a2_scan_key(keys, 0, b->all_queues ? QA_PRIORITY - 1 : QA_PRIORITY,
			BTLessStrategyNumber, InvalidOid, F_INT4LT, Int32GetDatum(b->level));
}

int
a2_direct_queue_level(const char *queue, int32 below, int32 *level)
{
	Bounds		b = {.queue = queue, .level = below};
	Datum		v[QA_PRIORITY];
	bool		n[QA_PRIORITY];
	int			found;

	found = probe(A2D_READ_QUEUE_AVAILABLE, true, level_keys, &b,
				  BackwardScanDirection, NULL, QA_PRIORITY, v, n);
	if (found > 0)
		*level = DatumGetInt32(v[QA_PRIORITY - 1]);
	return found;
}

static void
retry_keys(A2ScanKeys *keys, Relation index, const void *arg)
{
	const Bounds *b = arg;

	queue_key(keys, index, b->queue);
	a2_scan_key(keys, 0, QA_PRIORITY, BTEqualStrategyNumber, InvalidOid, F_INT4EQ,
			Int32GetDatum(b->level));
	a2_scan_int8_key(keys, QA_AVAILABLE_AT, BTGreaterStrategyNumber, b->now_ms);
}

int
a2_direct_queue_retry(const char *queue, int32 level, int64 now_ms, int64 *at)
{
	Bounds		b = {.queue = queue, .level = level, .now_ms = now_ms};
	Datum		v[QA_AVAILABLE_AT];
	bool		n[QA_AVAILABLE_AT];
	int			found;

	found = probe(A2D_READ_QUEUE_AVAILABLE, false, retry_keys, &b,
				  ForwardScanDirection, NULL, QA_AVAILABLE_AT, v, n);
	if (found > 0)
		*at = DatumGetInt64(v[QA_AVAILABLE_AT - 1]);
	return found;
}

static void
after_now_keys(A2ScanKeys *keys, Relation index, const void *arg)
{
	a2_scan_int8_key(keys, 1, BTGreaterStrategyNumber, *(const int64 *) arg);
}

int
a2_direct_queue_any_retry(int64 now_ms, int64 *at)
{
	Datum		v[1];
	bool		n[1];
	int			found;

	found = probe(A2D_READ_QUEUE_RETRY, false, after_now_keys, &now_ms,
				  ForwardScanDirection, NULL, 1, v, n);
	if (found > 0)
		*at = DatumGetInt64(v[0]);
	return found;
}

/* ---- a call for every queue: a2_events_level_available -------------------- */

/* its columns, as its index tuples hold them (the level descending) */
enum
{
	LA_PRIORITY = 1,			/* COALESCE(priority, 0) */
	LA_AVAILABLE_AT,
	LA_SESSION_ID,
	LA_QUEUE,					/* the INCLUDE columns */
	LA_CONCURRENCY_KEY,
	LA_NATTS = LA_CONCURRENCY_KEY
};

/* An entry's position and key, from its values. */
static void
level_entry(const Datum *v, const bool *n, int64 *at, char **session, char **key)
{
	*at = DatumGetInt64(v[LA_AVAILABLE_AT - 1]);
	*session = TextDatumGetCString(v[LA_SESSION_ID - 1]);
	*key = n[LA_CONCURRENCY_KEY - 1] ? NULL :
		TextDatumGetCString(v[LA_CONCURRENCY_KEY - 1]);
}

int
a2_direct_level_next(int32 level, int64 now_ms, const char *const *paused,
					 int npaused, int64 *after_at, char **after_session, char **key)
{
	Bounds		b = {true, NULL, level, now_ms, *after_at, *after_session, false};
	Skip		skip = {.key_att = LA_CONCURRENCY_KEY, .queue_att = LA_QUEUE,
	.paused = paused, .npaused = npaused};
	Datum		v[LA_NATTS];
	bool		n[LA_NATTS];
	int			found = next_head(A2D_READ_LEVEL_AVAILABLE, &b, &skip, LA_NATTS, v, n);

	if (found > 0)
		level_entry(v, n, after_at, after_session, key);
	return found;
}

/*
 * The first entry below level `below`, in the index's order: the highest
 * such level's oldest entry, available now or not, leaving out what
 * level_next leaves out.
 */
int
a2_direct_level_first(int32 below, const char *const *paused, int npaused,
					  int32 *level, int64 *at, char **session, char **key)
{
	Bounds		b = {.all_queues = true, .level = below};
	Skip		skip = {.key_att = LA_CONCURRENCY_KEY, .queue_att = LA_QUEUE,
	.paused = paused, .npaused = npaused};
	Datum		v[LA_NATTS];
	bool		n[LA_NATTS];
	int			found;

	/*
	 * From the top, the bound is checked on the entries the read returns,
	 * not as a scan key: the page read checks a scan key on every entry
	 * of the page, and this one holds for every level a2 writes.
	 */
	if (below > A2_MAX_PRIORITY)
	{
		skip.level_att = LA_PRIORITY;
		skip.below = below;
	}
	found = probe(A2D_READ_LEVEL_AVAILABLE, true,
				  skip.level_att > 0 ? no_keys : level_keys, &b,
				  ForwardScanDirection, &skip, LA_NATTS, v, n);
	if (found > 0)
	{
		*level = DatumGetInt32(v[LA_PRIORITY - 1]);
		level_entry(v, n, at, session, key);
	}
	return found;
}
