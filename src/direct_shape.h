/*-------------------------------------------------------------------------
 *
 * direct_shape.h
 *	  What the direct writes and reads (direct.h) share: a2_events opened
 *	  for a write without the executor, its row built column by column,
 *	  and its index entries; opened for the walk's read of its index; the
 *	  statements' snapshot (docs/internals.md, "Direct writes").  For
 *	  direct_insert.c, direct_update.c, direct_walk.c,
 *	  direct_queue_walk.c, direct_limits.c, direct_available.c and
 *	  direct_lowwater.c only.
 *
 *	  a2_direct_open() answers false, with nothing open, wherever the
 *	  statement would do more than write a2_events' row and its index
 *	  entries: a trigger, a rule, a CHECK constraint, row-level security;
 *	  a column a2 does not write whose value only the executor can
 *	  compute; an index that is not a plain btree; the caller without the
 *	  privileges asked for on the whole table; a read-only or parallel
 *	  transaction; an executor permission hook.  The table's shape (which
 *	  attribute is which column, the constant defaults, each index's
 *	  IndexInfo with its predicate and expressions prepared) is kept per
 *	  backend and dropped at any relcache invalidation of a2_events.
 *
 *	  Locks: a2_events and each of its indexes in ROW EXCLUSIVE mode, as
 *	  the statements take them, held to the end of the transaction; a
 *	  read, a2_events and the index it reads in ACCESS SHARE mode.
 *
 * IDENTIFICATION
 *	  src/direct_shape.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DIRECT_SHAPE_H
#define A2_DIRECT_SHAPE_H

#include "postgres.h"

#include "access/genam.h"
#include "access/htup.h"
#include "access/stratnum.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/execnodes.h"
#include "utils/acl.h"
#include "utils/relcache.h"

/* The columns of a2_events a direct write names. */
typedef enum A2DirectColumn
{
	A2D_SESSION_ID,
	A2D_IDX,
	A2D_EVENT_TYPE,
	A2D_PAYLOAD,
	A2D_EVENT_ID,
	A2D_CREATED_AT,
	A2D_CAUSE,
	A2D_LANE,
	A2D_LANE_READY,
	A2D_PROCESSED_AT,
	A2D_NOT_BEFORE,
	A2D_QUEUE,
	A2D_PRIORITY,
	A2D_CONCURRENCY_KEY,
	A2D_WAIT_FOR,
	A2D_WAIT_RESULT,
	A2D_PROCESSED_BY_ATTEMPT,
	A2D_RETURNED_EVENT_IDS,
	A2D_CLAIM_HOLDER,
	A2D_CLAIM_EXPIRES_AT,
	A2D_FAILURE_COUNT,
	A2D_LAST_ERROR,
	A2D_LAST_FAILED_AT,
	A2D_LAST_FAILED_ATTEMPT,
	A2D_FAILED_AT,
	A2D_ATTEMPT_COUNT,
	A2D_FIRST_CLAIMED_AT,
	A2D_LAST_CLAIMED_AT,
	A2D_NCOLUMNS
} A2DirectColumn;

/* The two indexes the writes read. */
typedef enum A2DirectIndex
{
	A2D_IX_PKEY,				/* a2_events_pkey (session_id, idx) */
	A2D_IX_WAITING,			/* a2_events_waiting (session_id, idx) */
	A2D_IX_EVENT_ID,		/* a2_events_event_id (event_id), unique */
	A2D_NINDEXES
} A2DirectIndex;

typedef struct A2DirectTable
{
	Relation	rel;
	Relation   *indexes;		/* every index of a2_events, open */
	EState	   *estate;			/* for the indexes' expressions */
	TupleTableSlot *slot;		/* the row being written (virtual) */
} A2DirectTable;

/*
 * Open a2_events and its indexes for a direct write by a caller who must
 * hold `privileges` (ACL_INSERT, ACL_UPDATE, ...) on the whole table;
 * false, with nothing open: the statement is to run.
 */
extern bool a2_direct_open(A2DirectTable *t, AclMode privileges);
extern void a2_direct_close(A2DirectTable *t);

/* The indexes of a2_claim_next's walk a direct read reads. */
typedef enum A2DirectReadIndex
{
	A2D_READ_DEFAULT_AVAILABLE, /* a2_events_default_available */
	A2D_READ_QUEUE_AVAILABLE,	/* a2_events_queue_available */
	A2D_READ_QUEUE_RETRY,		/* a2_events_queue_retry */
	A2D_READ_LEVEL_AVAILABLE,	/* a2_events_level_available */
	A2D_READ_KEY_LEASES,		/* a2_events_key_leases */
	A2D_READ_UNPROCESSED,		/* a2_events_unprocessed */
	A2D_NREADS
} A2DirectReadIndex;

/*
 * a2_events and index `which` opened for a direct read (direct_walk.c,
 * direct_queue_walk.c) by a caller who holds SELECT on the whole table,
 * in ACCESS SHARE mode as a SELECT takes them; false, with nothing open,
 * where a direct write would answer false, where the table has row-level
 * security, or where the index is not the one a2 made.
 */
typedef struct A2DirectRead
{
	Relation	rel;
	Relation	index;
} A2DirectRead;

extern bool a2_direct_open_read(A2DirectRead *r, A2DirectReadIndex which);
extern void a2_direct_close_read(A2DirectRead *r);

/*
 * After a2_direct_open_read answered true: the primary key of a2_events,
 * opened in ACCESS SHARE mode (the caller closes it, NoLock).
 */
extern Relation a2_direct_open_read_pkey(void);

/*
 * Whether index `ind` of a2_events (`rel`; its IndexInfo `ii`, `att` the
 * attributes of the A2DirectColumn columns) is index `which` as a2 makes
 * it, and valid (direct_available.c).
 */
extern bool a2_direct_read_index(Relation rel, Relation ind, IndexInfo *ii,
								 const AttrNumber *att, A2DirectReadIndex which);

/*
 * Index `ind` of table `rel` orders its key column `i` (of type `type`) as
 * an ORDER BY of it does: ascending with nulls last, the type's default
 * btree operator family and, for a column of the table, its collation
 * (direct_available.c).
 */
extern bool a2_direct_default_ordering(Relation rel, Relation ind, Oid type, int i);

/*
 * Index `ind` of table `rel` is a valid btree without a predicate whose
 * first `n` key columns are attributes atts[0..n), of types types[0..n),
 * each in its default ordering: an equality scan on them reads the rows
 * the same equality in a statement reads (direct_available.c).
 */
extern bool a2_direct_btree_led_by(Relation rel, Relation ind, int n,
								   const AttrNumber *atts, const Oid *types);

/* The same, or descending with nulls first (ORDER BY ... DESC) where `desc`. */
extern bool a2_direct_ordering(Relation rel, Relation ind, Oid type, int i, bool desc);

/*
 * Push the snapshot SPI would take for a statement of a call that writes,
 * after a command counter increment (so the call's own writes are seen):
 * a new one under READ COMMITTED; under REPEATABLE READ and SERIALIZABLE
 * the transaction's, or with `latest` the latest (a2_exec_latest's).  The
 * caller pops it (PopActiveSnapshot).
 */
extern void a2_direct_push_snapshot(bool latest);

/*
 * Another of a2's tables (`relname`) opened for a direct read of its rows,
 * in ACCESS SHARE mode, as a SELECT by a caller who holds SELECT on the
 * whole table: NULL, with nothing open, where a direct write would answer
 * false, where the table has row-level security or is not a plain table.
 */
extern Relation a2_direct_open_table(const char *relname);

/*
 * Another table a direct write stands in for a statement on (which finds
 * no row there): true when that statement would do nothing but read it,
 * i.e. the caller holds `privileges` on it and it has no trigger (a
 * statement trigger fires even for no row) and no rule.  Opens and closes
 * it in ROW EXCLUSIVE mode, the statement's lock, which stays held.
 */
extern bool a2_direct_bystander(const char *relname, AclMode privileges);

extern AttrNumber a2_direct_att(A2DirectColumn col);

/*
 * The row being written as a row of A2_EVENT_COLUMNS (json_out.h), what
 * the statements' RETURNING gives: its descriptor (a copy, in the current
 * memory context), and the row formed with it.
 */
extern TupleDesc a2_direct_answer_desc(void);
extern HeapTuple a2_direct_answer(A2DirectTable *t, TupleDesc answer);
extern Relation a2_direct_index(A2DirectTable *t, A2DirectIndex which);

/*
 * An ordered scan (systable_beginscan_ordered) of the rows of `session` in
 * `index` (keyed session_id, then idx, as the primary key and
 * a2_events_waiting are), with, unless `strategy` is InvalidStrategy, idx
 * bounded by btree strategy `strategy` on `idx` (direct_insert.c); `keys`
 * holds two scan keys for it.
 */
extern SysScanDesc a2_direct_session_scan(Relation rel, Relation index, Datum session,
										  StrategyNumber strategy, int64 idx,
										  Snapshot snap, ScanKeyData *keys);

/* A new row: every column a2 does not name at its constant default. */
extern void a2_direct_row_new(A2DirectTable *t);

/* The row at `tid` as it is (the caller holds its lock); false: none. */
extern bool a2_direct_row_from(A2DirectTable *t, ItemPointer tid);

extern Datum a2_direct_get(A2DirectTable *t, A2DirectColumn col, bool *isnull);
extern void a2_direct_set(A2DirectTable *t, A2DirectColumn col, Datum value,
						  bool isnull);
extern void a2_direct_set_text(A2DirectTable *t, A2DirectColumn col,
							   const char *value);

/* The row is complete; false: a NOT NULL column is null (the statement raises). */
extern bool a2_direct_row_done(A2DirectTable *t);

/*
 * The row's index entries: each index whose predicate holds for it.
 * `changed` (the columns an update wrote; NULL for an insert) tells each
 * index whether its key is unchanged (the btree's bottom-up deletion hint).
 */
extern void a2_direct_index_entries(A2DirectTable *t, const Bitmapset *changed);

/*
 * INSERT ... ON CONFLICT (the unique index `arbiter`) DO NOTHING, as the
 * executor does it: false when a row that conflicts with the new one is
 * live (having waited for its inserter if that was in progress), else
 * the row goes in as a speculative insertion with its index entries, and
 * true.  A conflict that appears while inserting takes the row back out
 * and the check is made again.
 */
extern bool a2_direct_insert_unless_conflict(A2DirectTable *t, A2DirectIndex arbiter);

#endif							/* A2_DIRECT_SHAPE_H */
