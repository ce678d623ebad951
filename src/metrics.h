/*-------------------------------------------------------------------------
 *
 * metrics.h
 *	  a2_metrics(): one row of typed gauges for a scraper (postgres_exporter
 *	  custom query, Grafana).  Exact figures come from one scan of the
 *	  unprocessed events (the a2_events_unprocessed partial index), so a
 *	  scrape costs in proportion to the backlog and dead letters, not to
 *	  the table; table-wide figures are the statistics collector's
 *	  estimates.
 *
 *	  Locking: none; it reads with the caller's snapshot.
 *
 * IDENTIFICATION
 *	  src/metrics.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_METRICS_H
#define A2_METRICS_H

#include "fmgr.h"

extern Datum a2_metrics(PG_FUNCTION_ARGS);

#endif							/* A2_METRICS_H */
