/*-------------------------------------------------------------------------
 *
 * retire.h
 *	  Retiring finished sessions: a2_drop_session removes one session's
 *	  rows from a2_events, a2_snapshots, a2_snapshot_history and
 *	  a2_snapshot_pins and remembers its last index in
 *	  a2_retired_sessions, which append consults when a session has no
 *	  rows, so indexes are never reused.  a2_drop_finished_sessions is the
 *	  bounded batch form for a scheduled job.
 *
 *	  Lock order (docs/semantics.md, "Locking"): the session advisory lock, then the
 *	  session's event rows FOR UPDATE in index order, then snapshot rows.
 *	  The batch form only try-locks a session and skips it when busy.
 *
 * IDENTIFICATION
 *	  src/retire.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_RETIRE_H
#define A2_RETIRE_H

#include "fmgr.h"

extern Datum a2_drop_session(PG_FUNCTION_ARGS);
extern Datum a2_drop_finished_sessions(PG_FUNCTION_ARGS);
extern Datum a2_retired_last_index(PG_FUNCTION_ARGS);

#endif							/* A2_RETIRE_H */
