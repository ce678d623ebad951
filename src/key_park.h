/*-------------------------------------------------------------------------
 *
 * key_park.h
 *	  Parked keys (key_park.c): the server's memory of which concurrency
 *	  keys were found at their limit, and until when, so that a claim can
 *	  skip a held-back key without counting its leases again
 *	  (docs/internals.md, "Parked keys").
 *
 *	  A parked key is a hint that may only be too short-lived, never wrong
 *	  while it stands: it is published at the commit of the transaction
 *	  that counted the key, and dropped by any later commit that frees one
 *	  of the key's slots (a completion, a failure, a cancel, a dropped
 *	  session, a changed limit), by the time its first counted lease
 *	  expires or its rate window frees a claim, and by a store clock
 *	  before the count's.  Kept in shared memory when a2 is preloaded (one
 *	  table for the server, guarded by the LWLock tranche "a2_key_park",
 *	  taken alone for a few instructions, never while waiting for anything
 *	  else); without preloading there is none, and every claim counts.
 *
 * IDENTIFICATION
 *	  src/key_park.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_KEY_PARK_H
#define A2_KEY_PARK_H

#include "postgres.h"

/* From _PG_init: the shared-memory request when a2 is preloaded. */
extern void a2_key_park_init(void);

/*
 * The key's version, to be read before the count that decides to park it
 * (0: no hints here, nothing to propose).
 */
extern uint64 a2_key_park_version(const char *key);

/*
 * The count read with the latest committed state after `version` was
 * taken found the key admitting nothing until `until` (store clock, from
 * `now_ms`): park it at this transaction's commit, unless a slot of the
 * key was freed meanwhile.
 */
extern void a2_key_park_propose(const char *key, uint64 version,
								int64 now_ms, int64 until);

/* This transaction frees a slot of the key: unpark it at commit. */
extern void a2_key_park_release(const char *key);

/* This transaction may free slots of any key: unpark every key at commit. */
extern void a2_key_park_release_all(void);

/* Whether the key is parked at now_ms; *until: when it may admit again. */
extern bool a2_key_park_lookup(const char *key, int64 now_ms, int64 *until);

/*
 * The keys of this database parked at now_ms, at most max of them, with
 * their until; palloc'd in the current memory context.  Returns how many.
 */
extern int	a2_key_park_list(int64 now_ms, int max, char ***keys, int64 **untils);

#endif							/* A2_KEY_PARK_H */
