/*-------------------------------------------------------------------------
 *
 * schedules.c
 *	  The C half of recurring schedules (docs/time.md, "Schedules"): the
 *	  functions the SQL in src/sql/objects/41-schedules.sql calls to check
 *	  a schedule, to plan a fire pass, to read the store clock and to wake
 *	  the database's scheduler; and a2_schedule_ticks(), which shows the
 *	  ticks of a spec.  The table and the calls users make
 *	  (a2_schedule, a2_fire_schedules, ...) are SQL over these.
 *
 *	  Exactly once per tick: a2_fire_schedules appends each tick's event
 *	  with an id derived from the schedule name and the tick, and moves the
 *	  schedule's next tick in the same transaction, under the schedule
 *	  row's lock; a2_schedule_plan() only computes.
 *
 *	  No locks of its own; no SPI.
 *
 * IDENTIFICATION
 *	  src/schedules.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "a2.h"
#include "clock.h"
#include "cron.h"
#include "notify.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_schedule_ticks);
PG_FUNCTION_INFO_V1(a2_schedule_check);
PG_FUNCTION_INFO_V1(a2_schedule_plan);
PG_FUNCTION_INFO_V1(a2_schedule_wake);

/* the most ticks a2_schedule_ticks returns in one call */
#define A2_TICKS_MAX	100000

/* Milliseconds from 1970-01-01 to 2000-01-01 (the PostgreSQL epoch) */
#define A2_PG_EPOCH_MS	INT64CONST(946684800000)

static char *
text_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	a2_require_arg(fcinfo, argno, name);
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

static TimestampTz
ms_to_timestamptz(int64 ms)
{
	return (TimestampTz) (ms - A2_PG_EPOCH_MS) * 1000;
}

/*
 * a2_schedule_ticks(spec, timezone, after, count): the next count ticks
 * of spec in timezone strictly after after.
 */
Datum
a2_schedule_ticks(PG_FUNCTION_ARGS)
{
	char	   *spec = text_arg(fcinfo, 0, "spec");
	char	   *tzname = text_arg(fcinfo, 1, "timezone");
	int64		after;
	int64		count;
	A2Cron		cron;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	a2_require_arg(fcinfo, 2, "after");
	after = a2_timestamptz_to_ms(PG_GETARG_TIMESTAMPTZ(2), "after");
	count = a2_int4_arg(fcinfo, 3, "count", 0);
	if (count > A2_TICKS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count must be at most %d", A2_TICKS_MAX)));
	a2_cron_parse(spec, tzname, &cron);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int64 i = 0; i < count; i++)
	{
		Datum		value;
		bool		isnull = false;

		after = a2_cron_next(&cron, after);
		/*
		 * none, or past the end of a2's time range (+275760-09-13, as in
		 * clock.c): further ticks overflowed timestamptz
		 */
		if (after < 0 || after > INT64CONST(8640000000000000))
			break;
		value = TimestampTzGetDatum(ms_to_timestamptz(after));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}

/*
 * a2_schedule_check(spec, timezone, session_id, event): raise 22023/22004
 * unless spec parses in timezone and event is an event a2_append would
 * take for session_id, without the keys a schedule sets itself.
 */
Datum
a2_schedule_check(PG_FUNCTION_ARGS)
{
	char	   *spec = text_arg(fcinfo, 0, "spec");
	char	   *tzname = text_arg(fcinfo, 1, "timezone");
	char	   *session_id = a2_name_arg(fcinfo, 2, "session_id");
	Jsonb	   *event;
	A2Cron		cron;
	JsonbValue	f;
	a2_jsonb_builder state = NULL;
	JsonbValue	elem;
	JsonbValue *array;
	int			count;
	static const char *const refused[] = {"id", "cause", "notBefore", NULL};

	a2_require_arg(fcinfo, 3, "event");
	event = PG_GETARG_JSONB_P(3);
	a2_cron_parse(spec, tzname, &cron);

	if (!JB_ROOT_IS_OBJECT(event) || JB_ROOT_IS_SCALAR(event))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event must be a JSON object"),
				 errdetail("A schedule's event is one event as a2_append takes it, e.g. {\"type\": \"report.hourly\"}.")));
	for (int i = 0; refused[i] != NULL; i++)
		if (a2_json_field(&event->root, refused[i], &f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a schedule's event must not have \"%s\"", refused[i]),
					 errdetail("Each tick's event gets its id from the schedule's name and the tick, and is due at the tick; it has no cause.")));

	/* the rest as a2_append checks it: a batch of this one event */
	a2_push_jsonb_value(&state, WJB_BEGIN_ARRAY, NULL);
	elem.type = jbvBinary;
	elem.val.binary.data = &event->root;
	elem.val.binary.len = VARSIZE(event) - VARHDRSZ;
	a2_push_jsonb_value(&state, WJB_ELEM, &elem);
	array = a2_push_jsonb_value(&state, WJB_END_ARRAY, NULL);
	(void) a2_parse_events(JsonbValueToJsonb(array), session_id, false, &count);
	PG_RETURN_VOID();
}

/* a tick ring: the last `size` ticks of a run, oldest first on output */
typedef struct TickRing
{
	int64	   *ticks;
	int			size;
	int64		n;				/* ticks pushed in all */
} TickRing;

static void
ring_push(TickRing *ring, int64 tick)
{
	ring->ticks[ring->n % ring->size] = tick;
	ring->n++;
}

/*
 * a2_schedule_plan(spec, timezone, next_tick, now, missed, backfill_limit,
 * grace_ms, OUT fire bigint[], OUT next_tick bigint): what a fire pass at
 * now does with a schedule whose next tick is next_tick (NULL: a new
 * schedule, fires nothing).  The ticks due are next_tick and those after
 * it up to now; missed says which fire: 'latest' the last one, 'skip' the
 * last one when it is at most grace_ms old, 'backfill' all of them, the
 * last backfill_limit at most.  The new next tick is the first after now.
 */
Datum
a2_schedule_plan(PG_FUNCTION_ARGS)
{
	char	   *spec = text_arg(fcinfo, 0, "spec");
	char	   *tzname = text_arg(fcinfo, 1, "timezone");
	int64		now;
	char	   *missed = text_arg(fcinfo, 4, "missed");
	int64		limit = a2_int4_arg(fcinfo, 5, "backfill_limit", 1);
	int64		grace = a2_int8_arg(fcinfo, 6, "grace_ms", 0);
	A2Cron		cron;
	TickRing	ring;
	Datum	   *elems;
	int			nfire = 0;
	int64		next;
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	a2_require_arg(fcinfo, 3, "now");
	now = PG_GETARG_INT64(3);
	if (strcmp(missed, "latest") != 0 && strcmp(missed, "skip") != 0 &&
		strcmp(missed, "backfill") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown missed-tick policy \"%s\"", missed),
				 errhint("Use \"skip\", \"latest\" or \"backfill\".")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "a2_schedule_plan must be declared with OUT parameters");
	desc = BlessTupleDesc(desc);
	a2_cron_parse(spec, tzname, &cron);

	ring.size = strcmp(missed, "backfill") == 0 ? (int) limit : 1;
	ring.ticks = palloc(sizeof(int64) * ring.size);
	ring.n = 0;
	if (!PG_ARGISNULL(2))
	{
		int64		tick = PG_GETARG_INT64(2);

		if (cron.interval_ms > 0 && tick <= now)
		{
			/* arithmetic: the last tick at or before now, and the run's length */
			int64		last = now - (((now % cron.interval_ms) + cron.interval_ms) % cron.interval_ms);
			int64		nticks = (last - tick) / cron.interval_ms + 1;
			int64		first = Max(nticks - ring.size, 0);

			ring.n = first;
			for (int64 i = first; i < nticks; i++)
				ring_push(&ring, tick + i * cron.interval_ms);
		}
		else
		{
			while (tick >= 0 && tick <= now)
			{
				ring_push(&ring, tick);
				tick = a2_cron_next(&cron, tick);
			}
		}
	}

	elems = palloc(sizeof(Datum) * ring.size);
	if (ring.n > 0)
	{
		int64		kept = Min(ring.n, (int64) ring.size);

		for (int64 i = ring.n - kept; i < ring.n; i++)
			elems[nfire++] = Int64GetDatum(ring.ticks[i % ring.size]);
		/* skip: only the last, and only when it is on time */
		if (strcmp(missed, "skip") == 0 && now - DatumGetInt64(elems[nfire - 1]) > grace)
			nfire = 0;
	}

	next = a2_cron_next(&cron, now);
	values[0] = PointerGetDatum(construct_array(elems, nfire, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[1] = Int64GetDatum(next);
	nulls[1] = next < 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * a2_schedule_wake(due): the current transaction wrote a schedule whose
 * next tick is due (epoch ms): wake, or start, the database's scheduler
 * when it commits (scheduler.h).  A due time in the past wakes it too.
 */
Datum
a2_schedule_wake(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(0))
		a2_notify_due(Max(PG_GETARG_INT64(0), a2_wall_clock_ms() + 1));
	PG_RETURN_VOID();
}

