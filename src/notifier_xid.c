/*-------------------------------------------------------------------------
 *
 * notifier_xid.c
 *	  What became of the transaction that recorded a notifier entry, judged
 *	  the way async.c's reader judges queued notifications, and robust
 *	  across transaction-id wraparound.
 *
 *	  The caller takes a fresh snapshot for each pass.  An xid in it is
 *	  still running (a prepared transaction is, until COMMIT or ROLLBACK
 *	  PREPARED), or committed but not yet visible to new snapshots: wait.
 *	  An xid not in it had left the procarray when the snapshot was taken,
 *	  and a transaction is marked in clog before it leaves, so clog's answer
 *	  is final: committed, or aborted (also when it never got to write its
 *	  outcome, as after a crash).
 *
 *	  TransactionIdIsInProgress is not used: its fast path trusts the
 *	  process's RecentXmin, which moves only when the process takes a
 *	  snapshot; a long-lived process that never takes one misjudges every
 *	  xid after 2^31 transactions (the bug of a2 0.2.0's notifier).
 *
 *	  Entries carry 64-bit full xids, so age is plain subtraction.  An entry
 *	  older than clog's horizon -- its transaction ended long ago, and VACUUM
 *	  has since truncated pg_xact past it, as it may while the worker is down
 *	  or the server runs without a2 preloaded -- cannot be looked up: reading
 *	  it would fail on every try.  It is announced (a listener may hear it
 *	  twice, never miss it).  Like pg_xact_status(), the horizon is read and
 *	  clog consulted under XactTruncationLock, so truncation cannot remove
 *	  the page between the check and the read.
 *
 * IDENTIFICATION
 *	  src/notifier_xid.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "storage/lwlock.h"
#include "utils/snapmgr.h"

#include "notifier_xid.h"
#include "pg_compat.h"

/*
 * Is fxid older than anything clog can still tell about?  Caller holds
 * XactTruncationLock.  More than 2^31 transactions back is always too old
 * (clog never spans that much), which also keeps the 32-bit comparison
 * below within its valid range.
 */
static bool
clog_forgot(FullTransactionId fxid, FullTransactionId next)
{
	uint64		age = U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid);

	if (age > (uint64) (MaxTransactionId >> 1))
		return true;
	return TransactionIdPrecedes(XidFromFullTransactionId(fxid),
								 a2_transam->oldestClogXid);
}

/*
 * The fate of fxid as of snapshot snap; next is the next full xid, read
 * after the entry was recorded (so fxid precedes it unless the record came
 * from another timeline).
 */
A2XidFate
a2_xid_fate(FullTransactionId fxid, Snapshot snap, FullTransactionId next)
{
	TransactionId xid = XidFromFullTransactionId(fxid);
	A2XidFate	fate;

	if (!FullTransactionIdPrecedes(fxid, next))
		return A2_XID_FUTURE;

	LWLockAcquire(XactTruncationLock, LW_SHARED);
	if (clog_forgot(fxid, next))
		fate = A2_XID_FORGOTTEN;
	else if (XidInMVCCSnapshot(xid, snap))
		fate = A2_XID_RUNNING;
	else if (TransactionIdDidCommit(xid))
		fate = A2_XID_COMMITTED;
	else
		fate = A2_XID_ABORTED;
	LWLockRelease(XactTruncationLock);
	return fate;
}

/* Is fxid still running as of snap (no clog access)? */
bool
a2_xid_running(FullTransactionId fxid, Snapshot snap, FullTransactionId next)
{
	uint64		age;

	if (!FullTransactionIdPrecedes(fxid, next))
		return false;
	/* older than any running xid can be: not running, and no lookup */
	age = U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid);
	if (age > (uint64) (MaxTransactionId >> 1))
		return false;
	return XidInMVCCSnapshot(XidFromFullTransactionId(fxid), snap);
}
