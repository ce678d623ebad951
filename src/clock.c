/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The store clock.  docs/semantics.md, "The clock": the wall clock
 *	  (clock_timestamp()), unless the setting a2.now holds a timestamp.
 *
 *	  The setting is parsed once, when it is set, by the check hook: a value
 *	  that is not a finite timestamptz is refused at SET time (once the
 *	  library is loaded; before that PostgreSQL keeps it as a placeholder and
 *	  re-checks it at load, discarding an invalid one with a WARNING).  Each
 *	  a2 operation calls a2_clock_now_ms() once and uses that reading for
 *	  every timestamp it writes or compares.
 *
 *	  a2.allow_clock_override (docs/settings.md, superuser-only): when off, a2.now
 *	  is refused (42501) unless both the current and the outer role are
 *	  superusers, at every a2 call (a2_clock_now_ms and a2_call_begin check
 *	  it), so that a worker role cannot move its clock forward and take
 *	  over live leases, not even through a superuser's SECURITY DEFINER
 *	  function.
 *
 * IDENTIFICATION
 *	  src/clock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "clock.h"
#include "pg_compat.h"

/* Milliseconds from 1970-01-01 to 2000-01-01 (the PostgreSQL epoch) */
#define A2_PG_EPOCH_MS	INT64CONST(946684800000)

/*
 * JavaScript's Date covers +-8.64e15 ms around 1970; timestamps outside it
 * cannot be written as toISOString() does, so a2 refuses to produce them.
 */
#define A2_MAX_EPOCH_MS INT64CONST(8640000000000000)

static int64 timestamptz_to_ms(TimestampTz ts);

static char *a2_now_setting = NULL;
static bool a2_allow_clock_override = true;
static bool a2_now_fixed = false;
static TimestampTz a2_now_value = 0;

/*
 * Parse a timestamptz literal without throwing: check hooks must report
 * problems through their return value.
 */
static bool
parse_timestamptz(const char *str, TimestampTz *result)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			tz;
	struct pg_tm tt,
			   *tm = &tt;
	fsec_t		fsec;

	if (strlen(str) >= MAXDATELEN)
		return false;
	if (ParseDateTime(str, workbuf, sizeof(workbuf),
					  field, ftype, MAXDATEFIELDS, &nf) != 0)
		return false;
	if (a2_decode_datetime(field, ftype, nf, &dtype, tm, &fsec, &tz) != 0)
		return false;

	switch (dtype)
	{
		case DTK_DATE:
			return tm2timestamp(tm, fsec, &tz, result) == 0 &&
				IS_VALID_TIMESTAMP(*result);
		case DTK_EPOCH:
			*result = SetEpochTimestamp();
			return true;
		default:
			/* infinity and -infinity are not a clock reading */
			return false;
	}
}

static bool
check_a2_now(char **newval, void **extra, GucSource source)
{
	TimestampTz ts;
	TimestampTz *parsed;

	if (*newval == NULL || (*newval)[0] == '\0')
	{
		*extra = NULL;
		return true;
	}
	if (!parse_timestamptz(*newval, &ts))
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errdetail("a2.now must be empty or a finite timestamptz literal.");
		return false;
	}
	/* the range a2 can write as JSON (docs/settings.md, "a2.now") */
	if (timestamptz_to_ms(ts) > A2_MAX_EPOCH_MS || timestamptz_to_ms(ts) < -A2_MAX_EPOCH_MS)
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errdetail("a2.now must be at most +275760-09-13T00:00:00.000Z, where JavaScript's dates end.");
		return false;
	}
	parsed = (TimestampTz *) a2_guc_extra_alloc(sizeof(TimestampTz));
	if (parsed == NULL)
		return false;
	*parsed = ts;
	*extra = parsed;
	return true;
}

static void
assign_a2_now(const char *newval, void *extra)
{
	if (extra == NULL)
		a2_now_fixed = false;
	else
	{
		a2_now_fixed = true;
		a2_now_value = *(TimestampTz *) extra;
	}
}

void
a2_clock_define_guc(void)
{
	DefineCustomStringVariable("a2.now",
							   "Fixes the a2 store clock at this timestamp.",
							   "Empty means the server's wall clock.  Tests drive "
							   "lease expiry and presence TTLs with it.",
							   &a2_now_setting,
							   "",
							   PGC_USERSET,
							   GUC_NOT_IN_SAMPLE,
							   check_a2_now,
							   assign_a2_now,
							   NULL);
	DefineCustomBoolVariable("a2.allow_clock_override",
							 "Honours a2.now for roles that are not superusers.",
							 "Off: a non-superuser whose a2.now is set gets an "
							 "error (42501) from every a2 call.  Turn it off in "
							 "production, so that no worker role can move its "
							 "clock and take over live leases.",
							 &a2_allow_clock_override,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

void
a2_clock_check_override(void)
{
	/*
	 * Both the current user and the outer one (the role the session runs
	 * as, before any SECURITY DEFINER function): otherwise a non-superuser
	 * who set a2.now would have it honoured by calling a2 through a
	 * superuser's definer function.
	 */
	if (a2_now_fixed && !a2_allow_clock_override &&
		!(superuser() && superuser_arg(GetOuterUserId())))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("a2.now is set, but a2.allow_clock_override is off"),
				 errdetail("Only a superuser may fix the a2 store clock while a2.allow_clock_override is off; nothing was written."),
				 errhint("RESET a2.now.")));
}

static int64
timestamptz_to_ms(TimestampTz ts)
{
	int64		ms = ts / 1000;

	/* floor, not truncation, for instants before 2000 with a fraction */
	if (ts < 0 && ts % 1000 != 0)
		ms -= 1;
	return ms + A2_PG_EPOCH_MS;
}

int64
a2_wall_clock_ms(void)
{
	return timestamptz_to_ms(GetCurrentTimestamp());
}

int64
a2_clock_now_ms(void)
{
	a2_clock_check_override();
	return timestamptz_to_ms(a2_now_fixed ? a2_now_value : GetCurrentTimestamp());
}

PG_FUNCTION_INFO_V1(a2_now_ms);

/* a2_now_ms(): one reading of the store clock, for a2's SQL functions */
Datum
a2_now_ms(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(a2_clock_now_ms());
}

int64
a2_timestamptz_to_ms(TimestampTz ts, const char *argname)
{
	int64		ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" must be a finite timestamp", argname)));
	ms = timestamptz_to_ms(ts);
	if (ms > A2_MAX_EPOCH_MS || ms < -A2_MAX_EPOCH_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is out of range", argname),
				 errdetail("Timestamps must lie within 8.64e15 milliseconds of 1970-01-01.")));
	return ms;
}

int64
a2_add_ms(int64 now_ms, int64 ms, const char *argname)
{
	int64		result;

	if (pg_add_s64_overflow(now_ms, ms, &result) ||
		result > A2_MAX_EPOCH_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is out of range", argname),
				 errdetail("now + %s (" INT64_FORMAT " + " INT64_FORMAT
						   ") exceeds the largest representable timestamp.",
						   argname, now_ms, ms)));
	return result;
}

int64
a2_add_ttl(int64 now_ms, int64 ttl_ms)
{
	return a2_add_ms(now_ms, ttl_ms, "ttl_ms");
}

/* Does str name a time relative to the server's clock (now, today, ...)? */
static bool
names_relative_time(const char *str)
{
	static const char *const words[] = {"now", "today", "tomorrow", "yesterday", NULL};

	for (const char *p = str; *p; p++)
		for (const char *const *w = words; *w; w++)
			if (pg_strncasecmp(p, *w, strlen(*w)) == 0)
				return true;
	return false;
}

bool
a2_parse_timestamp_ms(const char *str, int64 *ms)
{
	TimestampTz ts;

	/* a due time is a fixed instant: "now" would read the wall clock, not a2.now */
	if (names_relative_time(str) || !parse_timestamptz(str, &ts))
		return false;
	*ms = timestamptz_to_ms(ts);
	return *ms <= A2_MAX_EPOCH_MS && *ms >= -A2_MAX_EPOCH_MS;
}
