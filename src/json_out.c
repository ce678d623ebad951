/*-------------------------------------------------------------------------
 *
 * json_out.c
 *	  jsonb result building for every a2 function, and the JSON field
 *	  readers (a2_json_field, a2_json_int64) that validate.c and the stored
 *	  cause check share.  Depends on no other a2 module but clock.h (a
 *	  wait's timeout is judged when an event is printed).
 *
 *	  Results are assembled as a JsonbValue tree with pushJsonbValue()
 *	  (through pg_compat.h's a2_push_jsonb_value) in the SPI procedure
 *	  context (freed by SPI_finish) and flattened into the caller's context
 *	  by a2j_finish().  Timestamps are epoch milliseconds written as
 *	  JavaScript's Date.prototype.toISOString() does.
 *
 * IDENTIFICATION
 *	  src/json_out.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "clock.h"			/* a2_clock_now_ms: a wait's timeout, read time */
#include "json_out.h"
#include "wait_gate.h"		/* a2_wait_gate: a stored wait's gate */

#define MS_PER_DAY	INT64CONST(86400000)

static void
push_key(A2Json *js, const char *key)
{
	JsonbValue	k;

	if (key == NULL)
		return;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	a2_push_jsonb_value(js, WJB_KEY, &k);
}

static void
push_value(A2Json *js, const char *key, JsonbValue *v)
{
	push_key(js, key);
	a2_push_jsonb_value(js, key ? WJB_VALUE : WJB_ELEM, v);
}

void
a2j_begin_object(A2Json *js, const char *key)
{
	push_key(js, key);
	a2_push_jsonb_value(js, WJB_BEGIN_OBJECT, NULL);
}

JsonbValue *
a2j_end_object(A2Json *js)
{
	return a2_push_jsonb_value(js, WJB_END_OBJECT, NULL);
}

void
a2j_begin_array(A2Json *js, const char *key)
{
	push_key(js, key);
	a2_push_jsonb_value(js, WJB_BEGIN_ARRAY, NULL);
}

JsonbValue *
a2j_end_array(A2Json *js)
{
	return a2_push_jsonb_value(js, WJB_END_ARRAY, NULL);
}

void
a2j_string(A2Json *js, const char *key, const char *value)
{
	JsonbValue	v;

	if (value == NULL)
	{
		a2j_null(js, key);
		return;
	}
	v.type = jbvString;
	v.val.string.val = (char *) value;
	v.val.string.len = strlen(value);
	push_value(js, key, &v);
}

void
a2j_int(A2Json *js, const char *key, int64 value)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(value);
	push_value(js, key, &v);
}

void
a2j_bool(A2Json *js, const char *key, bool value)
{
	JsonbValue	v;

	v.type = jbvBool;
	v.val.boolean = value;
	push_value(js, key, &v);
}

void
a2j_null(A2Json *js, const char *key)
{
	JsonbValue	v;

	v.type = jbvNull;
	push_value(js, key, &v);
}

void
a2j_iso(A2Json *js, const char *key, int64 epoch_ms)
{
	char		buf[32];

	/* pushJsonbValue keeps the pointer, so the text must outlive this frame */
	a2_format_iso(epoch_ms, buf);
	a2j_string(js, key, pstrdup(buf));
}

void
a2j_jsonb(A2Json *js, const char *key, Jsonb *value)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(value))
	{
		/* a raw scalar is stored as a one-element array: unwrap it */
		if (!JsonbExtractScalar(&value->root, &v))
			elog(ERROR, "could not extract jsonb scalar");
	}
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &value->root;
		v.val.binary.len = VARSIZE(value) - VARHDRSZ;
	}
	push_value(js, key, &v);
}

Jsonb *
a2j_finish(JsonbValue *root, MemoryContext ctx)
{
	MemoryContext old = MemoryContextSwitchTo(ctx);
	Jsonb	   *result = JsonbValueToJsonb(root);

	MemoryContextSwitchTo(old);
	return result;
}

/*
 * Days since 1970-01-01 to a proleptic Gregorian date, by 400-year eras
 * (146097 days each), counting years from March so leap days fall last.
 */
static void
civil_from_days(int64 days, int64 *year, int *month, int *day)
{
	int64		z = days + 719468;
	int64		era = (z >= 0 ? z : z - 146096) / 146097;
	int64		doe = z - era * 146097;
	int64		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64		mp = (5 * doy + 2) / 153;

	*day = (int) (doy - (153 * mp + 2) / 5 + 1);
	*month = (int) (mp < 10 ? mp + 3 : mp - 9);
	*year = yoe + era * 400 + (*month <= 2 ? 1 : 0);
}

void
a2_format_iso(int64 epoch_ms, char *buf)
{
	int64		days = epoch_ms / MS_PER_DAY;
	int64		rem = epoch_ms % MS_PER_DAY;
	int64		year;
	int			month,
				day;
	char		ybuf[16];

	if (rem < 0)
	{
		rem += MS_PER_DAY;
		days -= 1;
	}
	civil_from_days(days, &year, &month, &day);

	/* toISOString(): four digits in 0..9999, else a sign and six digits */
	if (year >= 0 && year <= 9999)
		snprintf(ybuf, sizeof(ybuf), "%04d", (int) year);
	else
		snprintf(ybuf, sizeof(ybuf), "%c%06lld", year < 0 ? '-' : '+',
				 (long long) (year < 0 ? -year : year));

	snprintf(buf, 32, "%s-%02d-%02dT%02d:%02d:%02d.%03dZ",
			 ybuf, month, day,
			 (int) (rem / 3600000), (int) (rem / 60000 % 60),
			 (int) (rem / 1000 % 60), (int) (rem % 1000));
}

Jsonb *
a2_make_cause(int64 index, int64 attempt, int64 batch_size)
{
	A2Json		js = NULL;
	JsonbValue *root;

	a2j_begin_object(&js, NULL);
	a2j_int(&js, "index", index);
	a2j_int(&js, "attempt", attempt);
	if (batch_size >= 1)
		a2j_int(&js, "batchSize", batch_size);
	root = a2j_end_object(&js);
	return JsonbValueToJsonb(root);
}

/* --- reading JSON input ----------------------------------------------- */

bool
a2_json_int64(const JsonbValue *v, int64 *result)
{
	Numeric		num;
	Numeric		floored;

	if (v->type != jbvNumeric)
		return false;
	num = v->val.numeric;
	if (numeric_is_nan(num) || numeric_is_inf(num))
		return false;
	floored = DatumGetNumeric(DirectFunctionCall1(numeric_floor,
												  NumericGetDatum(num)));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(num),
										  NumericGetDatum(floored))) != 0)
		return false;
	/* PostgreSQL 15 has no soft-error numeric -> int8: range-check first */
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(num),
										  NumericGetDatum(int64_to_numeric(PG_INT64_MAX)))) > 0 ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(num),
										  NumericGetDatum(int64_to_numeric(PG_INT64_MIN)))) < 0)
		return false;
	*result = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(num)));
	return true;
}

bool
a2_json_field(JsonbContainer *obj, const char *key, JsonbValue *out)
{
	if (getKeyJsonValueFromContainer(obj, key, strlen(key), out) == NULL)
		return false;
	return out->type != jbvNull;
}

/* --- event rows ------------------------------------------------------- */

/* An int4 or int8 column's value (not null) as an int64. */
static int64
int_value(TupleDesc desc, int col, Datum d)
{
	return TupleDescAttr(desc, col - 1)->atttypid == INT4OID ?
		DatumGetInt32(d) : DatumGetInt64(d);
}

static int64
col_int(HeapTuple tuple, TupleDesc desc, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(tuple, desc, col, isnull);

	if (*isnull)
		return 0;
	return int_value(desc, col, d);
}

typedef enum ColKind
{
	COL_INT,					/* int4 or int8 as a JSON number */
	COL_ISO,					/* epoch milliseconds as an ISO string */
	COL_TEXT,
	COL_JSONB
} ColKind;


/*
 * A stored cause must be {index >= 1, attempt >= 1[, batchSize >= 1]}, as
 * the reference store's toCause() insists.  Returns false for anything else.
 */
static bool
parse_cause(Jsonb *cause, int64 *index, int64 *attempt, int64 *batch)
{
	JsonbValue	f;

	*batch = 0;
	if (!(JB_ROOT_IS_OBJECT(cause) &&
		  a2_json_field(&cause->root, "index", &f) && a2_json_int64(&f, index) && *index >= 1 &&
		  a2_json_field(&cause->root, "attempt", &f) && a2_json_int64(&f, attempt) && *attempt >= 1))
		return false;
	if (a2_json_field(&cause->root, "batchSize", &f))
		return a2_json_int64(&f, batch) && *batch >= 1;
	return true;
}

void
a2_stored_set_cause(A2StoredEvent *ev, Jsonb *cause)
{
	ev->present[A2C_CAUSE] = cause != NULL &&
		parse_cause(cause, &ev->cause_index, &ev->cause_attempt, &ev->cause_batch);
}

/* The StoredEvent keys, in the reference store's order. */
static const struct
{
	const char *key;
	A2EventCol	col;
	ColKind		kind;
	bool		full_only;		/* not in an Event */
}			stored_keys[] = {
	{"id", A2C_EVENT_ID, COL_TEXT, false},
	{"type", A2C_EVENT_TYPE, COL_TEXT, false},
	{"payload", A2C_PAYLOAD, COL_JSONB, false},
	{"index", A2C_IDX, COL_INT, false},
	{"sessionId", A2C_SESSION_ID, COL_TEXT, false},
	{"createdAt", A2C_CREATED_AT, COL_ISO, false},
	{"cause", A2C_CAUSE, COL_JSONB, true},
	{"lane", A2C_LANE, COL_TEXT, true},
	{"processedAt", A2C_PROCESSED_AT, COL_ISO, true},
	{"processedByAttempt", A2C_PROCESSED_BY_ATTEMPT, COL_INT, true},
	{"returnedEventIds", A2C_RETURNED_EVENT_IDS, COL_JSONB, true},
	{"firstClaimedAt", A2C_FIRST_CLAIMED_AT, COL_ISO, true},
	{"lastClaimedAt", A2C_LAST_CLAIMED_AT, COL_ISO, true},
	{"attemptCount", A2C_ATTEMPT_COUNT, COL_INT, true},
	{"failureCount", A2C_FAILURE_COUNT, COL_INT, true},
	{"lastFailedAt", A2C_LAST_FAILED_AT, COL_ISO, true},
	{"lastFailedAttempt", A2C_LAST_FAILED_ATTEMPT, COL_INT, true},
	{"lastError", A2C_LAST_ERROR, COL_TEXT, true},
	{"failedAt", A2C_FAILED_AT, COL_ISO, true},
	{"claimHolder", A2C_CLAIM_HOLDER, COL_TEXT, true},
	{"claimExpiresAt", A2C_CLAIM_EXPIRES_AT, COL_ISO, true},
	/* only when set, so unscheduled events keep the reference shape */
	{"notBefore", A2C_NOT_BEFORE, COL_ISO, true},
	/* 0.4.0, only when set (NULL: queue 'default', priority 0, no key) */
	{"queue", A2C_QUEUE, COL_TEXT, true},
	{"priority", A2C_PRIORITY, COL_INT, true},
	{"concurrencyKey", A2C_CONCURRENCY_KEY, COL_TEXT, true},
	/* only for a cancelled event (a2_cancel, docs/json.md) */
	{"cancelledAt", A2C_CANCELLED_AT, COL_ISO, true},
	{"cancelReason", A2C_CANCEL_REASON, COL_TEXT, true},
	/* durable waits (0.4.0), only on an event appended with waitFor */
	{"waitFor", A2C_WAIT_FOR, COL_JSONB, true},
	{"waitResult", A2C_WAIT_RESULT, COL_JSONB, true},
};

/*
 * keys printed only when present (notBefore and every 0.4.0 key): events
 * without them keep the reference shape
 */
static bool
absent_when_null(int col)
{
	return col >= A2C_NOT_BEFORE;
}

/*
 * A stored wait (docs/semantics.md, "Waits") as a StoredEvent shows it:
 * waitFor the {types, timeoutMs} the event was appended with, waitResult
 * the stored result or, once the store clock reached the timeout with
 * none, {"timedOut": true}, and notBefore the event's own while the
 * not_before column holds the wait's gate (wait_gate.h).  Once the column
 * holds anything else (the wait was ended by an event, which put the own
 * notBefore back, and a2_fail's retry time or a2_redrive may have changed
 * it since), the column is the event's notBefore, as for any event.
 */
static void
stored_wait(A2StoredEvent *ev)
{
	Jsonb	   *stored = ev->json[A2C_WAIT_FOR];
	JsonbValue	f;
	int64		n;
	int64		own = 0;
	int64		until = 0;
	bool		has_own;
	bool		has_until;
	A2Json		js = NULL;

	has_own = a2_json_field(&stored->root, "notBefore", &f) && a2_json_int64(&f, &own);
	has_until = a2_json_field(&stored->root, "until", &f) && a2_json_int64(&f, &until);
	if (!ev->present[A2C_WAIT_RESULT] && ev->present[A2C_NOT_BEFORE] &&
		ev->num[A2C_NOT_BEFORE] == a2_wait_gate(has_until, until, has_own, own))
	{
		ev->present[A2C_NOT_BEFORE] = has_own;
		ev->num[A2C_NOT_BEFORE] = own;
	}

	a2j_begin_object(&js, NULL);
	if (getKeyJsonValueFromContainer(&stored->root, "types", 5, &f) != NULL)
		push_value(&js, "types", &f);
	if (a2_json_field(&stored->root, "timeoutMs", &f) && a2_json_int64(&f, &n))
		a2j_int(&js, "timeoutMs", n);
	ev->json[A2C_WAIT_FOR] = JsonbValueToJsonb(a2j_end_object(&js));

	if (!ev->present[A2C_WAIT_RESULT] &&
		a2_json_field(&stored->root, "until", &f) && a2_json_int64(&f, &n) &&
		a2_clock_now_ms() >= n)
	{
		js = NULL;
		a2j_begin_object(&js, NULL);
		a2j_bool(&js, "timedOut", true);
		ev->json[A2C_WAIT_RESULT] = JsonbValueToJsonb(a2j_end_object(&js));
		ev->present[A2C_WAIT_RESULT] = true;
	}
}

void
a2_stored_from_row(A2StoredEvent *ev, HeapTuple tuple, TupleDesc desc, bool full)
{
	/* every column at once: reading them one by one walks the row each time */
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);

	heap_deform_tuple(tuple, desc, values, nulls);
	memset(ev->present, 0, sizeof(ev->present));
	for (int i = 0; i < (int) lengthof(stored_keys); i++)
	{
		int			col = stored_keys[i].col;
		Datum		d;

		if ((!full && stored_keys[i].full_only) || col > desc->natts ||
			nulls[col - 1])
			continue;
		d = values[col - 1];
		ev->present[col] = true;
		switch (stored_keys[i].kind)
		{
			case COL_INT:
			case COL_ISO:
				ev->num[col] = int_value(desc, col, d);
				break;
			case COL_TEXT:
				ev->text[col] = TextDatumGetCString(d);
				break;
			case COL_JSONB:
				ev->json[col] = DatumGetJsonbP(d);
				break;
		}
	}
	pfree(values);
	pfree(nulls);
	if (ev->present[A2C_WAIT_FOR])
		stored_wait(ev);
	if (ev->present[A2C_CAUSE])
	{
		a2_stored_set_cause(ev, ev->json[A2C_CAUSE]);
		if (!ev->present[A2C_CAUSE])
		{
			bool		isnull;

			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("stored event %lld of session \"%s\" has an invalid cause",
							(long long) col_int(tuple, desc, A2C_IDX, &isnull),
							TextDatumGetCString(SPI_getbinval(tuple, desc, A2C_SESSION_ID, &isnull))),
					 errdetail("A cause must be an object with integer index >= 1, attempt >= 1 and optional batchSize >= 1.")));
		}
	}
}

/* jsonb's order of object keys: shorter first, then bytewise */
static int
jsonb_key_order(const void *a, const void *b)
{
	const char *ka = stored_keys[*(const int *) a].key;
	const char *kb = stored_keys[*(const int *) b].key;
	size_t		la = strlen(ka);
	size_t		lb = strlen(kb);

	if (la != lb)
		return la < lb ? -1 : 1;
	return memcmp(ka, kb, la);
}

/*
 * stored_keys' indexes in jsonb's order of keys, found once: an object
 * pushed in that order is stored as it comes (pushJsonbValue sorts each
 * object's keys, and a sorted input costs one comparison per key).
 */
static const int *
emit_order(void)
{
	static int	order[lengthof(stored_keys)];
	static bool known = false;

	if (!known)
	{
		for (int i = 0; i < (int) lengthof(stored_keys); i++)
			order[i] = i;
		qsort(order, lengthof(stored_keys), sizeof(int), jsonb_key_order);
		known = true;
	}
	return order;
}

void
a2j_stored_event(A2Json *js, const char *key, const A2StoredEvent *ev, bool full)
{
	const int  *order = emit_order();

	a2j_begin_object(js, key);
	for (int o = 0; o < (int) lengthof(stored_keys); o++)
	{
		int			i = order[o];
		const char *k = stored_keys[i].key;
		int			col = stored_keys[i].col;

		if (!full && stored_keys[i].full_only)
			continue;
		if (!ev->present[col])
		{
			if (!absent_when_null(col) ||
				(col == A2C_CANCEL_REASON && ev->present[A2C_CANCELLED_AT]))
				a2j_null(js, k);
			continue;
		}
		if (col == A2C_CAUSE)
		{
			a2j_begin_object(js, k);
			a2j_int(js, "index", ev->cause_index);
			a2j_int(js, "attempt", ev->cause_attempt);
			if (ev->cause_batch >= 1)
				a2j_int(js, "batchSize", ev->cause_batch);
			a2j_end_object(js);
			continue;
		}
		switch (stored_keys[i].kind)
		{
			case COL_INT:
				a2j_int(js, k, ev->num[col]);
				break;
			case COL_ISO:
				a2j_iso(js, k, ev->num[col]);
				break;
			case COL_TEXT:
				a2j_string(js, k, ev->text[col]);
				break;
			case COL_JSONB:
				a2j_jsonb(js, k, ev->json[col]);
				break;
		}
	}
	a2j_end_object(js);
}

void
a2j_event_row(A2Json *js, const char *key, HeapTuple tuple, TupleDesc desc,
			  bool full)
{
	A2StoredEvent ev;

	a2_stored_from_row(&ev, tuple, desc, full);
	a2j_stored_event(js, key, &ev, full);
}
