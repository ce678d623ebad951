/*-------------------------------------------------------------------------
 *
 * cron.c
 *	  Schedule specs (docs/time.md, "Schedules"): parse a cron expression,
 *	  macro or interval, and find the tick after a given time.
 *
 *	  Cron expressions are matched against local wall-clock minutes of the
 *	  schedule's zone, and each matching wall-clock minute is turned into
 *	  an instant with PostgreSQL's tz code (pg_tzset, pg_localtime):
 *
 *	    - a wall-clock time that exists once is that instant;
 *	    - one that does not exist (the gap of a spring-forward transition)
 *	      is the instant the gap ends, so every gap tick fires once, right
 *	      after the gap, and several gap ticks fire once together;
 *	    - one that exists twice (a fall-back transition) is its first
 *	      occurrence: a repeated time fires once.
 *
 *	  Day of month and day of week combine as in Vixie cron: when both are
 *	  restricted (neither field begins with '*') a day matches either;
 *	  otherwise both.
 *
 *	  Intervals ("every 15 minutes") are elapsed time: ticks at each
 *	  multiple of the interval since 1970-01-01 00:00 UTC, whatever the
 *	  zone, so re-creating a schedule gives the same ticks.
 *
 *	  No locks, no SPI: only computation and ereport(ERROR, 22023).
 *
 * IDENTIFICATION
 *	  src/cron.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "datatype/timestamp.h"
#include "pgtime.h"
#include "utils/datetime.h"

#include "cron.h"
#include "pg_compat.h"

/* How far a cron search looks: eight years holds a leap day */
#define CRON_SEARCH_DAYS	(366 * 8 + 2)
#define MINUTES_PER_DAY		1440
#define SECS_PER_DAY_I		INT64CONST(86400)
/* the longest interval: ten years of days */
#define CRON_MAX_INTERVAL_MS (INT64CONST(3650) * 86400 * 1000)

typedef struct CronField
{
	const char *what;			/* "minute", ... for messages */
	int			min;
	int			max;
	const char *const *names;	/* names for min, min+1, ..., or NULL */
} CronField;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec", NULL
};
static const char *const wday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};

static const CronField fields[5] = {
	{"minute", 0, 59, NULL},
	{"hour", 0, 23, NULL},
	{"day-of-month", 1, 31, NULL},
	{"month", 1, 12, month_names},
	{"day-of-week", 0, 7, wday_names},
};

static const struct
{
	const char *name;
	const char *expr;
}			macros[] = {
	{"@yearly", "0 0 1 1 *"},
	{"@annually", "0 0 1 1 *"},
	{"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"},
	{"@daily", "0 0 * * *"},
	{"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
	{NULL, NULL}
};

pg_noreturn static void
bad_spec(const char *spec, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid schedule spec \"%s\"", spec),
			 errdetail("%s", detail),
			 errhint("Use five cron fields (minute hour day-of-month month day-of-week), "
					 "a macro such as @hourly, or an interval such as \"every 15 minutes\".")));
}

/* One number or name of a field; advances *p.  Returns false when none. */
static bool
parse_value(const char **p, const CronField *f, int *value)
{
	const char *s = *p;

	if (isdigit((unsigned char) *s))
	{
		int			v = 0;

		while (isdigit((unsigned char) *s) && v < 1000)
			v = v * 10 + (*s++ - '0');
		if (isdigit((unsigned char) *s))
			return false;
		*value = v;
		*p = s;
		return true;
	}
	if (f->names != NULL && isalpha((unsigned char) s[0]))
	{
		for (int i = 0; f->names[i] != NULL; i++)
			if (pg_strncasecmp(s, f->names[i], 3) == 0 &&
				!isalpha((unsigned char) s[3]))
			{
				*value = f->min + i;
				*p = s + 3;
				return true;
			}
	}
	return false;
}

/*
 * One field: a comma-separated list of '*', N, N-M, each optionally with
 * /STEP ("N/STEP" is N-max/STEP).  Returns the bit set; *star when the
 * field begins with '*'.
 */
static uint64
parse_field(const char *spec, const char *text, const CronField *f, bool *star)
{
	uint64		bits = 0;
	const char *p = text;
	char		detail[256];

	*star = (*p == '*');
	for (;;)
	{
		int			lo,
					hi,
					step = 1;
		bool		ranged = false;

		if (*p == '*')
		{
			lo = f->min;
			hi = f->max;
			p++;
			ranged = true;
		}
		else if (parse_value(&p, f, &lo))
		{
			hi = lo;
			if (*p == '-')
			{
				p++;
				if (!parse_value(&p, f, &hi))
					goto malformed;
				ranged = true;
			}
		}
		else
			goto malformed;
		if (*p == '/')
		{
			p++;
			if (!isdigit((unsigned char) *p) || !parse_value(&p, &fields[0], &step) || step == 0)
			{
				snprintf(detail, sizeof(detail),
						 "The %s field \"%s\" has a step that is not a positive number.",
						 f->what, text);
				bad_spec(spec, detail);
			}
			if (!ranged)
				hi = f->max;
		}
		if (lo < f->min || hi > f->max)
		{
			snprintf(detail, sizeof(detail), "The %s field \"%s\" is out of range (%d-%d).",
					 f->what, text, f->min, f->max);
			bad_spec(spec, detail);
		}
		if (lo > hi)
		{
			snprintf(detail, sizeof(detail),
					 "The %s field \"%s\" has a range whose start is after its end.",
					 f->what, text);
			bad_spec(spec, detail);
		}
		/* 0 <= lo and hi <= 63 hold (checked above); the clamps say so to the analyzer */
		for (int v = Max(lo, 0); v <= Min(hi, 63); v += step)
			bits |= UINT64CONST(1) << v;
		if (*p == '\0')
			break;
		if (*p != ',')
			goto malformed;
		p++;
	}
	return bits;

malformed:
	snprintf(detail, sizeof(detail), "The %s field \"%s\" is malformed.", f->what, text);
	bad_spec(spec, detail);
}

/* "every N unit": false when spec does not begin with "every" */
static bool
parse_interval(const char *spec, A2Cron *cron)
{
	const char *p = spec;
	int64		n = 1;
	int64		unit_ms;
	char		unit[16];
	int			len = 0;

	if (pg_strncasecmp(p, "every", 5) != 0 || !isspace((unsigned char) p[5]))
		return false;
	p += 5;
	while (isspace((unsigned char) *p))
		p++;
	if (isdigit((unsigned char) *p))
	{
		n = 0;
		while (isdigit((unsigned char) *p) && n <= CRON_MAX_INTERVAL_MS)
			n = n * 10 + (*p++ - '0');
		if (!isspace((unsigned char) *p))
			bad_spec(spec, "An interval is \"every N unit\", the unit one of seconds, minutes, hours, days.");
		while (isspace((unsigned char) *p))
			p++;
	}
	while (isalpha((unsigned char) *p) && len < (int) sizeof(unit) - 1)
		unit[len++] = pg_tolower((unsigned char) *p++);
	unit[len] = '\0';
	while (isspace((unsigned char) *p))
		p++;
	if (*p != '\0')
		bad_spec(spec, "An interval is \"every N unit\", the unit one of seconds, minutes, hours, days.");
	if (len > 1 && unit[len - 1] == 's')
		unit[len - 1] = '\0';
	if (strcmp(unit, "second") == 0)
		unit_ms = 1000;
	else if (strcmp(unit, "minute") == 0)
		unit_ms = INT64CONST(60000);
	else if (strcmp(unit, "hour") == 0)
		unit_ms = INT64CONST(3600000);
	else if (strcmp(unit, "day") == 0)
		unit_ms = SECS_PER_DAY_I * 1000;
	else
		bad_spec(spec, "An interval is \"every N unit\", the unit one of seconds, minutes, hours, days.");
	if (n < 1 || n > CRON_MAX_INTERVAL_MS / unit_ms)
		bad_spec(spec, "An interval must be at least 1 second and at most 3650 days.");
	cron->interval_ms = n * unit_ms;
	return true;
}

void
a2_cron_parse(const char *spec, const char *tzname, A2Cron *cron)
{
	char	   *copy;
	char	   *parts[5];
	int			nparts = 0;
	char	   *p;
	bool		star;
	const char *expr = spec;

	memset(cron, 0, sizeof(*cron));
	if (tzname == NULL)
		tzname = "UTC";
	cron->tz = pg_tzset(tzname);
	if (cron->tz == NULL || !pg_tz_acceptable(cron->tz))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown time zone \"%s\"", tzname),
				 errhint("Name an IANA time zone, such as \"Europe/Berlin\" or \"UTC\" (see pg_timezone_names).")));

	while (isspace((unsigned char) *expr))
		expr++;
	if (*expr == '\0')
		bad_spec(spec, "The spec is empty.");
	if (parse_interval(expr, cron))
		return;
	if (*expr == '@')
	{
		const char *found = NULL;

		for (int i = 0; macros[i].name != NULL; i++)
			if (pg_strcasecmp(expr, macros[i].name) == 0)
				found = macros[i].expr;
		if (found == NULL)
			bad_spec(spec, "Known macros: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.");
		expr = found;
	}

	/* split on white space into exactly five fields */
	copy = pstrdup(expr);
	p = copy;
	for (;;)
	{
		while (isspace((unsigned char) *p))
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (nparts == 5)
			bad_spec(spec, "A cron expression has five fields; this one has more.");
		parts[nparts++] = p;
		while (*p != '\0' && !isspace((unsigned char) *p))
			p++;
	}
	if (nparts != 5)
		bad_spec(spec, "A cron expression has five fields (minute hour day-of-month month day-of-week).");

	cron->minutes = parse_field(spec, parts[0], &fields[0], &star);
	cron->hours = (uint32) parse_field(spec, parts[1], &fields[1], &star);
	cron->mdays = (uint32) parse_field(spec, parts[2], &fields[2], &cron->mday_star);
	cron->months = (uint32) parse_field(spec, parts[3], &fields[3], &star);
	{
		uint64		w = parse_field(spec, parts[4], &fields[4], &cron->wday_star);

		/* 7 is Sunday too */
		cron->wdays = (uint32) ((w | (w >> 7)) & 0x7F);
	}
	pfree(copy);

	/*
	 * Whether any date matches, searched from 1970-01-02 UTC: from 0, a
	 * zone west of UTC starts on 1969-12-31 local, whose wall minutes are
	 * negative, and the first match (a negative wall minute) read as "none"
	 * and refused every cron spec there.
	 */
	if (a2_cron_next(cron, SECS_PER_DAY_I * 1000) < 0)
		bad_spec(spec, "No date matches the day-of-month and month fields.");
}

/* floor division for possibly negative times */
static inline int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static long
gmtoff_at(pg_time_t t, const pg_tz *tz)
{
	struct pg_tm *tm = pg_localtime(&t, tz);

	return tm != NULL ? tm->tm_gmtoff : 0;
}

/*
 * The instant (epoch seconds) of local wall-clock time wall (seconds,
 * counted as if the zone were UTC): its first occurrence, or the end of
 * the gap it falls into.
 */
static pg_time_t
wall_to_instant(pg_time_t wall, const pg_tz *tz)
{
	long		off_a = gmtoff_at(wall - SECS_PER_DAY_I, tz);
	long		off_b = gmtoff_at(wall + SECS_PER_DAY_I, tz);
	pg_time_t	i1 = wall - off_a;
	pg_time_t	i2 = wall - off_b;
	bool		v1 = gmtoff_at(i1, tz) == off_a;
	bool		v2 = gmtoff_at(i2, tz) == off_b;
	pg_time_t	lo,
				hi;
	long		off_lo;

	if (v1 && v2)
		return Min(i1, i2);
	if (v1)
		return i1;
	if (v2)
		return i2;

	/* a gap: the first instant after lo whose offset differs from lo's */
	lo = Min(i1, i2);
	hi = Max(i1, i2);
	off_lo = gmtoff_at(lo, tz);
	while (hi - lo > 1)
	{
		pg_time_t	mid = lo + (hi - lo) / 2;

		if (gmtoff_at(mid, tz) == off_lo)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

static inline bool
day_matches(const A2Cron *cron, int jd)
{
	int			y,
				m,
				d;
	bool		mday,
				wday;

	j2date(jd, &y, &m, &d);
	if (!(cron->months & (1U << m)))
		return false;
	mday = (cron->mdays & (1U << d)) != 0;
	wday = (cron->wdays & (1U << j2day(jd))) != 0;
	if (cron->mday_star || cron->wday_star)
		return mday && wday;
	return mday || wday;
}

/*
 * The first matching wall-clock minute (minutes since 1970, as if the zone
 * were UTC) at or after start, or -1 within the search bound.
 */
static int64
next_wall_minute(const A2Cron *cron, int64 start)
{
	int64		day = floor_div(start, MINUTES_PER_DAY);
	int			mod = (int) (start - day * MINUTES_PER_DAY);

	for (int i = 0; i < CRON_SEARCH_DAYS; i++, day++, mod = 0)
	{
		int			jd = (int) (day + UNIX_EPOCH_JDATE);

		if (!day_matches(cron, jd))
			continue;
		for (int h = mod / 60; h < 24; h++)
		{
			if (!(cron->hours & (1U << h)))
				continue;
			for (int mi = (h == mod / 60 ? mod % 60 : 0); mi < 60; mi++)
				if (cron->minutes & (UINT64CONST(1) << mi))
					return day * MINUTES_PER_DAY + (int64) h * 60 + mi;
		}
	}
	return -1;
}

int64
a2_cron_next(const A2Cron *cron, int64 after_ms)
{
	pg_time_t	after_s;
	struct pg_tm *tm;
	int64		wall;
	int64		wm;

	if (cron->interval_ms > 0)
		return (floor_div(after_ms, cron->interval_ms) + 1) * cron->interval_ms;

	/* the wall-clock minute after the one holding after_ms */
	after_s = (pg_time_t) floor_div(after_ms, 1000);
	tm = pg_localtime(&after_s, cron->tz);
	if (tm == NULL)
		return -1;
	wall = (int64) (date2j(tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday) - UNIX_EPOCH_JDATE) * SECS_PER_DAY_I
		+ (int64) tm->tm_hour * 3600 + (int64) tm->tm_min * 60 + tm->tm_sec;
	wm = floor_div(wall, 60) + 1;

	/*
	 * A wall-clock minute may map to an instant not after after_ms: during
	 * a repeated hour, whose first occurrence has passed.  Go on.
	 */
	for (;;)
	{
		pg_time_t	instant;

		wm = next_wall_minute(cron, wm);
		if (wm < 0)
			return -1;
		instant = wall_to_instant((pg_time_t) wm * 60, cron->tz);
		if ((int64) instant * 1000 > after_ms)
			return (int64) instant * 1000;
		wm++;
	}
}
