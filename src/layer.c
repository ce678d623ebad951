/*-------------------------------------------------------------------------
 *
 * layer.c
 *	  Which layer (layer.h) serves this database, and what both share.
 *
 *	  The choice follows extension.h's view of the extension: distributed
 *	  once a2_events is a Citus table.  extension.c re-reads that after any
 *	  relcache invalidation of a2_events, so the layer and the statement
 *	  texts always change together.
 *
 * IDENTIFICATION
 *	  src/layer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "a2.h"
#include "layer.h"
#include "spi_util.h"
#include "statements.h"

const char *
a2_available_key(void)
{
	return a2_has_not_before() ? A2_AVAILABLE_KEY : A2_AVAILABLE_KEY_0_1;
}

const A2Layer *
a2_layer(void)
{
	return a2_distributed() ? &a2_dist_layer : &a2_local_layer;
}

void
a2_lock_session(const char *session_id)
{
	a2_layer()->lock_session(session_id);
}

bool
a2_try_lock_session(const char *session_id)
{
	return a2_layer()->try_lock_session(session_id);
}
