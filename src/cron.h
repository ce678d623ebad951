/*-------------------------------------------------------------------------
 *
 * cron.h
 *	  Schedule specs (docs/time.md, "Schedules"): a standard 5-field cron
 *	  expression evaluated in an IANA time zone, a macro (@hourly, ...) or a
 *	  fixed interval ("every 15 minutes"), parsed and evaluated here with
 *	  PostgreSQL's own time zone code.  Pure computation: no SPI, no locks.
 *
 *	  Times are epoch milliseconds, as everywhere in a2.
 *
 * IDENTIFICATION
 *	  src/cron.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CRON_H
#define A2_CRON_H

#include "pgtime.h"

typedef struct A2Cron
{
	/* an interval spec: ticks at every multiple of interval_ms since 1970 */
	int64		interval_ms;	/* 0: a cron expression */
	/* a cron expression: bit i set when value i matches */
	uint64		minutes;		/* 0-59 */
	uint32		hours;			/* 0-23 */
	uint32		mdays;			/* 1-31 */
	uint32		months;			/* 1-12 */
	uint32		wdays;			/* 0-6, Sunday is 0 (7 is read as 0) */
	bool		mday_star;		/* the field began with '*' (Vixie cron) */
	bool		wday_star;
	pg_tz	   *tz;				/* the zone a cron expression runs in */
} A2Cron;

/*
 * Parse spec in the zone named tzname (NULL: UTC).  Raises 22023 naming
 * the field and value on a malformed spec or an unknown zone, and on a
 * cron expression that never matches (e.g. "0 0 30 2 *").
 */
extern void a2_cron_parse(const char *spec, const char *tzname, A2Cron *cron);

/*
 * The first tick strictly after after_ms, or -1 when none is within the
 * search bound (eight years; a parsed spec that matches at all has one).
 */
extern int64 a2_cron_next(const A2Cron *cron, int64 after_ms);

#endif							/* A2_CRON_H */
