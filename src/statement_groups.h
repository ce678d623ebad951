/*-------------------------------------------------------------------------
 *
 * statement_groups.h
 *	  The registry: every module that declares statements (statements.h)
 *	  defines its group with A2_STATEMENT_GROUP() and is listed here, once.
 *	  A statement missing from its group cannot be prepared, so a new one
 *	  is registered (and shown by a2_statements()) or fails its first test.
 *
 * IDENTIFICATION
 *	  src/statement_groups.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_STATEMENT_GROUPS_H
#define A2_STATEMENT_GROUPS_H

#include "statements.h"

#define A2_FOR_EACH_STATEMENT_GROUP(X) \
	X(append) \
	X(events) \
	X(read) \
	X(claim) \
	X(limits) \
	X(queues) \
	X(dispatch_probes) \
	X(renew) \
	X(complete) \
	X(fail) \
	X(redrive) \
	X(cancel) \
	X(snapshots) \
	X(snapshot_pins) \
	X(presence) \
	X(session) \
	X(retire) \
	X(inspect) \
	X(metrics) \
	X(local) \
	X(citus_layer) \
	X(citus_pin) \
	X(citus_walk) \
	X(scheduler) \
	X(waits)

#define A2_DECLARE_STATEMENT_GROUP(group) \
	extern A2Statement *const a2_statements_##group[];
A2_FOR_EACH_STATEMENT_GROUP(A2_DECLARE_STATEMENT_GROUP)

#define A2_LIST_STATEMENT_GROUP(group) a2_statements_##group,
static A2Statement *const *const a2_statement_groups[] = {
	A2_FOR_EACH_STATEMENT_GROUP(A2_LIST_STATEMENT_GROUP)
	NULL
};

#endif							/* A2_STATEMENT_GROUPS_H */
