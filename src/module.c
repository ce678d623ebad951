/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Library entry point of the a2 extension, and the per-session lock.
 *
 *	  Locking (SPEC section 4): one order everywhere -- the session advisory
 *	  lock first, then event rows in index order, then snapshot rows.  The
 *	  session lock key is hashtext(session_id) widened to bigint, the key the
 *	  TypeScript backend takes with pg_advisory_xact_lock(hashtext($1)), so a
 *	  TypeScript worker and SQL callers serialize against each other.  In
 *	  distributed mode the session lock is a row lock on the node that holds
 *	  the session instead (see distributed.c).
 *
 * IDENTIFICATION
 *	  src/module.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"

#include "a2.h"
#include "clock.h"
#include "distributed.h"
#include "notifier.h"
#include "notify.h"
#include "scheduler.h"
#include "spi_plans.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	a2_clock_define_guc();
	a2_notify_init();
	a2_notifier_init();
	a2_scheduler_init();
	a2_plans_init();
	/* after every a2.* setting is defined, so none of their placeholders is lost */
	MarkGUCPrefixReserved("a2");
}

/* The advisory lock key of a session: hashtext(session_id) widened to bigint. */
static Datum
session_lock_key(const char *session_id)
{
	Datum		key = DirectFunctionCall1Coll(hashtext, DEFAULT_COLLATION_OID,
											  CStringGetTextDatum(session_id));

	return Int64GetDatum((int64) DatumGetInt32(key));
}

void
a2_lock_session(const char *session_id)
{
	if (a2_distributed())
	{
		a2_dist_lock_session(session_id);
		return;
	}
	DirectFunctionCall1(pg_advisory_xact_lock_int8, session_lock_key(session_id));
}

bool
a2_try_lock_session(const char *session_id)
{
	return DatumGetBool(DirectFunctionCall1(pg_try_advisory_xact_lock_int8,
											session_lock_key(session_id)));
}
