/*-------------------------------------------------------------------------
 *
 * presence.c
 *	  a2_presence_set and a2_presence_read: short-lived per-participant
 *	  values with field-wise last-writer-wins.
 *
 *	  A write whose `at` is older than the stored live `at` loses; ties go to
 *	  the new write.  A null value deletes the field under the same rule and
 *	  leaves a tombstone in a2_presence_tombstones -- apart from a2_presence,
 *	  so a TypeScript reader never sees it -- so an older write arriving
 *	  later cannot bring the field back.  (The TypeScript backend deletes
 *	  the row and forgets.)  Expiry is now + ttl_ms on the store clock,
 *	  never `at`; an expired row or tombstone counts as absent everywhere.
 *
 *	  Concurrent writers of one participant serialize on the participant
 *	  lock (layer.h: a transaction advisory lock in local.c's two-key
 *	  space on one node, a row lock in distributed mode), and the layer
 *	  writes the fields.  Without it a delete and an older write could both
 *	  pass their checks and resurrect the field.  Lock order: the
 *	  participant lock, then its rows; the checks after it read the latest
 *	  committed state, also under REPEATABLE READ.
 *
 *	  A read sweeps expired rows of its namespace as housekeeping, and
 *	  never waits for it: it takes a participant's lock only if free
 *	  (the layer's try form), deletes that participant's expired rows
 *	  (nobody else can hold them: every writer takes the lock first) and
 *	  leaves the others for a later read.  So readers of several
 *	  namespaces, in any order, never wait on each other or on writers
 *	  (0.2.0 deleted under row locks, and two readers in opposite orders
 *	  deadlocked).
 *
 * IDENTIFICATION
 *	  src/presence.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "layer.h"
#include "json_out.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_presence_set);
PG_FUNCTION_INFO_V1(a2_presence_read);




/* participants of namespace $1 with expired rows; a bounded batch per read */
#define A2_SWEEP_BATCH 64
static A2Statement expired_participants = {
	.name = "presence.expired_participants",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT x.participant FROM ("
				"  SELECT p.participant FROM @extschema@.a2_presence p"
				"   WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.expires_at OPERATOR(pg_catalog.<=) $2"
				"  UNION"
				"  SELECT t.participant FROM @extschema@.a2_presence_tombstones t"
				"   WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.expires_at OPERATOR(pg_catalog.<=) $2"
				") x LIMIT " CppAsString2(A2_SWEEP_BATCH)),
	},
	.nparams = 2, .params = {A2_PARAM("ns", TEXTOID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("participant")
};

/* expired rows of participant $3 in namespace $1, whose lock we hold */
static A2Statement sweep_participant = {
	.name = "presence.sweep_participant",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"WITH values_swept AS ("
				"  DELETE FROM @extschema@.a2_presence p"
				"   WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.participant OPERATOR(pg_catalog.=) $3"
				"     AND p.expires_at OPERATOR(pg_catalog.<=) $2"
				") DELETE FROM @extschema@.a2_presence_tombstones t"
				"   WHERE t.ns OPERATOR(pg_catalog.=) $1 AND t.participant OPERATOR(pg_catalog.=) $3"
				"     AND t.expires_at OPERATOR(pg_catalog.<=) $2"),
	},
	.nparams = 3,
	.params = {A2_PARAM("ns", TEXTOID), A2_PARAM("now", INT8OID),
		A2_PARAM("participant", TEXTOID)},
};

enum
{
	LIVE_PARTICIPANT = 1,
	LIVE_FIELD,
	LIVE_VALUE,
	LIVE_SEEN,
	LIVE_AT,
	LIVE_EXPIRES_AT
};

static A2Statement read_live = {
	.name = "presence.read_live",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1,
				"SELECT p.participant, p.field, p.value, p.seen, p.at, p.expires_at"
				"  FROM @extschema@.a2_presence p"
				" WHERE p.ns OPERATOR(pg_catalog.=) $1 AND p.expires_at OPERATOR(pg_catalog.>) $2"
				" ORDER BY p.participant, p.field"),
	},
	.nparams = 2, .params = {A2_PARAM("ns", TEXTOID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("participant", "field", "value", "seen", "at", "expires_at")
};

A2_STATEMENT_GROUP(presence, &expired_participants, &sweep_participant, &read_live);






/* Split `values` into fields to set and fields (null) to delete. */
static void
parse_values(Jsonb *values, A2PresenceWrite *w)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n;
	char	   *field = NULL;

	if (!JB_ROOT_IS_OBJECT(values))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"values\" must be a JSON object")));
	n = JB_ROOT_COUNT(values);
	if (n > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_plural("argument \"values\" has %d field; the limit is %d",
							   "argument \"values\" has %d fields; the limit is %d",
							   n, n, A2_MAX_LIST_ITEMS)));
	w->set_fields = palloc(sizeof(char *) * Max(n, 1));
	w->set_values = palloc(sizeof(Jsonb *) * Max(n, 1));
	w->del_fields = palloc(sizeof(char *) * Max(n, 1));
	w->nset = w->ndel = 0;

	it = JsonbIteratorInit(&values->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char		path[64];

			snprintf(path, sizeof(path), "field %d", w->nset + w->ndel);
			field = a2_json_name_field(&v, "values", NULL, path);
		}
		else if (tok == WJB_VALUE)
		{
			if (v.type == jbvNull)
				w->del_fields[w->ndel++] = field;
			else
			{
				w->set_fields[w->nset] = field;
				w->set_values[w->nset++] = JsonbValueToJsonb(&v);
			}
		}
	}
}

Datum
a2_presence_set(PG_FUNCTION_ARGS)
{
	A2PresenceWrite w;
	int64		ttl_ms;

	w.ns = a2_name_arg(fcinfo, 0, "ns");
	w.participant = a2_name_arg(fcinfo, 1, "participant");
	a2_require_arg(fcinfo, 2, "values");
	a2_require_arg(fcinfo, 3, "at");
	a2_require_arg(fcinfo, 4, "seen");
	ttl_ms = a2_int8_arg(fcinfo, 5, "ttl_ms", 0);
	parse_values(PG_GETARG_JSONB_P(2), &w);
	w.at_ms = a2_timestamptz_to_ms(PG_GETARG_TIMESTAMPTZ(3), "at");
	w.seen = PG_GETARG_INT64(4);
	w.now_ms = a2_clock_now_ms();
	w.expires_ms = a2_add_ttl(w.now_ms, ttl_ms);
	if (w.nset + w.ndel > 0)
		a2_layer()->presence_write(&w);
	PG_RETURN_VOID();
}

static bool
may_sweep(void)
{
	Oid			user = GetUserId();

	return pg_class_aclcheck(a2_relid("a2_presence"), user, ACL_DELETE) == ACLCHECK_OK &&
		pg_class_aclcheck(a2_relid("a2_presence_tombstones"), user, ACL_DELETE) == ACLCHECK_OK;
}

/* Delete expired rows of the participants whose lock is free; never waits. */
static void
sweep_expired(const A2Call *call, int64 now_ms)
{
	A2Args		a;
	uint64		n;
	char	  **participants;

	a2_args_init(&a, &expired_participants);
	a2_bind(&a, 1, TEXTOID, call->session);
	a2_bind_int8(&a, 2, now_ms);
	n = a2_exec_latest(&a, SPI_OK_SELECT);
	participants = palloc(sizeof(char *) * Max(n, 1));

	/* the next statements replace SPI_tuptable: copy the names first */
	for (uint64 r = 0; r < n; r++)
		participants[r] = a2_col_text(r, 1);	/* participant */
	for (uint64 r = 0; r < n; r++)
	{
		if (!call->layer->try_lock_participant(call->session_id, participants[r]))
			continue;
		a2_args_init(&a, &sweep_participant);
		a2_bind(&a, 1, TEXTOID, call->session);
		a2_bind_int8(&a, 2, now_ms);
		a2_bind_text(&a, 3, participants[r]);
		a2_exec_latest(&a, SPI_OK_DELETE);
	}
}

static Jsonb *
presence_read(const char *ns, int64 now_ms)
{
	A2Call		call;
	A2Json		js = NULL;
	A2Args		a;
	uint64		n;
	Jsonb	   *result;

	/* the call's "session" is the namespace: presence is keyed by ns */
	a2_call_begin(&call, ns);
	/*
	 * The sweep is housekeeping: skip it where deleting is not allowed (a
	 * read-only transaction, or a reader granted SELECT only).
	 */
	if (!XactReadOnly && may_sweep())
		sweep_expired(&call, now_ms);
	a2_args_init(&a, &read_live);
	a2_bind(&a, 1, TEXTOID, call.session);
	a2_bind_int8(&a, 2, now_ms);
	n = a2_exec(&a, false, SPI_OK_SELECT);

	a2j_begin_array(&js, NULL);
	for (uint64 r = 0; r < n; r++)
	{
		bool		isnull;

		a2j_begin_object(&js, NULL);
		a2j_string(&js, "participant", a2_col_text(r, LIVE_PARTICIPANT));
		a2j_string(&js, "field", a2_col_text(r, LIVE_FIELD));
		a2j_jsonb(&js, "value", DatumGetJsonbP(a2_col(r, LIVE_VALUE, &isnull)));
		a2j_int(&js, "seen", a2_col_int64(r, LIVE_SEEN));
		a2j_iso(&js, "at", a2_col_int64(r, LIVE_AT));
		a2j_iso(&js, "expiresAt", a2_col_int64(r, LIVE_EXPIRES_AT));
		a2j_end_object(&js);
	}
	result = a2j_finish(a2j_end_array(&js), call.caller);
	a2_call_end(&call);
	return result;
}

Datum
a2_presence_read(PG_FUNCTION_ARGS)
{
	char	   *ns = a2_name_arg(fcinfo, 0, "ns");

	PG_RETURN_JSONB_P(presence_read(ns, a2_clock_now_ms()));
}
