/*-------------------------------------------------------------------------
 *
 * json_out.c
 *	  jsonb result building for every a2 function, and the JSON field
 *	  readers (a2_json_field, a2_json_int64) that validate.c and the stored
 *	  cause check share.  Depends on no other a2 module.
 *
 *	  Results are assembled as a JsonbValue tree with pushJsonbValue() in the
 *	  SPI procedure context (freed by SPI_finish) and flattened into the
 *	  caller's context by a2j_finish().  Timestamps are epoch milliseconds
 *	  written as JavaScript's Date.prototype.toISOString() does.
 *
 * IDENTIFICATION
 *	  src/json_out.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "json_out.h"

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
	pushJsonbValue(js, WJB_KEY, &k);
}

static void
push_value(A2Json *js, const char *key, JsonbValue *v)
{
	push_key(js, key);
	pushJsonbValue(js, key ? WJB_VALUE : WJB_ELEM, v);
}

void
a2j_begin_object(A2Json *js, const char *key)
{
	push_key(js, key);
	pushJsonbValue(js, WJB_BEGIN_OBJECT, NULL);
}

JsonbValue *
a2j_end_object(A2Json *js)
{
	return pushJsonbValue(js, WJB_END_OBJECT, NULL);
}

void
a2j_begin_array(A2Json *js, const char *key)
{
	push_key(js, key);
	pushJsonbValue(js, WJB_BEGIN_ARRAY, NULL);
}

JsonbValue *
a2j_end_array(A2Json *js)
{
	return pushJsonbValue(js, WJB_END_ARRAY, NULL);
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

static int64
col_int(HeapTuple tuple, TupleDesc desc, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(tuple, desc, col, isnull);

	if (*isnull)
		return 0;
	return TupleDescAttr(desc, col - 1)->atttypid == INT4OID ?
		DatumGetInt32(d) : DatumGetInt64(d);
}

typedef enum ColKind
{
	COL_INT,					/* int4 or int8 as a JSON number */
	COL_ISO,					/* epoch milliseconds as an ISO string */
	COL_TEXT,
	COL_JSONB
} ColKind;

/* One column of an event row as a JSON value, null when SQL NULL. */
static void
put_col(A2Json *js, const char *key, HeapTuple tuple, TupleDesc desc,
		int col, ColKind kind)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);

	if (isnull)
	{
		a2j_null(js, key);
		return;
	}
	switch (kind)
	{
		case COL_INT:
			a2j_int(js, key, col_int(tuple, desc, col, &isnull));
			break;
		case COL_ISO:
			a2j_iso(js, key, col_int(tuple, desc, col, &isnull));
			break;
		case COL_TEXT:
			a2j_string(js, key, TextDatumGetCString(d));
			break;
		case COL_JSONB:
			a2j_jsonb(js, key, DatumGetJsonbP(d));
			break;
	}
}

/*
 * A stored cause must be {index >= 1, attempt >= 1[, batchSize >= 1]}, as
 * the seed's toCause() insists; anything else is a corrupt row (XX001).
 */
static void
put_cause(A2Json *js, HeapTuple tuple, TupleDesc desc)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, A2C_CAUSE, &isnull);
	Jsonb	   *cause;
	JsonbValue	f;
	int64		index,
				attempt,
				batch = 0;
	bool		ok;

	if (isnull)
	{
		a2j_null(js, "cause");
		return;
	}
	cause = DatumGetJsonbP(d);
	ok = JB_ROOT_IS_OBJECT(cause) &&
		a2_json_field(&cause->root, "index", &f) && a2_json_int64(&f, &index) && index >= 1 &&
		a2_json_field(&cause->root, "attempt", &f) && a2_json_int64(&f, &attempt) && attempt >= 1;
	if (ok && a2_json_field(&cause->root, "batchSize", &f))
		ok = a2_json_int64(&f, &batch) && batch >= 1;
	if (!ok)
	{
		bool		idxnull;
		int64		idx = col_int(tuple, desc, A2C_IDX, &idxnull);

		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("stored event %lld of session \"%s\" has an invalid cause",
						(long long) idx,
						TextDatumGetCString(SPI_getbinval(tuple, desc, A2C_SESSION_ID, &idxnull))),
				 errdetail("A cause must be an object with integer index >= 1, attempt >= 1 and optional batchSize >= 1.")));
	}
	a2j_begin_object(js, "cause");
	a2j_int(js, "index", index);
	a2j_int(js, "attempt", attempt);
	if (batch >= 1)
		a2j_int(js, "batchSize", batch);
	a2j_end_object(js);
}

void
a2j_event_row(A2Json *js, const char *key, HeapTuple tuple, TupleDesc desc,
			  bool full)
{
	a2j_begin_object(js, key);
	put_col(js, "id", tuple, desc, A2C_EVENT_ID, COL_TEXT);
	put_col(js, "type", tuple, desc, A2C_EVENT_TYPE, COL_TEXT);
	put_col(js, "payload", tuple, desc, A2C_PAYLOAD, COL_JSONB);
	put_col(js, "index", tuple, desc, A2C_IDX, COL_INT);
	put_col(js, "sessionId", tuple, desc, A2C_SESSION_ID, COL_TEXT);
	put_col(js, "createdAt", tuple, desc, A2C_CREATED_AT, COL_ISO);
	if (full)
	{
		put_cause(js, tuple, desc);
		put_col(js, "lane", tuple, desc, A2C_LANE, COL_TEXT);
		put_col(js, "processedAt", tuple, desc, A2C_PROCESSED_AT, COL_ISO);
		put_col(js, "processedByAttempt", tuple, desc, A2C_PROCESSED_BY_ATTEMPT, COL_INT);
		put_col(js, "returnedEventIds", tuple, desc, A2C_RETURNED_EVENT_IDS, COL_JSONB);
		put_col(js, "firstClaimedAt", tuple, desc, A2C_FIRST_CLAIMED_AT, COL_ISO);
		put_col(js, "lastClaimedAt", tuple, desc, A2C_LAST_CLAIMED_AT, COL_ISO);
		put_col(js, "attemptCount", tuple, desc, A2C_ATTEMPT_COUNT, COL_INT);
		put_col(js, "failureCount", tuple, desc, A2C_FAILURE_COUNT, COL_INT);
		put_col(js, "lastFailedAt", tuple, desc, A2C_LAST_FAILED_AT, COL_ISO);
		put_col(js, "lastFailedAttempt", tuple, desc, A2C_LAST_FAILED_ATTEMPT, COL_INT);
		put_col(js, "lastError", tuple, desc, A2C_LAST_ERROR, COL_TEXT);
		put_col(js, "failedAt", tuple, desc, A2C_FAILED_AT, COL_ISO);
		put_col(js, "claimHolder", tuple, desc, A2C_CLAIM_HOLDER, COL_TEXT);
		put_col(js, "claimExpiresAt", tuple, desc, A2C_CLAIM_EXPIRES_AT, COL_ISO);
		/* SPEC 7.1: only when set, so unscheduled events keep 0.5's shape */
		if (desc->natts >= A2C_NOT_BEFORE)
		{
			bool		isnull;

			(void) SPI_getbinval(tuple, desc, A2C_NOT_BEFORE, &isnull);
			if (!isnull)
				put_col(js, "notBefore", tuple, desc, A2C_NOT_BEFORE, COL_ISO);
		}
	}
	a2j_end_object(js);
}
