/*-------------------------------------------------------------------------
 *
 * notifier_xid.h
 *	  What became of the transaction that recorded a notifier entry or a
 *	  durable record (notifier_xid.c has the rules): judged by a snapshot
 *	  the caller took fresh, and by clog, with 64-bit full xids so that no
 *	  answer depends on wraparound.
 *
 *	  Offers a2_xid_fate() and a2_xid_running().  Takes XactTruncationLock
 *	  (shared) for the clog lookup and nothing else; callers may hold the
 *	  notifier queue's lock (the procarray's and subtrans's locks come
 *	  after ours, never the other way round).  Includes no a2 header.
 *
 * IDENTIFICATION
 *	  src/notifier_xid.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFIER_XID_H
#define A2_NOTIFIER_XID_H

#include "access/transam.h"
#include "utils/snapshot.h"

/*
 * What became of an entry's transaction (notifier_xid.c).  FORGOTTEN: it
 * ended so long ago that clog no longer knows how; the entry is announced
 * (a listener may hear it twice, but never miss it).  FUTURE: the xid was
 * never handed out in this cluster's history (a durable record outlived a
 * point-in-time recovery to before it); the entry is dropped.
 */
typedef enum A2XidFate
{
	A2_XID_RUNNING = 0,
	A2_XID_COMMITTED,
	A2_XID_ABORTED,
	A2_XID_FORGOTTEN,
	A2_XID_FUTURE
} A2XidFate;

extern A2XidFate a2_xid_fate(FullTransactionId fxid, Snapshot snap,
							 FullTransactionId next);
extern bool a2_xid_running(FullTransactionId fxid, Snapshot snap,
						   FullTransactionId next);

#endif							/* A2_NOTIFIER_XID_H */
