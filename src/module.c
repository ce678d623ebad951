/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Library entry point of the a2 extension.
 *
 *	  Defines the a2.* settings and the shared-memory requests of the
 *	  notifier and the scheduler.  Locking (docs/semantics.md, "Locking") is the layer's:
 *	  see layer.h (the session lock first, then event rows in index order,
 *	  then snapshot rows).
 *
 * IDENTIFICATION
 *	  src/module.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "a2.h"
#include "clock.h"
#include "direct.h"
#include "extension.h"
#include "key_park.h"
#include "lowwater.h"
#include "notifier.h"
#include "notify.h"
#include "plan_floor.h"
#include "scheduler.h"
#include "statements.h"
#include "walk_mark.h"

A2_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	a2_clock_define_guc();
	a2_notify_init();
	a2_notifier_init();
	a2_scheduler_init();
	a2_extension_init();
	a2_statements_init();
	a2_plan_floor_init();
	a2_low_water_init();
	a2_key_park_init();
	a2_walk_mark_init();
	a2_direct_init();
	/* after every a2.* setting is defined, so none of their placeholders is lost */
	MarkGUCPrefixReserved("a2");
}
