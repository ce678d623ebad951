/*-------------------------------------------------------------------------
 *
 * direct_scan.h
 *	  One ordered read of an index of a2's tables, as an index-only scan
 *	  reads it (direct_scan.c), for the direct reads (direct.h): scan keys
 *	  built in the order of the index's columns, and the first entry, in
 *	  a direction, whose row the active snapshot sees, with the values of
 *	  its index tuple; optionally the number of such entries.
 *
 *	  Locks: none of its own (the caller holds the table and the index).
 *
 * IDENTIFICATION
 *	  src/direct_scan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DIRECT_SCAN_H
#define A2_DIRECT_SCAN_H

#include "postgres.h"

#include "access/itup.h"
#include "access/sdir.h"
#include "access/skey.h"
#include "utils/relcache.h"

/* The scan keys of one read, in the order of the index's columns. */
typedef struct A2ScanKeys
{
	ScanKeyData k[5];
	int			n;
} A2ScanKeys;

extern void a2_scan_key(A2ScanKeys *keys, int flags, AttrNumber att,
						StrategyNumber strategy, Oid collation, RegProcedure proc,
						Datum arg);

/* The bigint comparison of btree strategy `strategy` (<, <=, =, >=, >). */
extern RegProcedure a2_scan_int8_proc(StrategyNumber strategy);

/* A btree bound `strategy` on bigint column `att`. */
extern void a2_scan_int8_key(A2ScanKeys *keys, AttrNumber att, StrategyNumber strategy,
							 int64 value);

/* An entry the read leaves out, from its index tuple alone. */
typedef bool (*A2ScanSkip) (IndexTuple itup, TupleDesc desc, const void *arg);

/*
 * The first entry of `index` (of table `rel`) within `keys`, read in
 * `dir`, whose row the active snapshot sees and that `skip` (may be NULL)
 * does not leave out: its first `natts` columns copied into
 * values/isnull.  The row is visited only where the visibility map does
 * not say its page is all visible; otherwise the page gets the predicate
 * lock a visit would take.  With `count`, the read goes on to the end of
 * the keys and *count is the number of such entries.
 */
extern bool a2_scan_first_visible(Relation rel, Relation index, A2ScanKeys *keys,
								  ScanDirection dir, A2ScanSkip skip,
								  const void *skip_arg, int natts, Datum *values,
								  bool *isnull, int64 *count);

#endif							/* A2_DIRECT_SCAN_H */
