/*-------------------------------------------------------------------------
 *
 * plan_floor.h
 *	  Plans as for a table in use: while PostgreSQL plans one of a2's kept
 *	  statements, a table it names that is estimated smaller than 10,000
 *	  rows is planned as if it held that many (plan_floor.c says why).
 *	  statements.c tells it which plans are a2's.
 *
 *	  Installs planner_hook and the relation-size hook (pg_compat.h) at
 *	  load time; takes no locks.
 *
 * IDENTIFICATION
 *	  src/plan_floor.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_PLAN_FLOOR_H
#define A2_PLAN_FLOOR_H

#include "executor/spi.h"

/* Install the hooks (_PG_init). */
extern void a2_plan_floor_init(void);

/*
 * A kept plan of a2's (track) or one about to be freed (!track);
 * walk_keys and index: its statement's A2Statement.walk_keys and .index.
 */
extern void a2_plan_floor_track(SPIPlanPtr plan, bool track, bool walk_keys,
								const char *index);

/* query_string is a kept plan's of a statement whose caller reports its keys */
extern bool a2_plan_floor_walk_keys(const char *query_string);

#endif							/* A2_PLAN_FLOOR_H */
