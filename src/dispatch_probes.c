/*-------------------------------------------------------------------------
 *
 * dispatch_probes.c
 *	  The index probes of a2_claim_next's walk over queues and priority
 *	  levels (dispatch_probes.h): their statements, and the choice of a
 *	  direct read (direct.h) where one may stand in for them.
 *
 *	  Each statement is an index-only scan of a2_events_queue_available
 *	  (the plain level's, of a2_events_default_available; the retryAt of
 *	  a call for every queue, of a2_events_queue_retry) with LIMIT 1.  The
 *	  direct reads return the same row from the same snapshot; where the
 *	  table has row-level security, or is not as a2 made it, or
 *	  a2.direct_writes is off, the statement runs.
 *
 *	  The work of the concurrency keys this call has found admit nothing
 *	  more (limits.c) is left out by each head probe's filter: the index
 *	  scan steps over such an entry to the next, instead of the walk
 *	  issuing one probe, one session try-lock and one claim statement for
 *	  each.
 *
 *	  Locks: none beyond the ACCESS SHARE locks a SELECT takes.
 *
 * IDENTIFICATION
 *	  src/dispatch_probes.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "direct.h"
#include "dispatch_probes.h"
#include "layer.h"
#include "limits.h"
#include "queues.h"
#include "spi_util.h"
#include "statements.h"

#define QKEY A2_AVAILABLE_KEY
#define QPRED A2_AVAILABLE_PRED " AND (e.queue IS NOT NULL OR e.priority IS NOT NULL)"
#define QPRIO "COALESCE(e.priority, 0)"
#define Q_NAMED "e.queue OPERATOR(pg_catalog.=) $1"
#define Q_DEFAULT "e.queue IS NULL"

/*
 * The held keys' events are left out by the statement's filter: the index
 * scan steps over them to the next entry instead of the walk issuing one
 * probe, one session try-lock and one claim statement for each.
 */
#define Q_UNHELD(held) \
	"   AND (e.concurrency_key IS NULL" \
	"        OR e.concurrency_key OPERATOR(pg_catalog.<>) ALL (" held "))"

#define Q_NEXT_SQL(qcond, prio, now, after_at, after_session, held) \
	"SELECT e.session_id, " QKEY " AS available_at, e.concurrency_key" \
	"  FROM @extschema@.a2_events e" \
	" WHERE " QPRED " AND " qcond " AND " QPRIO " OPERATOR(pg_catalog.=) " prio \
	"   AND " QKEY " OPERATOR(pg_catalog.<=) " now \
	"   AND (" QKEY ", e.session_id) OPERATOR(pg_catalog.>) (" after_at ", " after_session ")" \
	Q_UNHELD(held) \
	" ORDER BY " QKEY ", e.session_id LIMIT 1"

/* the default queue's level 0: the layer's walk of a2_events_default_available, with the filter */
#define P_NEXT_SQL \
	"SELECT e.session_id, " QKEY " AS available_at, e.concurrency_key" \
	"  FROM @extschema@.a2_events e" \
	" WHERE " A2_AVAILABLE_PRED A2_AVAILABLE_PLAIN \
	"   AND " QKEY " OPERATOR(pg_catalog.<=) $1" \
	"   AND (" QKEY ", e.session_id) OPERATOR(pg_catalog.>) ($2, $3)" \
	Q_UNHELD("$4") \
	" ORDER BY " QKEY ", e.session_id LIMIT 1"

#define Q_LEVEL_SQL(qcond, below) \
	"SELECT " QPRIO " AS priority FROM @extschema@.a2_events e" \
	" WHERE " QPRED " AND " qcond " AND " QPRIO " OPERATOR(pg_catalog.<) " below \
	" ORDER BY " QPRIO " DESC LIMIT 1"

#define Q_RETRY_SQL(qcond, prio, now) \
	"SELECT " QKEY " AS available_at FROM @extschema@.a2_events e" \
	" WHERE " QPRED " AND " qcond " AND " QPRIO " OPERATOR(pg_catalog.=) " prio \
	"   AND " QKEY " OPERATOR(pg_catalog.>) " now \
	" ORDER BY " QKEY " LIMIT 1"

/*
 * A call for every queue reads a2_events_level_available, every queue's
 * entries led by the level: the paused queues' work is left out by the
 * filter (the default queue's entries have no queue).
 */
#define Q_UNPAUSED(paused) \
	"COALESCE(e.queue, 'default') OPERATOR(pg_catalog.<>) ALL (" paused ")"

enum
{
	NEXT_SESSION_ID = 1,
	NEXT_AVAILABLE_AT,
	NEXT_CONCURRENCY_KEY,
	NEXT_PRIORITY				/* level_first's */
};

static A2Statement named_next = {
	.name = "dispatch_walk.named_next",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_NEXT_SQL(Q_NAMED, "$2", "$3", "$4", "$5", "$6"))},
	.nparams = 6,
	.params = {A2_PARAM("queue", TEXTOID), A2_PARAM("priority", INT4OID),
		A2_PARAM("now", INT8OID), A2_PARAM("after_available_at", INT8OID),
	A2_PARAM("after_session_id", TEXTOID), A2_PARAM("held_keys", TEXTARRAYOID)},
	.columns = A2_COLUMNS("session_id", "available_at", "concurrency_key")
};

static A2Statement default_next = {
	.name = "dispatch_walk.default_next",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_NEXT_SQL(Q_DEFAULT, "$1", "$2", "$3", "$4", "$5"))},
	.nparams = 5,
	.params = {A2_PARAM("priority", INT4OID), A2_PARAM("now", INT8OID),
		A2_PARAM("after_available_at", INT8OID), A2_PARAM("after_session_id", TEXTOID),
	A2_PARAM("held_keys", TEXTARRAYOID)},
	.columns = A2_COLUMNS("session_id", "available_at", "concurrency_key")
};

static A2Statement plain_next = {
	.name = "dispatch_walk.plain_next",
	.index = "a2_events_default_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, P_NEXT_SQL)},
	.nparams = 4,
	.params = {A2_PARAM("now", INT8OID), A2_PARAM("after_available_at", INT8OID),
		A2_PARAM("after_session_id", TEXTOID), A2_PARAM("held_keys", TEXTARRAYOID)},
	.columns = A2_COLUMNS("session_id", "available_at", "concurrency_key")
};

static A2Statement level_next = {
	.name = "dispatch_walk.level_next",
	.index = "a2_events_level_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_NEXT_SQL(Q_UNPAUSED("$6"), "$1", "$2", "$3", "$4", "$5"))},
	.nparams = 6,
	.params = {A2_PARAM("priority", INT4OID), A2_PARAM("now", INT8OID),
		A2_PARAM("after_available_at", INT8OID), A2_PARAM("after_session_id", TEXTOID),
	A2_PARAM("held_keys", TEXTARRAYOID), A2_PARAM("paused", TEXTARRAYOID)},
	.columns = A2_COLUMNS("session_id", "available_at", "concurrency_key")
};

/*
 * The first entry below a level, every queue's, as the walk would take
 * it (the paused queues' and held keys' work left out): the highest such
 * level's oldest entry, available now or later.
 */
static A2Statement level_first = {
	.name = "dispatch_walk.level_first",
	.index = "a2_events_level_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
					  "SELECT e.session_id, " QKEY " AS available_at, e.concurrency_key,"
					  "       " QPRIO " AS priority"
					  "  FROM @extschema@.a2_events e"
					  " WHERE " QPRED " AND " QPRIO " OPERATOR(pg_catalog.<) $1"
					  "   AND " Q_UNPAUSED("$3") Q_UNHELD("$2")
					  " ORDER BY " QPRIO " DESC, " QKEY ", e.session_id LIMIT 1")},
	.nparams = 3,
	.params = {A2_PARAM("below", INT4OID), A2_PARAM("held_keys", TEXTARRAYOID),
	A2_PARAM("paused", TEXTARRAYOID)},
	.columns = A2_COLUMNS("session_id", "available_at", "concurrency_key", "priority")
};

static A2Statement named_level = {
	.name = "dispatch_walk.named_level",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_LEVEL_SQL(Q_NAMED, "$2"))},
	.nparams = 2,
	.params = {A2_PARAM("queue", TEXTOID), A2_PARAM("below", INT4OID)},
	.columns = A2_COLUMNS("priority")
};

static A2Statement default_level = {
	.name = "dispatch_walk.default_level",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_LEVEL_SQL(Q_DEFAULT, "$1"))},
	.nparams = 1,
	.params = {A2_PARAM("below", INT4OID)},
	.columns = A2_COLUMNS("priority")
};

static A2Statement named_retry = {
	.name = "dispatch_walk.named_retry",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_RETRY_SQL(Q_NAMED, "$2", "$3"))},
	.nparams = 3,
	.params = {A2_PARAM("queue", TEXTOID), A2_PARAM("priority", INT4OID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("available_at")
};

static A2Statement default_retry = {
	.name = "dispatch_walk.default_retry",
	.index = "a2_events_queue_available", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4, Q_RETRY_SQL(Q_DEFAULT, "$1", "$2"))},
	.nparams = 2,
	.params = {A2_PARAM("priority", INT4OID), A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("available_at")
};

/* the first available-since time after $1 of any queue (a2_events_queue_retry) */
static A2Statement any_retry = {
	.name = "dispatch_walk.any_retry",
	.index = "a2_events_queue_retry", .index_since = A2_OBJECTS_0_4,
	.texts = {A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
					  "SELECT " QKEY " AS available_at FROM @extschema@.a2_events e"
					  " WHERE " QPRED " AND " QKEY " OPERATOR(pg_catalog.>) $1"
					  " ORDER BY " QKEY " LIMIT 1")},
	.nparams = 1, .params = {A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("available_at")
};

A2_STATEMENT_GROUP(dispatch_probes, &named_next, &default_next, &plain_next,
				   &level_next, &level_first, &named_level,
				   &default_level, &named_retry, &default_retry, &any_retry);


/* ---- the probes -------------------------------------------------------- */

/* A head probe's statement: its row is the new position and the key. */
static bool
next_row(A2Args *a, int64 *after_at, char **after_session, char **key)
{
	if (a2_exec_latest(a, SPI_OK_SELECT) == 0)
		return false;
	*after_at = a2_col_int64(0, NEXT_AVAILABLE_AT);
	*after_session = a2_col_text(0, NEXT_SESSION_ID);
	*key = a2_col_text(0, NEXT_CONCURRENCY_KEY);
	return true;
}

/* A level probe's statement, from the latest committed state. */
static bool
level_row(A2Args *a, int32 *level)
{
	bool		isnull;

	if (a2_exec_latest(a, SPI_OK_SELECT) == 0)
		return false;
	*level = DatumGetInt32(a2_col(0, 1, &isnull));
	return true;
}

/* A retryAt probe's statement, from the statement's snapshot. */
static bool
time_row(A2Args *a, int64 *at)
{
	if (a2_exec(a, false, SPI_OK_SELECT) == 0)
		return false;
	*at = a2_col_int64(0, 1);
	return true;
}

void
a2_paused_names(A2Paused *paused, Datum array)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	Datum	   *elems;
	bool	   *nulls;
	char	  **names;
	int			n = 0;

	paused->array = array;
	paused->names = NULL;
	paused->n = 0;
	if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) == 0)
		return;
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	names = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
		names[i] = nulls[i] ? "" : TextDatumGetCString(elems[i]);
	paused->names = (const char *const *) names;
	paused->n = n;
}

bool
a2_probe_head(const char *queue, bool plain, int32 level, int64 now_ms,
			  int64 *after_at, char **after_session, char **key)
{
	A2Args		a;
	Datum		held;
	int			direct;

	direct = plain ?
		a2_direct_next_available(now_ms, after_at, after_session, key, true) :
		a2_direct_queue_next(queue, level, now_ms, after_at, after_session, key);
	if (direct >= 0)
		return direct > 0;

	held = a2_limits_held_keys();
	if (plain)
	{
		a2_args_init(&a, &plain_next);
		a2_bind_int8(&a, 1, now_ms);
		a2_bind_int8(&a, 2, *after_at);
		a2_bind_text(&a, 3, *after_session);
		a2_bind(&a, 4, TEXTARRAYOID, held);
	}
	else if (queue)
	{
		a2_args_init(&a, &named_next);
		a2_bind_text(&a, 1, queue);
		a2_bind_int4(&a, 2, level);
		a2_bind_int8(&a, 3, now_ms);
		a2_bind_int8(&a, 4, *after_at);
		a2_bind_text(&a, 5, *after_session);
		a2_bind(&a, 6, TEXTARRAYOID, held);
	}
	else
	{
		a2_args_init(&a, &default_next);
		a2_bind_int4(&a, 1, level);
		a2_bind_int8(&a, 2, now_ms);
		a2_bind_int8(&a, 3, *after_at);
		a2_bind_text(&a, 4, *after_session);
		a2_bind(&a, 5, TEXTARRAYOID, held);
	}
	return next_row(&a, after_at, after_session, key);
}

bool
a2_probe_all_head(int32 level, int64 now_ms, const A2Paused *paused, int64 *after_at,
				  char **after_session, char **key)
{
	A2Args		a;
	int			direct = a2_direct_level_next(level, now_ms, paused->names, paused->n,
											  after_at, after_session, key);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &level_next);
	a2_bind_int4(&a, 1, level);
	a2_bind_int8(&a, 2, now_ms);
	a2_bind_int8(&a, 3, *after_at);
	a2_bind_text(&a, 4, *after_session);
	a2_bind(&a, 5, TEXTARRAYOID, a2_limits_held_keys());
	a2_bind(&a, 6, TEXTARRAYOID, paused->array);
	return next_row(&a, after_at, after_session, key);
}

bool
a2_probe_all_first(int32 below, const A2Paused *paused, int32 *level, int64 *at,
				   char **session, char **key)
{
	A2Args		a;
	bool		isnull;
	int			direct = a2_direct_level_first(below, paused->names, paused->n,
											   level, at, session, key);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &level_first);
	a2_bind_int4(&a, 1, below);
	a2_bind(&a, 2, TEXTARRAYOID, a2_limits_held_keys());
	a2_bind(&a, 3, TEXTARRAYOID, paused->array);
	if (!next_row(&a, at, session, key))
		return false;
	*level = DatumGetInt32(a2_col(0, NEXT_PRIORITY, &isnull));
	return true;
}

bool
a2_probe_level_below(const char *queue, int32 below, int32 *level)
{
	A2Args		a;
	int			direct = a2_direct_queue_level(queue, below, level);

	if (direct >= 0)
		return direct > 0;
	if (queue)
	{
		a2_args_init(&a, &named_level);
		a2_bind_text(&a, 1, queue);
		a2_bind_int4(&a, 2, below);
	}
	else
	{
		a2_args_init(&a, &default_level);
		a2_bind_int4(&a, 1, below);
	}
	return level_row(&a, level);
}

bool
a2_probe_retry(const char *queue, int32 level, int64 now_ms, int64 *at)
{
	A2Args		a;
	int			direct = a2_direct_queue_retry(queue, level, now_ms, at);

	if (direct >= 0)
		return direct > 0;
	if (queue)
	{
		a2_args_init(&a, &named_retry);
		a2_bind_text(&a, 1, queue);
		a2_bind_int4(&a, 2, level);
		a2_bind_int8(&a, 3, now_ms);
	}
	else
	{
		a2_args_init(&a, &default_retry);
		a2_bind_int4(&a, 1, level);
		a2_bind_int8(&a, 2, now_ms);
	}
	return time_row(&a, at);
}

bool
a2_probe_any_retry(int64 now_ms, int64 *at)
{
	A2Args		a;
	int			direct = a2_direct_queue_any_retry(now_ms, at);

	if (direct >= 0)
		return direct > 0;
	a2_args_init(&a, &any_retry);
	a2_bind_int8(&a, 1, now_ms);
	return time_row(&a, at);
}
