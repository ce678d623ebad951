/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY a2_events: at most one announcement per session per
 *	  transaction, carrying the greatest index the transaction added, sent
 *	  by the background notifier when a2 is preloaded (notifier.h) and at
 *	  pre-commit otherwise.
 *
 * IDENTIFICATION
 *	  src/notify.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_NOTIFY_H
#define A2_NOTIFY_H

#include "lib/stringinfo.h"

#define A2_NOTIFY_CHANNEL "a2_events"

extern void a2_notify_init(void);

/* Is a2.notify on in this session? */
extern bool a2_notify_enabled(void);
extern void a2_notify_due(int64 due_ms);

/* Append the payload {"sessionId": ..., "index": n} to buf. */
extern void a2_notify_payload(StringInfo buf, const char *session_id, int64 max_index);

/* Record that the current (sub)transaction added events up to max_index. */
extern void a2_notify_session(const char *session_id, int64 max_index);

#endif							/* A2_NOTIFY_H */
