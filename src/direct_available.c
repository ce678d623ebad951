/*-------------------------------------------------------------------------
 *
 * direct_available.c
 *	  Whether an index of a2_events is a2_events_default_available as a2
 *	  makes it (src/sql/objects/20-indexes.sql), so that a direct read of
 *	  it (direct_walk.c) reads the rows, in the order, that the walk's
 *	  statements name: valid; keyed COALESCE(claim_expires_at,
 *	  GREATEST(not_before, created_at)), then session_id, each in its
 *	  type's default btree ordering and the session id in its column's
 *	  collation; predicate lane_ready AND processed_at IS NULL AND
 *	  failed_at IS NULL AND queue IS NULL AND priority IS NULL.  For
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
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/primnodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "direct_shape.h"

/*
 * The index orders its key column `i` (of type `type`) as an ORDER BY of
 * the table's column does: the type's default btree operator family and,
 * for the session id, the column's collation.
 */
static bool
default_ordering(Relation rel, Relation ind, Oid type, int i)
{
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	AttrNumber	att = ind->rd_index->indkey.values[i];

	return OidIsValid(opclass) &&
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

/* The first key and the predicate, clause by clause. */
static bool
key_and_predicate(IndexInfo *ii, const AttrNumber *att)
{
	static const A2DirectColumn null_columns[] = {
		A2D_PROCESSED_AT, A2D_FAILED_AT, A2D_QUEUE, A2D_PRIORITY
	};
	CoalesceExpr *key;
	MinMaxExpr *greatest;
	int			seen = 0;
	ListCell   *lc;

	if (ii->ii_IndexAttrNumbers[0] != 0 || list_length(ii->ii_Expressions) != 1 ||
		!IsA(linitial(ii->ii_Expressions), CoalesceExpr))
		return false;
	key = linitial(ii->ii_Expressions);
	if (list_length(key->args) != 2 ||
		!is_column(linitial(key->args), att, A2D_CLAIM_EXPIRES_AT) ||
		!IsA(lsecond(key->args), MinMaxExpr))
		return false;
	greatest = lsecond(key->args);
	if (greatest->op != IS_GREATEST || list_length(greatest->args) != 2 ||
		!is_column(linitial(greatest->args), att, A2D_NOT_BEFORE) ||
		!is_column(lsecond(greatest->args), att, A2D_CREATED_AT))
		return false;

	if (list_length(ii->ii_Predicate) != 1 + lengthof(null_columns))
		return false;
	foreach(lc, ii->ii_Predicate)
	{
		Node	   *clause = lfirst(lc);
		int			k;

		if (is_column(clause, att, A2D_LANE_READY))
		{
			seen |= 1;
			continue;
		}
		if (!IsA(clause, NullTest) || ((NullTest *) clause)->nulltesttype != IS_NULL)
			return false;
		for (k = 0; k < (int) lengthof(null_columns); k++)
			if (is_column((Node *) ((NullTest *) clause)->arg, att, null_columns[k]))
				break;
		if (k == (int) lengthof(null_columns))
			return false;
		seen |= 2 << k;
	}
	return seen == (2 << lengthof(null_columns)) - 1;
}

bool
a2_direct_available_index(Relation rel, Relation ind, IndexInfo *ii,
						  const AttrNumber *att)
{
	return ind->rd_index->indnkeyatts == 2 &&
		ind->rd_index->indisvalid &&
		ind->rd_index->indkey.values[1] == att[A2D_SESSION_ID] &&
		default_ordering(rel, ind, INT8OID, 0) &&
		default_ordering(rel, ind, TEXTOID, 1) &&
		key_and_predicate(ii, att);
}
