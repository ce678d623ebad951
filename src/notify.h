/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY a2_events: at most one notification per session per
 *	  transaction, carrying the greatest index the transaction added.
 *
 * IDENTIFICATION
 *	  src/notify.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFY_H
#define A2_NOTIFY_H

extern void a2_notify_init(void);

/* Record that the current (sub)transaction added events up to max_index. */
extern void a2_notify_session(const char *session_id, int64 max_index);

#endif							/* A2_NOTIFY_H */
