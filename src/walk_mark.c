/*-------------------------------------------------------------------------
 *
 * walk_mark.c
 *	  Walk marks (walk_mark.h): a small table of slots in shared memory,
 *	  one per hash of (database, a2_events' relfilenode), each holding its
 *	  owner, the mark, the gap and the last lowerings.
 *
 *	  Why a mark is safe (docs/internals.md, "Walk marks"): an index entry
 *	  whose row version is dead stays dead.  An entry below the mark that
 *	  a later snapshot sees live was made by a write the recording walk did
 *	  not see: one that committed after the walk's snapshot, or that was
 *	  prepared.  Every write lowers the marks after its commit is visible
 *	  (XACT_EVENT_COMMIT runs after the commit is in the proc array), and
 *	  counts itself in the slot's sequence with the range of its keys.  A
 *	  walk reads the sequence before its snapshot and, when it records,
 *	  applies every lowering counted since; one it cannot see any more (the
 *	  ring overflowed) makes it record nothing.  So a lowering either came
 *	  before the walk's snapshot (the walk saw its rows) or is applied to
 *	  what it records, or it comes after the record and lowers it.  A
 *	  prepared transaction lowers at PREPARE, and no walk records while one
 *	  of the database is waiting (it commits in another backend).  A walk
 *	  records only when its transaction has written nothing: its own
 *	  uncommitted updates hide rows that would be live if it rolled back.
 *	  Its own pending writes are applied to what it reads.
 *
 *	  Which writes: a2's own statements that write a2_events are marked
 *	  walk_keys (statements.h) when their caller reports their keys; the
 *	  executor hook below drops the marks at the commit of any other write
 *	  to a table named a2_events (INSERT, UPDATE or MERGE), of an a2
 *	  statement when a2_events has a BEFORE ROW trigger (it may change the
 *	  row's key), and of COPY into a2_events; and every commit of a logical
 *	  replication apply worker, which writes without the executor.
 *
 *	  Lowering (kmin, kmax), the range of a transaction's keys:
 *	    mark = min(mark, kmin);
 *	    gap (lo, hi): unchanged when kmin >= hi; (max(lo, kmax), hi) when
 *	    kmax < hi; else dropped.
 *
 * IDENTIFICATION
 *	  src/walk_mark.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "replication/logicalworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "extension.h"
#include "prepared.h"
#include "plan_floor.h"
#include "walk_mark.h"

#define WALK_MARK_SLOTS 64
#define WALK_MARK_RING 32

typedef struct Lowering
{
	int64		kmin;
	int64		kmax;
} Lowering;

typedef struct WalkMarkSlot
{
	Oid			dbid;			/* owner; InvalidOid: none */
	Oid			relnode;
	int64		mark;
	bool		has_gap;
	int64		gap_lo;
	int64		gap_hi;
	uint64		seq;			/* lowerings counted in this slot */
	Lowering	ring[WALK_MARK_RING];	/* lowering s at ring[s % RING] */
} WalkMarkSlot;

typedef struct WalkMarkShared
{
	LWLock	   *lock;
	WalkMarkSlot slots[WALK_MARK_SLOTS];
} WalkMarkShared;

static WalkMarkShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/* this transaction's writes: the range of their keys, and their table */
static bool pending = false;
static Lowering pending_keys;
static Oid	pending_relnode = InvalidOid;

static void
walk_mark_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(WalkMarkShared)));
	RequestNamedLWLockTranche("a2_walk_mark", 1);
}

static void
walk_mark_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("a2 walk marks", sizeof(WalkMarkShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(WalkMarkShared));
		shared->lock = &(GetNamedLWLockTranche("a2_walk_mark"))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

static WalkMarkSlot *
slot_of(Oid relnode)
{
	uint32		h = hash_combine(hash_bytes_uint32(MyDatabaseId),
								 hash_bytes_uint32(relnode));

	return &shared->slots[h % WALK_MARK_SLOTS];
}

static bool
owned(const WalkMarkSlot *s, Oid relnode)
{
	return s->dbid == MyDatabaseId && s->relnode == relnode;
}

static void
lower_mark(int64 *mark, const Lowering *l)
{
	if (l->kmin < *mark)
		*mark = l->kmin;
}

static void
lower_gap(bool *has_gap, int64 *lo, int64 hi, const Lowering *l)
{
	if (!*has_gap || l->kmin >= hi)
		return;
	if (l->kmax < hi)
		*lo = Max(*lo, l->kmax);
	else
		*has_gap = false;
	if (*has_gap && *lo >= hi - 1)
		*has_gap = false;		/* nothing left between */
}

/*
 * Count one lowering in slot s, and apply it to the slot's marks when
 * they are the writer's (mine).  The caller holds the lock.
 */
static void
count_lowering(WalkMarkSlot *s, const Lowering *l, bool mine)
{
	s->seq++;
	s->ring[s->seq % WALK_MARK_RING] = *l;
	if (mine)
	{
		lower_mark(&s->mark, l);
		lower_gap(&s->has_gap, &s->gap_lo, s->gap_hi, l);
	}
}

static void
publish_pending(void)
{
	if (!pending || shared == NULL)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (OidIsValid(pending_relnode))
	{
		WalkMarkSlot *s = slot_of(pending_relnode);

		count_lowering(s, &pending_keys, owned(s, pending_relnode));
	}
	else
	{
		/* a write to a table we could not name: every slot of the database */
		for (int i = 0; i < WALK_MARK_SLOTS; i++)
			count_lowering(&shared->slots[i], &pending_keys,
						   shared->slots[i].dbid == MyDatabaseId);
	}
	LWLockRelease(shared->lock);
}

static void add_pending(Oid relnode, int64 kmin, int64 kmax);

static void
walk_mark_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* logical replication's apply writes without the executor */
			if (IsLogicalWorker())
				add_pending(InvalidOid, PG_INT64_MIN, PG_INT64_MAX);
			publish_pending();
			pending = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending = false;
			break;
		default:
			break;
	}
}

/* Add keys to this transaction's writes on the table relnode. */
static void
add_pending(Oid relnode, int64 kmin, int64 kmax)
{
	if (!pending)
	{
		pending = true;
		pending_keys.kmin = kmin;
		pending_keys.kmax = kmax;
		pending_relnode = relnode;
		return;
	}
	if (relnode != pending_relnode)
		pending_relnode = InvalidOid;	/* two tables named a2_events */
	pending_keys.kmin = Min(pending_keys.kmin, kmin);
	pending_keys.kmax = Max(pending_keys.kmax, kmax);
}

static bool
events_relnode(Oid *relnode)
{
	return !a2_distributed() && a2_relfilenode("a2_events", relnode);
}

void
a2_walk_mark_lower(int64 key, int64 key_max)
{
	Oid			relnode;

	if (shared == NULL || !events_relnode(&relnode))
		return;
	add_pending(relnode, key, Max(key, key_max));
}

void
a2_walk_mark_reset(void)
{
	a2_walk_mark_lower(PG_INT64_MIN, PG_INT64_MAX);
}

/* A relation written by a statement: its relfilenode if it is named a2_events. */
static bool
named_a2_events(Oid relid, Oid *relnode)
{
	HeapTuple	tup;
	bool		yes = false;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tup);

		if (strcmp(NameStr(c->relname), "a2_events") == 0)
		{
			yes = true;
			*relnode = (Oid) c->relfilenode;
		}
		ReleaseSysCache(tup);
	}
	return yes;
}

static void
walk_mark_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *ps = queryDesc->plannedstmt;
	bool		writes;
	bool		reported;
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	writes = ps->commandType == CMD_INSERT || ps->commandType == CMD_UPDATE ||
		ps->commandType == CMD_MERGE || ps->hasModifyingCTE;
	if (!writes || (eflags & EXEC_FLAG_EXPLAIN_ONLY))
		return;
	reported = a2_plan_floor_walk_keys(queryDesc->sourceText);
	foreach(lc, queryDesc->estate->es_opened_result_relations)
	{
		ResultRelInfo *rri = (ResultRelInfo *) lfirst(lc);
		TriggerDesc *td = rri->ri_TrigDesc;
		Oid			relnode;

		/* a user's BEFORE ROW trigger may change the key a2 reported */
		if (reported && !(td && (td->trig_insert_before_row || td->trig_update_before_row)))
			continue;
		if (named_a2_events(RelationGetRelid(rri->ri_RelationDesc), &relnode))
			add_pending(relnode, PG_INT64_MIN, PG_INT64_MAX);
	}
}

static void
walk_mark_process_utility(PlannedStmt *pstmt, const char *queryString,
						  bool readOnlyTree, ProcessUtilityContext context,
						  ParamListInfo params, QueryEnvironment *queryEnv,
						  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->is_from &&
		((CopyStmt *) stmt)->relation &&
		strcmp(((CopyStmt *) stmt)->relation->relname, "a2_events") == 0)
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) stmt)->relation, NoLock, true);
		Oid			relnode;

		if (OidIsValid(relid) && named_a2_events(relid, &relnode))
			add_pending(relnode, PG_INT64_MIN, PG_INT64_MAX);
		else
			add_pending(InvalidOid, PG_INT64_MIN, PG_INT64_MAX);
	}
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

void
a2_walk_mark_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = walk_mark_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = walk_mark_shmem_startup;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = walk_mark_executor_start;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = walk_mark_process_utility;
	RegisterXactCallback(walk_mark_xact_callback, NULL);
}

bool
a2_walk_mark_clean(void)
{
	return !TransactionIdIsValid(GetTopTransactionIdIfAny()) && !pending;
}

void
a2_walk_mark_read(A2WalkMark *m, bool clean_before)
{
	Oid			relnode;
	WalkMarkSlot *s;

	memset(m, 0, sizeof(*m));
	m->mark = PG_INT64_MIN;
	if (shared == NULL || !events_relnode(&relnode))
		return;
	m->usable = true;
	m->relnode = relnode;
	s = slot_of(relnode);
	LWLockAcquire(shared->lock, LW_SHARED);
	m->seq = s->seq;
	if (owned(s, relnode))
	{
		m->mark = s->mark;
		m->has_gap = s->has_gap;
		m->gap_lo = s->gap_lo;
		m->gap_hi = s->gap_hi;
	}
	LWLockRelease(shared->lock);

	/*
	 * After the sequence is read and before the probe's snapshot: a
	 * transaction prepared after this check counts its lowering after the
	 * sequence read; one prepared before it is waiting here.
	 */
	m->may_raise = clean_before && !a2_prepared_xacts_waiting();
	if (pending)
	{
		lower_mark(&m->mark, &pending_keys);
		lower_gap(&m->has_gap, &m->gap_lo, m->gap_hi, &pending_keys);
	}
}

/*
 * Apply to *mark and to the gap (when given) the lowerings counted in s
 * since m was read; false when some are no longer in the ring.
 */
static bool
since_read(const WalkMarkSlot *s, const A2WalkMark *m, int64 *mark,
		   bool *has_gap, int64 *lo, int64 hi)
{
	if (s->seq - m->seq >= WALK_MARK_RING)
		return false;
	for (uint64 i = m->seq + 1; i <= s->seq; i++)
	{
		const Lowering *l = &s->ring[i % WALK_MARK_RING];

		if (mark)
			lower_mark(mark, l);
		if (has_gap)
			lower_gap(has_gap, lo, hi, l);
	}
	return true;
}

void
a2_walk_mark_raise(const A2WalkMark *m, int64 mark)
{
	Oid			relnode = m->relnode;
	WalkMarkSlot *s;

	if (!m->usable || !m->may_raise)
		return;
	s = slot_of(relnode);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (since_read(s, m, &mark, NULL, NULL, 0))
	{
		if (!owned(s, relnode))
		{
			s->dbid = MyDatabaseId;
			s->relnode = relnode;
			s->has_gap = false;
			s->mark = mark;
		}
		else if (mark > s->mark)
			s->mark = mark;
	}
	LWLockRelease(shared->lock);
}

void
a2_walk_mark_set_gap(const A2WalkMark *m, int64 lo, int64 hi)
{
	WalkMarkSlot *s;
	bool		has_gap = hi > lo + 1;

	if (!m->usable || !m->may_raise || !has_gap)
		return;
	s = slot_of(m->relnode);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (owned(s, m->relnode) && since_read(s, m, NULL, &has_gap, &lo, hi) && has_gap)
	{
		s->has_gap = true;
		s->gap_lo = lo;
		s->gap_hi = hi;
	}
	LWLockRelease(shared->lock);
}
