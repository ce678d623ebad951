/*-------------------------------------------------------------------------
 *
 * notifier_store.h
 *	  Durable records of announcements that must survive a restart: today
 *	  those of prepared transactions (see notifier_store.c for the design,
 *	  what is durable and what it costs).
 *
 * IDENTIFICATION
 *	  src/notifier_store.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFIER_STORE_H
#define A2_NOTIFIER_STORE_H

#include "access/transam.h"
#include "utils/snapshot.h"

#include "notifier.h"

/* the directory, relative to the data directory */
#define A2_STORE_DIR	"a2_notifier"

/*
 * Write the record of a preparing transaction's announcements, durably,
 * before returning (ERROR on failure: the PREPARE fails, nothing is lost).
 */
extern void a2_store_write_prepared(FullTransactionId fxid, Oid dboid,
									const A2Announcement *items, int n);

/* Remove fxid's record: its announcements were made or dropped. */
extern void a2_store_remove(FullTransactionId fxid);

/*
 * Read every record back: cb is called once per valid record; it returns
 * false to stop the scan.  Corrupt records are set aside with a WARNING,
 * and temporary files of writers that are gone are removed (snap and next
 * tell which writers still run).  Returns the number of records seen.
 */
typedef bool (*A2StoreCallback) (FullTransactionId fxid, Oid dboid,
								 const A2Announcement *items, int n, void *arg);
extern int	a2_store_scan(A2StoreCallback cb, void *arg, Snapshot snap,
						  FullTransactionId next);

/*
 * Count the records on disk (".prep") and those set aside (".bad"), for
 * a2_notify_status(); both 0 when the directory does not exist.
 */
extern void a2_store_count(int *records, int *set_aside);

#endif							/* A2_NOTIFIER_STORE_H */
