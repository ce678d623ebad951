/*-------------------------------------------------------------------------
 *
 * dispatch_walk.c
 *	  Queues and priorities (0.4.0, docs/semantics.md "Queues, priorities
 *	  and limits"): a2_claim_next's walk over queues and priority levels,
 *	  and its retryAt (the queues argument and the paused queues:
 *	  queues.c).
 *
 *	  Where the work is: a2_events_default_available holds the default queue's
 *	  priority-0 work (queue and priority NULL), a2_events_queue_available
 *	  everything else, keyed (queue, priority, available-since, session).
 *	  A call for some queues keeps one cursor per queue served.  A cursor reads its
 *	  queue's highest priority level oldest first and stops at now, then
 *	  finds the next lower level with one probe (the default queue's level
 *	  0 is the walk of a2_events_default_available, the layer's next_available).
 *	  Each step serves the best head among the cursors: highest priority,
 *	  then oldest available-since, then session id.  So the cost per
 *	  session served is a few index probes per queue served, whatever the
 *	  backlog of queues not served, and nothing of a paused queue is read.
 *	  A session whose best available event has priority p is served before
 *	  every session whose best has a lower priority (strict priority:
 *	  lower levels can starve while higher ones have work available).
 *
 *	  Limits: the walk leaves out the events of every concurrency key
 *	  this call has found admits nothing more (limits.c keeps the call's
 *	  decisions): each probe (dispatch_probes.c) filters them in its index
 *	  scan, so such an entry costs a step inside the probe, not a probe, a
 *	  session try-lock and a claim of its own.  In
 *	  a2_events_queue_available the scan is index-only (the key is an
 *	  INCLUDE column), so the step visits the heap only where the page is
 *	  not all-visible.  A key is found
 *	  held the first time the walk meets it at its limit (the caller
 *	  decides it under the session lock); heads fetched before that are
 *	  dropped.  Equivalent to claiming and being denied: the key's
 *	  decision stands for the whole call.
 *
 *	  A call for every queue (queues NULL) keeps two cursors: the default
 *	  queue's plain level, and one over a2_events_level_available, which
 *	  holds a2_events_queue_available's entries led by the level, highest
 *	  first: it reads each level of every queue at once, oldest first,
 *	  leaving out the paused queues' work as it leaves out held keys'.
 *	  One probe finds the next level down and its oldest entry together.
 *	  The order served is the merge of the per-queue cursors' orders, with
 *	  no probe per queue, and the cost per session served does not grow
 *	  with the number of queues.
 *
 *	  Locks: none of its own; the caller's try_claim tries the session
 *	  lock (layer.h's order).  Every probe reads the latest committed
 *	  state (a2_exec_latest), as the layer's walk does; each is read
 *	  directly where it may (dispatch_probes.h).
 *
 * IDENTIFICATION
 *	  src/dispatch_walk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "storage/bufmgr.h"
#include "utils/hsearch.h"
#include "utils/rel.h"

#include "a2.h"
#include "dispatch_probes.h"
#include "dispatch_walk.h"
#include "extension.h"
#include "queues.h"
#include "layer.h"
#include "limits.h"
#include "spi_util.h"
#include "walk_mark.h"

/* ---- the walk ---------------------------------------------------------- */

typedef struct Cursor
{
	char	   *queue;			/* NULL: the default queue */
	bool		all;			/* every queue's levels (a call for every queue) */
	bool		in_level;		/* all: reading `level` past the position */
	A2Paused	paused;			/* all: the paused queues, left out */
	bool		plain_only;		/* the default queue's level 0 only */
	bool		done;
	bool		plain;			/* at the default queue's level 0 */
	int32		level;
	int64		after_at;
	char	   *after_session;
	bool		has_head;
	int64		head_at;
	char	   *head_session;
	char	   *head_key;		/* the head event's concurrency key, or NULL */
	bool		started;		/* level found by the queue discovery */
	bool		mark_read;		/* the plain level's walk mark was read */
	A2WalkMark	mark;
} Cursor;

/* no transaction id when the call began (walk_mark.h) */
static bool walk_clean;

/*
 * Move to `level`, the highest of the cursor's queue below `below` (not
 * found: none).  The default queue's level 0 is its plain walk.
 */
static void
set_level(Cursor *c, int32 below, bool found, int32 level)
{
	c->after_at = PG_INT64_MIN;
	c->after_session = "";
	if (c->plain_only)
	{
		c->done = true;			/* its one level is done */
		return;
	}
	if (c->queue == NULL && !c->plain && below > 0 && (!found || level < 0))
	{
		c->plain = true;
		c->level = 0;
		return;
	}
	c->plain = false;
	if (!found)
	{
		c->done = true;
		return;
	}
	c->level = level;
}

/* Move to the next level below the cursor's (below A2_TOP_LEVEL at the start). */
static void
next_level(Cursor *c, bool first)
{
	int32		below = first ? A2_TOP_LEVEL : c->level;
	int32		level = 0;
	bool		found = c->plain_only ? false :
		a2_probe_level_below(c->queue, below, &level);

	set_level(c, below, found, level);
}

static bool
empty_array(Datum arr)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);

	return ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)) == 0;
}

/*
 * The plain level's first probe starts at the walk mark (walk_mark.h):
 * no live entry lies below it.  Only without held keys, whose filter
 * would hide live entries from what the probe tells.
 */
static void
plain_start(Cursor *c, Datum held)
{
	c->mark_read = true;
	if (!empty_array(held))
		return;
	a2_walk_mark_read(&c->mark, walk_clean && a2_walk_mark_clean());
	if (c->mark.usable && c->mark.mark > PG_INT64_MIN)
		c->after_at = c->mark.mark - 1;
}

/* What the plain level's first probe found: nothing live below at. */
static void
plain_seen(Cursor *c, bool found, int64 now_ms)
{
	if (found)
		a2_walk_mark_raise(&c->mark, c->head_at);
	else if (now_ms < PG_INT64_MAX)
		a2_walk_mark_raise(&c->mark, now_ms + 1);
}

/* The entry a probe found is the cursor's position and head. */
static void
take_head(Cursor *c, int64 at, char *session, char *key)
{
	c->after_at = at;
	c->after_session = session;
	c->has_head = true;
	c->head_at = at;
	c->head_session = session;
	c->head_key = key;
}

/*
 * The next head of the cursor of a call for every queue: inside a level,
 * its next entry available now; past it (and at the start), the first
 * entry below the level, which is the next level's head when it is
 * available now.  When it is not, nothing of that level is (its oldest
 * entry comes first), and the level below it is next: one probe per
 * level, whatever the number of queues.
 */
static void
fetch_all_head(Cursor *c, int64 now_ms)
{
	while (!c->has_head && !c->done)
	{
		int64		at = c->after_at;
		char	   *session = c->after_session;
		char	   *key = NULL;
		int32		level;

		if (c->in_level &&
			a2_probe_all_head(c->level, now_ms, &c->paused, &at, &session, &key))
		{
			take_head(c, at, session, key);
			break;
		}
		/* each level is below the last, so the walk ends */
		if (!a2_probe_all_first(c->level, &c->paused, &level, &at, &session, &key) ||
			level >= c->level)
		{
			c->done = true;
			break;
		}
		c->level = level;
		c->in_level = at <= now_ms;
		if (c->in_level)
			take_head(c, at, session, key);
	}
}

static void
fetch_head(Cursor *c, int64 now_ms)
{
	if (c->all)
	{
		fetch_all_head(c, now_ms);
		return;
	}
	while (!c->has_head && !c->done)
	{
		bool		first_plain = c->plain && !c->mark_read;
		int64		at;
		char	   *session;
		char	   *key = NULL;
		bool		found;

		/* the walk mark moves the start: read the position after it */
		if (first_plain)
			plain_start(c, a2_limits_held_keys());
		at = c->after_at;
		session = c->after_session;
		found = a2_probe_head(c->queue, c->plain, c->level, now_ms, &at, &session, &key);
		if (found)
			take_head(c, at, session, key);
		if (first_plain)
			plain_seen(c, found, now_ms);
		if (!found)
			next_level(c, false);
	}
}

/* a before b: higher level, then older, then session id */
static bool
head_before(const Cursor *a, const Cursor *b)
{
	int			cmp;

	if (a->level != b->level)
		return a->level > b->level;
	if (a->head_at != b->head_at)
		return a->head_at < b->head_at;
	cmp = strcmp(a->head_session, b->head_session);
	return cmp < 0;
}

static bool
in_array(const char *name, Datum arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i] && strcmp(TextDatumGetCString(elems[i]), name) == 0)
			return true;
	return false;
}

/*
 * Nothing was ever written to the btree index_name: it has its metapage
 * only (an entry of a transaction in progress has a page already).  An
 * entry that appears after this check is as one that appears after the
 * probes' snapshots.
 */
static bool
never_written(const char *index_name)
{
	Oid			relid = a2_relid(index_name);
	Relation	index;
	bool		empty;

	if (!OidIsValid(relid))
		return false;
	index = index_open(relid, AccessShareLock);
	empty = RelationGetNumberOfBlocks(index) <= 1;
	index_close(index, NoLock);
	return empty;
}

/*
 * Nothing to look for: no queue was ever paused, and nothing was ever
 * written to a2_events_queue_available.  The call would find no paused
 * queue, no level in a2_events_level_available and no entry in
 * a2_events_queue_retry (the three have the same predicate).
 */
static bool
never_queued(void)
{
	return a2_queues_never_paused() && never_written("a2_events_queue_available");
}

/*
 * The same for the default queue's priority-0 work: nothing was ever
 * written to a2_events_default_available (a deployment whose work is all
 * in named queues or has priorities).  On one server only: in distributed
 * mode the entries are in the shards' indexes.
 */
static bool
never_plain(void)
{
	return !a2_distributed() && never_written("a2_events_default_available");
}

/*
 * The cursors of the queues served, paused ones left out; *paused: the
 * paused queues.  *any_queued: a call for every queue may find entries in
 * a2_events_queue_available (not never_queued; a call for some queues:
 * always true); *any_plain, the same in a2_events_default_available.
 */
static Cursor *
served_cursors(Datum queues, Datum *paused, bool *any_queued, bool *any_plain, int *count)
{
	Cursor	   *cur;
	int			n = 0;

	*any_queued = true;
	*any_plain = true;
	if (queues)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nq;

		deconstruct_array(DatumGetArrayTypeP(queues), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &nq);
		*paused = a2_paused_queues();
		cur = palloc0(sizeof(Cursor) * Max(nq, 1));
		for (int i = 0; i < nq; i++)
		{
			char	   *q = TextDatumGetCString(elems[i]);
			bool		dup = false;

			if (in_array(q, *paused))
				continue;
			for (int j = 0; j < n; j++)
				if (strcmp(cur[j].queue ? cur[j].queue : "default", q) == 0)
					dup = true;
			if (dup)
				continue;
			cur[n++].queue = strcmp(q, "default") == 0 ? NULL : q;
		}
	}
	else
	{
		/*
		 * Every queue: the default queue's plain level, and one cursor
		 * over every queue's other levels (a2_events_level_available),
		 * which starts above the top level.
		 */
		cur = palloc0(sizeof(Cursor) * 2);
		*any_queued = !never_queued();
		*paused = *any_queued ? a2_paused_queues() : a2_text_array(NULL, 0);
		*any_plain = !never_plain();
		if (*any_plain && !in_array("default", *paused))
		{
			cur[n].plain_only = true;
			cur[n].plain = true;
			cur[n].after_session = "";
			cur[n].after_at = PG_INT64_MIN;
			cur[n++].started = true;
		}
		if (*any_queued)
		{
			cur[n].all = true;
			a2_paused_names(&cur[n].paused, *paused);
			cur[n].level = A2_TOP_LEVEL;
			cur[n].after_at = PG_INT64_MIN;
			cur[n].after_session = "";
			cur[n++].started = true;
		}
	}
	for (int i = 0; i < n; i++)
		if (!cur[i].started)
			next_level(&cur[i], true);
	*count = n;
	return cur;
}

static HTAB *
session_set(void)
{
	HASHCTL		ctl;

	ctl.keysize = A2_MAX_NAME_BYTES + 1;
	ctl.entrysize = A2_MAX_NAME_BYTES + 1;
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("a2_claim_next queue sessions", 16, &ctl,
					   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

/*
 * The plain level's retryAt: the first available-since time after now,
 * the probe starting past the walk mark's gap when now is in it
 * (walk_mark.h), and recording the gap it found.  The gap is recorded
 * only from a snapshot taken after the marks were read.
 */
static bool
plain_retry(int64 now_ms, int64 *at)
{
	A2WalkMark	m;
	int64		from = now_ms;
	bool		found;

	a2_walk_mark_read(&m, walk_clean && !IsolationUsesXactSnapshot());
	if (m.usable && m.mark > PG_INT64_MIN && m.mark - 1 > from)
		from = m.mark - 1;
	if (m.usable && m.has_gap && m.gap_lo <= now_ms && now_ms < m.gap_hi &&
		m.gap_hi - 1 > from)
		from = m.gap_hi - 1;
	found = a2_layer()->next_retry_at(from, at);
	if (m.usable)
		a2_walk_mark_set_gap(&m, now_ms, found ? *at : PG_INT64_MAX);
	return found;
}

/* The first available-since time after now at one cursor's levels. */
static void
cursor_retry(const char *queue, int64 now_ms, bool *has, int64 *at)
{
	Cursor		c;

	memset(&c, 0, sizeof(c));
	c.queue = unconstify(char *, queue);
	next_level(&c, true);
	while (!c.done)
	{
		int64		t;

		if (c.plain ? !plain_retry(now_ms, &t) :
			!a2_probe_retry(queue, c.level, now_ms, &t))
		{
			next_level(&c, false);
			continue;
		}
		if (!*has || t < *at)
			*at = t;
		*has = true;
		next_level(&c, false);
	}
}

void
a2_dispatch_walk(Datum queues, Datum *paused, int64 now_ms, int max_sessions,
				 A2TryClaim try_claim, void *arg, bool *has_retry,
				 int64 *retry_at)
{
	int			n;
	bool		any_queued;
	bool		any_plain;
	Cursor	   *cur = served_cursors(queues, paused, &any_queued, &any_plain, &n);
	HTAB	   *served = session_set();
	int			claimed = 0;

	walk_clean = a2_walk_mark_clean();

	while (claimed < max_sessions)
	{
		Cursor	   *best = NULL;
		bool		seen;

		for (int i = 0; i < n; i++)
		{
			fetch_head(&cur[i], now_ms);
			if (cur[i].has_head && (best == NULL || head_before(&cur[i], best)))
				best = &cur[i];
		}
		if (best == NULL)
			break;
		best->has_head = false;

		/*
		 * A head fetched before its key was found held: left, as the
		 * filter leaves the key's other events.  The session is not
		 * marked offered: its other work may come later in the walk.
		 */
		if (best->head_key && a2_limits_key_held(best->head_key))
			continue;
		(void) hash_search(served, best->head_session, HASH_ENTER, &seen);
		if (seen)
			continue;
		switch (try_claim(best->head_session, best->head_key, arg))
		{
			case A2_WALK_CLAIMED:
				claimed++;
				break;
			case A2_WALK_HELD:
				/* the head's key is held: the session's other work may come later */
				(void) hash_search(served, best->head_session, HASH_REMOVE, NULL);
				break;
			case A2_WALK_PASSED:
				break;
		}
	}
	hash_destroy(served);

	*has_retry = false;
	if (queues)
	{
		for (int i = 0; i < n; i++)
			cursor_retry(cur[i].queue, now_ms, has_retry, retry_at);
	}
	else
	{
		/*
		 * Every queue: one probe of a2_events_queue_retry and the plain
		 * walk's own.  A paused queue's lease expiry may be the answer: a
		 * retryAt is a time to look again, and an early one costs a call.
		 * The first is left out when the call began with nothing in
		 * a2_events_queue_available: the walk's claims of plain work add
		 * nothing there; the second, likewise, when nothing was ever in
		 * a2_events_default_available.
		 */
		int64		t;

		if (any_queued && a2_probe_any_retry(now_ms, &t))
		{
			*retry_at = t;
			*has_retry = true;
		}
		if (any_plain && plain_retry(now_ms, &t) && (!*has_retry || t < *retry_at))
		{
			*retry_at = t;
			*has_retry = true;
		}
	}
}
