/*-------------------------------------------------------------------------
 *
 * prepared.h
 *	  Whether a prepared transaction of this database waits for COMMIT
 *	  PREPARED (prepared.c).  Its writes become visible in another backend,
 *	  after every callback of its own: the shared hints of key_park.c and
 *	  walk_mark.c wait for it.  Takes TwoPhaseStateLock in shared mode,
 *	  briefly, through pg_prepared_xact(); no lock of a2's own.
 *
 * IDENTIFICATION
 *	  src/prepared.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_PREPARED_H
#define A2_PREPARED_H

/* false at once when max_prepared_transactions is 0 */
extern bool a2_prepared_xacts_waiting(void);

#endif							/* A2_PREPARED_H */
