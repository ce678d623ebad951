/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The store clock: the a2.now setting, or the wall clock.  Every
 *	  operation reads it once and passes the reading around.  Timestamps are
 *	  epoch milliseconds, as the TypeScript backend stores them.
 *
 * IDENTIFICATION
 *	  src/clock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CLOCK_H
#define A2_CLOCK_H

#include "datatype/timestamp.h"

extern void a2_clock_define_guc(void);

/*
 * Raise 42501 when a2.now is set, a2.allow_clock_override is off and the
 * current or the outer role is not a superuser (docs/security.md, "The
 * clock override").  a2_clock_now_ms() and a2_call_begin() call it, so
 * every a2 operation does.
 */
extern void a2_clock_check_override(void);

/* The server's wall clock, in epoch milliseconds (a2.now does not apply). */
extern int64 a2_wall_clock_ms(void);

/* One reading of the store clock, in epoch milliseconds. */
extern int64 a2_clock_now_ms(void);

/* Convert a finite timestamptz to epoch milliseconds (floor); errors on infinity. */
extern int64 a2_timestamptz_to_ms(TimestampTz ts, const char *argname);

/* now + ttl_ms, raising 22023 on overflow. */
extern int64 a2_add_ttl(int64 now_ms, int64 ttl_ms);

/* now + ms, raising 22023 naming `argname` on overflow. */
extern int64 a2_add_ms(int64 now_ms, int64 ms, const char *argname);

/*
 * Parse a timestamp string (ISO 8601 or any timestamptz literal) into epoch
 * milliseconds without raising: false when it is not a finite timestamp
 * within JavaScript's Date range, or names a relative time (now, today,
 * tomorrow, yesterday: the wall clock, not the store clock).
 */
extern bool a2_parse_timestamp_ms(const char *str, int64 *ms);

#endif							/* A2_CLOCK_H */
