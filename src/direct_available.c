/*-------------------------------------------------------------------------
 *
 * direct_available.c
 *	  Whether an index of a2_events is one of the indexes of
 *	  a2_claim_next's walk, or another index a direct read reads, as a2
 *	  makes it (src/sql/objects/20-indexes.sql), so that a direct read of
 *	  it (direct_walk.c, direct_queue_walk.c, direct_limits.c,
 *	  direct_lowwater.c) reads the rows, in the order, that the statements
 *	  it stands in for name:
 *
 *	  - a2_events_default_available: keyed (A, session_id), predicate
 *	    lane_ready AND processed_at IS NULL AND failed_at IS NULL AND
 *	    queue IS NULL AND priority IS NULL;
 *	  - a2_events_queue_available: keyed (queue, COALESCE(priority, 0),
 *	    A, session_id), concurrency_key its first INCLUDE column,
 *	    predicate lane_ready AND processed_at IS NULL AND failed_at IS
 *	    NULL AND (queue IS NOT NULL OR priority IS NOT NULL);
 *	  - a2_events_queue_retry: keyed (A), the same predicate;
 *	  - a2_events_level_available: keyed (COALESCE(priority, 0) DESC, A,
 *	    session_id), queue and concurrency_key its INCLUDE columns, the
 *	    same predicate;
 *
 *	  - a2_events_key_leases: keyed (concurrency_key, claim_expires_at),
 *	    predicate concurrency_key IS NOT NULL AND processed_at IS NULL AND
 *	    failed_at IS NULL AND claim_expires_at IS NOT NULL;
 *
 *	  - a2_events_unprocessed: keyed (session_id, idx), predicate
 *	    processed_at IS NULL (the claim's low-water probe);
 *
 *	  where A is COALESCE(claim_expires_at, GREATEST(not_before,
 *	  created_at)).  Each is valid, and orders every key column as an
 *	  ORDER BY of it does (ascending with nulls last, the level descending
 *	  with nulls first), with the type's default btree operator family, a
 *	  text column in its column's collation (that test is
 *	  a2_direct_ordering, direct_limits.c's too).  For
 *	  direct_shape.c, when it learns the table's indexes.
 *
 *	  Locks: none (the caller holds the index open).
 *
 * IDENTIFICATION
 *	  src/direct_available.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/primnodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "direct_shape.h"

/*
 * The index orders its key column `i` (of type `type`) as an ORDER BY of
 * the table's column does: ascending with nulls last, the type's default
 * btree operator family and, for a column of the table, its collation.
 */
bool
a2_direct_default_ordering(Relation rel, Relation ind, Oid type, int i)
{
	return a2_direct_ordering(rel, ind, type, i, false);
}

bool
a2_direct_btree_led_by(Relation rel, Relation ind, int n, const AttrNumber *atts,
					   const Oid *types)
{
	Form_pg_index index = ind->rd_index;

	if (index->indrelid != RelationGetRelid(rel) || !index->indisvalid ||
		!index->indisready || index->indnkeyatts < n ||
		ind->rd_rel->relam != BTREE_AM_OID ||
		RelationGetIndexPredicate(ind) != NIL)
		return false;
	for (int i = 0; i < n; i++)
		if (index->indkey.values[i] != atts[i] ||
			!a2_direct_default_ordering(rel, ind, types[i], i))
			return false;
	return true;
}

/* The same, descending (nulls first) where `desc`, as ORDER BY ... DESC. */
bool
a2_direct_ordering(Relation rel, Relation ind, Oid type, int i, bool desc)
{
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	AttrNumber	att = ind->rd_index->indkey.values[i];

	return OidIsValid(opclass) &&
		ind->rd_indoption[i] == (desc ? INDOPTION_DESC | INDOPTION_NULLS_FIRST : 0) &&
		ind->rd_opfamily[i] == get_opclass_family(opclass) &&
		(att == 0 ||
		 ind->rd_indcollation[i] == TupleDescAttr(RelationGetDescr(rel), att - 1)->attcollation);
}

/* A column of a2_events, as a Var of the index's expressions or predicate. */
static bool
is_column(Node *node, const AttrNumber *att, A2DirectColumn col)
{
	return node != NULL && IsA(node, Var) && ((Var *) node)->varattno == att[col];
}

/* COALESCE(claim_expires_at, GREATEST(not_before, created_at)) */
static bool
is_available_at(Node *node, const AttrNumber *att)
{
	CoalesceExpr *key = (CoalesceExpr *) node;
	MinMaxExpr *greatest;

	if (node == NULL || !IsA(node, CoalesceExpr) || list_length(key->args) != 2 ||
		!is_column(linitial(key->args), att, A2D_CLAIM_EXPIRES_AT) ||
		!IsA(lsecond(key->args), MinMaxExpr))
		return false;
	greatest = lsecond(key->args);
	return greatest->op == IS_GREATEST && list_length(greatest->args) == 2 &&
		is_column(linitial(greatest->args), att, A2D_NOT_BEFORE) &&
		is_column(lsecond(greatest->args), att, A2D_CREATED_AT);
}

/* COALESCE(priority, 0) */
static bool
is_priority(Node *node, const AttrNumber *att)
{
	CoalesceExpr *key = (CoalesceExpr *) node;
	Const	   *zero;

	if (node == NULL || !IsA(node, CoalesceExpr) || list_length(key->args) != 2 ||
		!is_column(linitial(key->args), att, A2D_PRIORITY) ||
		!IsA(lsecond(key->args), Const))
		return false;
	zero = lsecond(key->args);
	return zero->consttype == INT4OID && !zero->constisnull &&
		DatumGetInt32(zero->constvalue) == 0;
}

/* `clause` is "col IS [NOT] NULL" for one of `cols`: its position, or -1. */
static int
null_test(Node *clause, NullTestType type, const AttrNumber *att,
		  const A2DirectColumn *cols, int ncols)
{
	if (clause == NULL || !IsA(clause, NullTest) ||
		((NullTest *) clause)->nulltesttype != type)
		return -1;
	for (int k = 0; k < ncols; k++)
		if (is_column((Node *) ((NullTest *) clause)->arg, att, cols[k]))
			return k;
	return -1;
}

/* "queue IS NOT NULL OR priority IS NOT NULL", in either order */
static bool
is_queued(Node *clause, const AttrNumber *att)
{
	static const A2DirectColumn cols[] = {A2D_QUEUE, A2D_PRIORITY};
	BoolExpr   *or = (BoolExpr *) clause;
	int			a,
				b;

	if (clause == NULL || !IsA(clause, BoolExpr) || or->boolop != OR_EXPR ||
		list_length(or->args) != 2)
		return false;
	a = null_test(linitial(or->args), IS_NOT_NULL, att, cols, 2);
	b = null_test(lsecond(or->args), IS_NOT_NULL, att, cols, 2);
	return a >= 0 && b >= 0 && a != b;
}

/*
 * The predicate, clause by clause: lane_ready, processed_at IS NULL,
 * failed_at IS NULL, then either queue IS NULL and priority IS NULL (the
 * default queue's level 0) or the queued clause.
 */
static bool
walk_predicate(IndexInfo *ii, const AttrNumber *att, bool queued)
{
	static const A2DirectColumn nulls[] = {
		A2D_PROCESSED_AT, A2D_FAILED_AT, A2D_QUEUE, A2D_PRIORITY
	};
	int			nnulls = queued ? 2 : 4;
	int			want = (1 << (1 + nnulls + (queued ? 1 : 0))) - 1;
	int			seen = 0;
	ListCell   *lc;

	if (list_length(ii->ii_Predicate) != 1 + nnulls + (queued ? 1 : 0))
		return false;
	foreach(lc, ii->ii_Predicate)
	{
		Node	   *clause = lfirst(lc);
		int			k;

		if (is_column(clause, att, A2D_LANE_READY))
			seen |= 1;
		else if ((k = null_test(clause, IS_NULL, att, nulls, nnulls)) >= 0)
			seen |= 2 << k;
		else if (queued && is_queued(clause, att))
			seen |= 2 << nnulls;
		else
			return false;
	}
	return seen == want;
}

/* a2_events_key_leases' predicate, clause by clause */
static bool
lease_predicate(IndexInfo *ii, const AttrNumber *att)
{
	static const A2DirectColumn nulls[] = {A2D_PROCESSED_AT, A2D_FAILED_AT};
	static const A2DirectColumn not_nulls[] = {A2D_CONCURRENCY_KEY, A2D_CLAIM_EXPIRES_AT};
	int			seen = 0;
	ListCell   *lc;

	if (list_length(ii->ii_Predicate) != 4)
		return false;
	foreach(lc, ii->ii_Predicate)
	{
		Node	   *clause = lfirst(lc);
		int			k;

		if ((k = null_test(clause, IS_NULL, att, nulls, 2)) >= 0)
			seen |= 1 << k;
		else if ((k = null_test(clause, IS_NOT_NULL, att, not_nulls, 2)) >= 0)
			seen |= 4 << k;
		else
			return false;
	}
	return seen == 15;
}

/* Key column `i` is the table's column `col`. */
static bool
key_column(Relation ind, int i, const AttrNumber *att, A2DirectColumn col)
{
	return ind->rd_index->indkey.values[i] == att[col];
}

/*
 * The index is keyed by two columns of the table, `first` (text) then
 * `second` (bigint), each in its default ordering, and holds nothing
 * else.
 */
static bool
text_then_int8(Relation rel, Relation ind, IndexInfo *ii, const AttrNumber *att,
			   A2DirectColumn first, A2DirectColumn second)
{
	return ind->rd_index->indnkeyatts == 2 && ind->rd_index->indnatts == 2 &&
		ii->ii_Expressions == NIL &&
		key_column(ind, 0, att, first) && key_column(ind, 1, att, second) &&
		a2_direct_default_ordering(rel, ind, TEXTOID, 0) &&
		a2_direct_default_ordering(rel, ind, INT8OID, 1);
}

bool
a2_direct_read_index(Relation rel, Relation ind, IndexInfo *ii,
					 const AttrNumber *att, A2DirectReadIndex which)
{
	static const A2DirectColumn unprocessed = A2D_PROCESSED_AT;
	List	   *exprs = ii->ii_Expressions;
	int			nkeys = ind->rd_index->indnkeyatts;

	if (!ind->rd_index->indisvalid)
		return false;
	switch (which)
	{
		case A2D_READ_DEFAULT_AVAILABLE:
			return nkeys == 2 && list_length(exprs) == 1 &&
				ind->rd_index->indkey.values[0] == 0 &&
				key_column(ind, 1, att, A2D_SESSION_ID) &&
				a2_direct_default_ordering(rel, ind, INT8OID, 0) &&
				a2_direct_default_ordering(rel, ind, TEXTOID, 1) &&
				is_available_at(linitial(exprs), att) &&
				walk_predicate(ii, att, false);
		case A2D_READ_QUEUE_AVAILABLE:
			return nkeys == 4 && ind->rd_index->indnatts > 4 &&
				list_length(exprs) == 2 &&
				key_column(ind, 0, att, A2D_QUEUE) &&
				ind->rd_index->indkey.values[1] == 0 &&
				ind->rd_index->indkey.values[2] == 0 &&
				key_column(ind, 3, att, A2D_SESSION_ID) &&
				key_column(ind, 4, att, A2D_CONCURRENCY_KEY) &&
				a2_direct_default_ordering(rel, ind, TEXTOID, 0) &&
				a2_direct_default_ordering(rel, ind, INT4OID, 1) &&
				a2_direct_default_ordering(rel, ind, INT8OID, 2) &&
				a2_direct_default_ordering(rel, ind, TEXTOID, 3) &&
				is_priority(linitial(exprs), att) &&
				is_available_at(lsecond(exprs), att) &&
				walk_predicate(ii, att, true);
		case A2D_READ_LEVEL_AVAILABLE:
			return nkeys == 3 && ind->rd_index->indnatts == 5 &&
				list_length(exprs) == 2 &&
				ind->rd_index->indkey.values[0] == 0 &&
				ind->rd_index->indkey.values[1] == 0 &&
				key_column(ind, 2, att, A2D_SESSION_ID) &&
				key_column(ind, 3, att, A2D_QUEUE) &&
				key_column(ind, 4, att, A2D_CONCURRENCY_KEY) &&
				a2_direct_ordering(rel, ind, INT4OID, 0, true) &&
				a2_direct_default_ordering(rel, ind, INT8OID, 1) &&
				a2_direct_default_ordering(rel, ind, TEXTOID, 2) &&
				is_priority(linitial(exprs), att) &&
				is_available_at(lsecond(exprs), att) &&
				walk_predicate(ii, att, true);
		case A2D_READ_KEY_LEASES:
			return text_then_int8(rel, ind, ii, att, A2D_CONCURRENCY_KEY,
								  A2D_CLAIM_EXPIRES_AT) &&
				lease_predicate(ii, att);
		case A2D_READ_UNPROCESSED:
			return text_then_int8(rel, ind, ii, att, A2D_SESSION_ID, A2D_IDX) &&
				list_length(ii->ii_Predicate) == 1 &&
				null_test(linitial(ii->ii_Predicate), IS_NULL, att,
						  &unprocessed, 1) == 0;
		case A2D_READ_QUEUE_RETRY:
			return nkeys == 1 && list_length(exprs) == 1 &&
				ind->rd_index->indkey.values[0] == 0 &&
				a2_direct_default_ordering(rel, ind, INT8OID, 0) &&
				is_available_at(linitial(exprs), att) &&
				walk_predicate(ii, att, true);
		default:
			return false;
	}
}
