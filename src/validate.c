/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  Argument and JSON-shape validation for every a2 function.
 *
 *	  docs/errors.md, "What is checked": required NULLs raise 22004; wrong JSON types, empty or
 *	  oversized names, non-integer or out-of-range numbers, and lists over
 *	  10,000 elements raise 22023.  A JSON number with a fraction is not an
 *	  integer, but 2.0 is 2; values beyond bigint are rejected, never wrapped.
 *	  A JSON null in an optional field means the field is absent.
 *
 * IDENTIFICATION
 *	  src/validate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "clock.h"
#include "json_out.h"
#include "validate.h"

void
a2_require_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

void
a2_invalid(const char *argname, const char *session_id, const char *fmt,...)
{
	StringInfoData detail;

	initStringInfo(&detail);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&detail, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&detail, needed);
	}

	if (session_id)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid \"%s\" for session \"%s\"", argname, session_id),
				 errdetail_internal("%s", detail.data)));
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid \"%s\"", argname),
				 errdetail_internal("%s", detail.data)));
	pg_unreachable();
}

static void
check_name(const char *value, size_t len, const char *argname,
		   const char *session_id, const char *path)
{
	if (len == 0)
		a2_invalid(argname, session_id, "%s must not be empty.", path);
	if (len > A2_MAX_NAME_BYTES)
		a2_invalid(argname, session_id,
				   "%s is %zu bytes long; the limit is %d bytes.",
				   path, len, A2_MAX_NAME_BYTES);
}

char *
a2_name_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	text	   *t;

	a2_require_arg(fcinfo, argno, name);
	t = PG_GETARG_TEXT_PP(argno);
	check_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), name, NULL, name);
	return text_to_cstring(t);
}

void
a2_check_min(int64 value, int64 min, const char *name)
{
	if (value < min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be at least " INT64_FORMAT
						", not " INT64_FORMAT, name, min, value)));
}

int64
a2_int8_arg(FunctionCallInfo fcinfo, int argno, const char *name, int64 min)
{
	int64		v;

	a2_require_arg(fcinfo, argno, name);
	v = PG_GETARG_INT64(argno);
	a2_check_min(v, min, name);
	return v;
}

int64
a2_int4_arg(FunctionCallInfo fcinfo, int argno, const char *name, int64 min)
{
	int64		v;

	a2_require_arg(fcinfo, argno, name);
	v = PG_GETARG_INT32(argno);
	a2_check_min(v, min, name);
	return v;
}

Jsonb *
a2_array_arg(FunctionCallInfo fcinfo, int argno, const char *name, int *count)
{
	Jsonb	   *j;

	a2_require_arg(fcinfo, argno, name);
	j = PG_GETARG_JSONB_P(argno);
	if (!JB_ROOT_IS_ARRAY(j) || JB_ROOT_IS_SCALAR(j))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON array", name)));
	*count = JB_ROOT_COUNT(j);
	if (*count > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("argument \"%s\" has %d element; the limit is %d",
							   "argument \"%s\" has %d elements; the limit is %d",
							   *count, name, *count, A2_MAX_LIST_ITEMS)));
	return j;
}

/*
 * docs/errors.md: a key the contract does not define is refused, so that a
 * misspelled optional field ("paylaod") is never stored as absent.  Keys
 * are compared bytewise, as getKeyJsonValueFromContainer() finds them.
 */
static bool
key_is(const char *name, const JsonbValue *key)
{
	return name != NULL && strlen(name) == (size_t) key->val.string.len &&
		memcmp(name, key->val.string.val, key->val.string.len) == 0;
}

/* `unlisted`: one more key that passes without being offered in the hint */
static void
check_keys(JsonbContainer *obj, const char *const *accepted,
		   const char *unlisted, const char *argname, const char *session_id,
		   const char *path)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		StringInfoData list;
		char	   *key;
		int			keylen;
		bool		known = false;

		if (tok != WJB_KEY)
			continue;
		known = key_is(unlisted, &v);
		for (const char *const *a = accepted; *a != NULL; a++)
			known = known || key_is(*a, &v);
		if (known)
			continue;

		initStringInfo(&list);
		for (const char *const *a = accepted; *a != NULL; a++)
			appendStringInfo(&list, "%s%s", a == accepted ? "" : ", ", *a);
		/*
		 * Quote the key as the input spelled it, even if long or odd: at
		 * most 64 bytes, cut at a character boundary so that the message
		 * stays valid in every client encoding.
		 */
		keylen = pg_mbcliplen(v.val.string.val, v.val.string.len, 64);
		key = pnstrdup(v.val.string.val, keylen);
		if (session_id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown key \"%s%s\" in %s for session \"%s\"",
							key, keylen < v.val.string.len ? "..." : "", path, session_id),
					 errdetail("The key is not part of the a2 contract; nothing was written."),
					 errhint("Accepted keys in %s: %s.", path, list.data)));
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown key \"%s%s\" in %s",
							key, keylen < v.val.string.len ? "..." : "", path),
					 errdetail("The key is not part of the a2 contract; nothing was written."),
					 errhint("Accepted keys in %s: %s.", path, list.data)));
	}
}

JsonbContainer *
a2_json_object_elem(JsonbContainer *arr, int i, const char *argname,
					const char *session_id)
{
	JsonbValue *v = getIthJsonbValueFromContainer(arr, i);

	if (v == NULL || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		a2_invalid(argname, session_id, "%s[%d] must be a JSON object.", argname, i);
	return v->val.binary.data;
}

int64
a2_json_int_field(JsonbValue *v, int64 min, const char *argname,
				  const char *session_id, const char *path)
{
	int64		result;

	if (!a2_json_int64(v, &result))
		a2_invalid(argname, session_id, "%s must be an integer within bigint range.", path);
	if (result < min)
		a2_invalid(argname, session_id, "%s must be at least " INT64_FORMAT ", not " INT64_FORMAT ".",
				   path, min, result);
	return result;
}

char *
a2_json_name_field(JsonbValue *v, const char *argname, const char *session_id,
				   const char *path)
{
	if (v->type != jbvString)
		a2_invalid(argname, session_id, "%s must be a string.", path);
	check_name(v->val.string.val, v->val.string.len, argname, session_id, path);
	return pnstrdup(v->val.string.val, v->val.string.len);
}

void
a2_json_check_keys(JsonbContainer *obj, const char *const *accepted,
				   const char *argname, const char *session_id,
				   const char *path)
{
	check_keys(obj, accepted, NULL, argname, session_id, path);
}

/* The keys of docs/json.md's input shapes for append and complete */
/*
 * events[i].waitFor (`v`, not JSON null) into ev->wait_types and
 * ev->has_wait_timeout / ev->wait_timeout_ms (docs/json.md, "waitFor");
 * 22023 naming the path.  What a waiting row stores is waits.c's.
 */
static void
parse_wait(JsonbValue *v, A2EventInput *ev, const char *session_id, int i)
{
	static const char *const wait_keys[] = {"types", "timeoutMs", NULL};
	JsonbContainer *obj;
	JsonbValue	f;
	char		path[96];
	int			n;

	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		a2_invalid("events", session_id, "events[%d].waitFor must be a JSON object.", i);
	obj = v->val.binary.data;
	snprintf(path, sizeof(path), "events[%d].waitFor", i);
	a2_json_check_keys(obj, wait_keys, "events", session_id, path);

	if (!a2_json_field(obj, "types", &f) || f.type != jbvBinary ||
		!JsonContainerIsArray(f.val.binary.data))
		a2_invalid("events", session_id,
				   "events[%d].waitFor.types must be a JSON array of event types.", i);
	n = JsonContainerSize(f.val.binary.data);
	if (n == 0)
		a2_invalid("events", session_id, "events[%d].waitFor.types must not be empty.", i);
	if (n > A2_MAX_WAIT_TYPES)
		a2_invalid("events", session_id,
				   "events[%d].waitFor.types has %d elements; the limit is %d.",
				   i, n, A2_MAX_WAIT_TYPES);
	for (int j = 0; j < n; j++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(f.val.binary.data, j);

		snprintf(path, sizeof(path), "events[%d].waitFor.types[%d]", i, j);
		(void) a2_json_name_field(t, "events", session_id, path);
	}
	ev->wait_types = JsonbValueToJsonb(&f);

	snprintf(path, sizeof(path), "events[%d].waitFor.timeoutMs", i);
	ev->has_wait_timeout = a2_json_field(obj, "timeoutMs", &f);
	if (ev->has_wait_timeout)
	{
		ev->wait_timeout_ms = a2_json_int_field(&f, 0, "events", session_id, path);
		/* beyond the whole range a2 stores: out of range whatever now is */
		if (ev->wait_timeout_ms > A2_MAX_WAIT_TIMEOUT_MS)
			a2_invalid("events", session_id, "%s must be at most " INT64_FORMAT ", not " INT64_FORMAT ".",
					   path, A2_MAX_WAIT_TIMEOUT_MS, ev->wait_timeout_ms);
	}
}

static const char *const cause_keys[] = {"index", "attempt", "batchSize", NULL};
static const char *const append_keys[] = {"id", "type", "payload", "cause", "lane", "settled", "notBefore", "queue", "priority", "concurrencyKey", "waitFor", NULL};
static const char *const complete_keys[] = {"id", "type", "payload", "lane", "settled", "notBefore", "queue", "priority", "concurrencyKey", "waitFor", NULL};

static void
parse_cause(JsonbValue *v, A2EventInput *ev, const char *session_id, int i)
{
	JsonbContainer *obj;
	JsonbValue	f;
	int64		batch = 0;
	char		path[64];

	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		a2_invalid("events", session_id, "events[%d].cause must be a JSON object.", i);
	obj = v->val.binary.data;
	snprintf(path, sizeof(path), "events[%d].cause", i);
	a2_json_check_keys(obj, cause_keys, "events", session_id, path);

	snprintf(path, sizeof(path), "events[%d].cause.index", i);
	if (!a2_json_field(obj, "index", &f))
		a2_invalid("events", session_id, "%s is required.", path);
	ev->cause_index = a2_json_int_field(&f, 1, "events", session_id, path);

	snprintf(path, sizeof(path), "events[%d].cause.attempt", i);
	if (!a2_json_field(obj, "attempt", &f))
		a2_invalid("events", session_id, "%s is required.", path);
	ev->cause_attempt = a2_json_int_field(&f, 1, "events", session_id, path);

	snprintf(path, sizeof(path), "events[%d].cause.batchSize", i);
	if (a2_json_field(obj, "batchSize", &f))
		batch = a2_json_int_field(&f, 1, "events", session_id, path);

	ev->cause = a2_make_cause(ev->cause_index, ev->cause_attempt, batch);
}

A2EventInput *
a2_parse_events(Jsonb *events, const char *session_id, bool for_complete,
				int *count)
{
	JsonbContainer *arr = &events->root;
	int			n;
	A2EventInput *out;

	if (!JB_ROOT_IS_ARRAY(events) || JB_ROOT_IS_SCALAR(events))
		a2_invalid("events", session_id, "events must be a JSON array.");
	n = JB_ROOT_COUNT(events);
	if (n > A2_MAX_LIST_ITEMS)
		a2_invalid("events", session_id,
				   "The batch has %d events; the limit is %d.", n, A2_MAX_LIST_ITEMS);

	out = palloc0(sizeof(A2EventInput) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		JsonbContainer *obj = a2_json_object_elem(arr, i, "events", session_id);
		A2EventInput *ev = &out[i];
		JsonbValue	f;
		char		path[64];

		/* complete's own refusal of a cause says why; keep it first */
		if (for_complete && a2_json_field(obj, "cause", &f))
			a2_invalid("events", session_id,
					   "events[%d].cause is not accepted: a2_complete sets it to the completed attempt.", i);
		/*
		 * complete takes no cause, but a JSON null one is absent (docs/json.md), so
		 * it passes without being offered in the hint
		 */
		snprintf(path, sizeof(path), "events[%d]", i);
		check_keys(obj, for_complete ? complete_keys : append_keys,
				   for_complete ? "cause" : NULL, "events", session_id, path);

		snprintf(path, sizeof(path), "events[%d].id", i);
		if (a2_json_field(obj, "id", &f))
			ev->id = a2_json_name_field(&f, "events", session_id, path);
		else if (for_complete)
			a2_invalid("events", session_id, "%s is required for returned events.", path);

		if (!a2_json_field(obj, "type", &f) || f.type != jbvString)
			a2_invalid("events", session_id, "events[%d].type must be a string.", i);
		ev->type = pnstrdup(f.val.string.val, f.val.string.len);

		if (getKeyJsonValueFromContainer(obj, "payload", 7, &f) != NULL)
			ev->payload = JsonbValueToJsonb(&f);
		else
		{
			JsonbValue	jnull;

			jnull.type = jbvNull;
			ev->payload = JsonbValueToJsonb(&jnull);
		}

		if (a2_json_field(obj, "cause", &f))
			parse_cause(&f, ev, session_id, i);

		snprintf(path, sizeof(path), "events[%d].lane", i);
		if (a2_json_field(obj, "lane", &f))
			ev->lane = a2_json_name_field(&f, "events", session_id, path);

		if (a2_json_field(obj, "settled", &f))
		{
			if (f.type != jbvBool)
				a2_invalid("events", session_id, "events[%d].settled must be a boolean.", i);
			ev->settled = f.val.boolean;
		}

		if (a2_json_field(obj, "notBefore", &f))
		{
			char	   *text;

			if (f.type != jbvString)
				a2_invalid("events", session_id, "events[%d].notBefore must be a timestamp string.", i);
			text = pnstrdup(f.val.string.val, f.val.string.len);
			if (!a2_parse_timestamp_ms(text, &ev->not_before))
				a2_invalid("events", session_id,
						   "events[%d].notBefore must be a finite timestamp within 8.64e15 milliseconds of 1970-01-01.", i);
			ev->has_not_before = true;
		}

		/* 0.4.0 dispatch fields; the defaults are stored as NULL */
		snprintf(path, sizeof(path), "events[%d].queue", i);
		if (a2_json_field(obj, "queue", &f))
		{
			ev->queue = a2_json_name_field(&f, "events", session_id, path);
			if (strcmp(ev->queue, "default") == 0)
				ev->queue = NULL;
		}
		snprintf(path, sizeof(path), "events[%d].priority", i);
		if (a2_json_field(obj, "priority", &f))
		{
			int64		prio;

			if (!a2_json_int64(&f, &prio) || prio < A2_MIN_PRIORITY || prio > A2_MAX_PRIORITY)
				a2_invalid("events", session_id, "%s must be an integer from %d to %d.",
						   path, A2_MIN_PRIORITY, A2_MAX_PRIORITY);
			ev->priority = (int32) prio;
		}
		snprintf(path, sizeof(path), "events[%d].concurrencyKey", i);
		if (a2_json_field(obj, "concurrencyKey", &f))
			ev->concurrency_key = a2_json_name_field(&f, "events", session_id, path);
		if (a2_json_field(obj, "waitFor", &f))
		{
			parse_wait(&f, ev, session_id, i);
			if (ev->settled)
				a2_invalid("events", session_id,
						   "events[%d].waitFor cannot be combined with settled: true; a settled event is never claimed.", i);
		}
	}
	*count = n;
	return out;
}

static int
cmp_input_ids(const void *a, const void *b)
{
	const A2EventInput *x = *(A2EventInput *const *) a;
	const A2EventInput *y = *(A2EventInput *const *) b;

	return strcmp(x->id, y->id);
}

void
a2_check_duplicate_ids(A2EventInput *events, int count, const char *session_id)
{
	A2EventInput **with_id = palloc(sizeof(A2EventInput *) * Max(count, 1));
	int			n = 0;

	for (int i = 0; i < count; i++)
		if (events[i].id)
			with_id[n++] = &events[i];
	qsort(with_id, n, sizeof(A2EventInput *), cmp_input_ids);
	for (int i = 1; i < n; i++)
		if (strcmp(with_id[i - 1]->id, with_id[i]->id) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_A2_PARTIAL_DUPLICATE_BATCH),
					 errmsg("duplicate event id \"%s\" in batch for session \"%s\"",
							with_id[i]->id, session_id),
					 errdetail("Each event id may appear once in a batch.")));
	pfree(with_id);
}
