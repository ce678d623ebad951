/*-------------------------------------------------------------------------
 *
 * snapshots.c
 *	  a2_put_snapshots(session_id, reducer_name, snapshots): write reducer
 *	  checkpoints with pinning (the 0.8.0 putSnapshots).
 *
 *	  Writes apply in index order.  Each pins its checkpoint for every listed
 *	  event that is still unfinished; the head advances when index >= head
 *	  (a pinned older head first moves to history, and a history row at the
 *	  new head's index is dropped); an older write survives in history only
 *	  when pinned.
 *
 *	  Locking: the session lock first, then the pinned event rows FOR SHARE
 *	  in index order, then snapshot rows.  a2_complete and a2_fail take the
 *	  same session lock before they release pins, so a pin can never be
 *	  recorded for an event that has just finished (the race a literal port
 *	  of the sqlite code has under READ COMMITTED), and no history row
 *	  outlives every pin on it.  Under REPEATABLE READ the FOR SHARE lock
 *	  turns the same race into a serialization failure instead.
 *
 * IDENTIFICATION
 *	  src/snapshots.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "layer.h"
#include "spi_util.h"
#include "statements.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(a2_put_snapshots);

static A2Statement lock_unfinished = {
	.name = "snapshots.lock_unfinished",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT e.idx FROM @extschema@.a2_events e"
				" WHERE e.session_id OPERATOR(pg_catalog.=) $1 AND e.idx OPERATOR(pg_catalog.=) ANY ($2)"
				"   AND e.processed_at IS NULL AND e.failed_at IS NULL"
				" ORDER BY e.idx FOR SHARE"),
	},
	.nparams = 2,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("pin_event_indexes", INT8ARRAYOID)},
	.session_param = 1,
	.columns = A2_COLUMNS("idx")
};

static A2Statement lock_head = {
	.name = "snapshots.lock_head",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT s.up_to_index FROM @extschema@.a2_snapshots s"
				" WHERE s.session_id OPERATOR(pg_catalog.=) $1 AND s.reducer_name OPERATOR(pg_catalog.=) $2 FOR UPDATE"),
	},
	.nparams = 2, .params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID)},
	.session_param = 1,
	.columns = A2_COLUMNS("up_to_index")
};


static A2Statement is_pinned = {
	.name = "snapshots.is_pinned",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"SELECT EXISTS (SELECT 1 FROM @extschema@.a2_snapshot_pins p"
				"  WHERE p.session_id OPERATOR(pg_catalog.=) $1 AND p.reducer_name OPERATOR(pg_catalog.=) $2"
				"    AND p.up_to_index OPERATOR(pg_catalog.=) $3) AS pinned"),
	},
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID)},
	.session_param = 1,
	.columns = A2_COLUMNS("pinned")
};


/* the guard keeps a slower TypeScript writer from moving the head back */
static A2Statement put_head = {
	.name = "snapshots.put_head",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshots AS s"
				"  (session_id, reducer_name, up_to_index, state, updated_at)"
				" VALUES ($1, $2, $3, $4, $5)"
				" ON CONFLICT (session_id, reducer_name) DO UPDATE"
				"   SET up_to_index = excluded.up_to_index, state = excluded.state,"
				"       updated_at = excluded.updated_at"
				"   WHERE excluded.up_to_index OPERATOR(pg_catalog.>=) s.up_to_index"),
	},
	.nparams = 5,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID), A2_PARAM("state", JSONBOID),
		A2_PARAM("now", INT8OID)},
	.session_param = 1,
};

static A2Statement put_history = {
	.name = "snapshots.put_history",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"INSERT INTO @extschema@.a2_snapshot_history"
				"  (session_id, reducer_name, up_to_index, state, updated_at)"
				" VALUES ($1, $2, $3, $4, $5)"
				" ON CONFLICT (session_id, reducer_name, up_to_index) DO UPDATE"
				"   SET state = excluded.state, updated_at = excluded.updated_at"),
	},
	.nparams = 5,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID), A2_PARAM("state", JSONBOID),
		A2_PARAM("now", INT8OID)},
	.session_param = 1,
};

static A2Statement drop_history_at = {
	.name = "snapshots.drop_history_at",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED | A2_SHARD, A2_OBJECTS_0_1,
				"DELETE FROM @extschema@.a2_snapshot_history h"
				" WHERE h.session_id OPERATOR(pg_catalog.=) $1 AND h.reducer_name OPERATOR(pg_catalog.=) $2 AND h.up_to_index OPERATOR(pg_catalog.=) $3"),
	},
	.nparams = 3,
	.params = {A2_PARAM("session_id", TEXTOID), A2_PARAM("reducer_name", TEXTOID),
		A2_PARAM("up_to_index", INT8OID)},
	.session_param = 1,
};

A2_STATEMENT_GROUP(snapshots, &lock_unfinished, &lock_head, &is_pinned, &put_head, &put_history, &drop_history_at);


typedef struct SnapshotWrite
{
	int			position;		/* in the argument, for a stable sort */
	int64		index;
	Jsonb	   *state;
	int64	   *pins;
	int			npins;
} SnapshotWrite;

typedef struct PutContext
{
	char	   *session_id;
	char	   *reducer;
	SnapshotWrite *writes;
	int			count;
	int64	   *unfinished;		/* sorted */
	int			nunfinished;
	int64		now_ms;
	A2Call		call;
} PutContext;

/* Bind (session_id, reducer_name[, up_to_index[, state, now]]) in order. */
static void
bind_snapshot(A2Args *a, A2Statement *stmt, PutContext *ctx, int64 index,
			  Jsonb *state)
{
	a2_args_init(a, stmt);
	a2_bind(a, 1, TEXTOID, ctx->call.session);
	a2_bind_text(a, 2, ctx->reducer);
	if (stmt->nparams >= 3)
		a2_bind_int8(a, 3, index);
	if (stmt->nparams >= 5)
	{
		a2_bind(a, 4, JSONBOID, JsonbPGetDatum(state));
		a2_bind_int8(a, 5, ctx->now_ms);
	}
}

static int
cmp_write(const void *a, const void *b)
{
	const SnapshotWrite *x = a;
	const SnapshotWrite *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->position - y->position;
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

static void
parse_writes(Jsonb *snapshots, int count, PutContext *ctx)
{
	const char *sid = ctx->session_id;
	static const char *const write_keys[] = {"index", "state", "pinEventIndexes", NULL};

	ctx->writes = palloc0(sizeof(SnapshotWrite) * Max(count, 1));
	ctx->count = count;
	for (int i = 0; i < count; i++)
	{
		JsonbContainer *obj = a2_json_object_elem(&snapshots->root, i, "snapshots", sid);
		SnapshotWrite *w = &ctx->writes[i];
		JsonbValue	f;
		char		path[64];

		w->position = i;
		snprintf(path, sizeof(path), "snapshots[%d]", i);
		a2_json_check_keys(obj, write_keys, "snapshots", sid, path);
		snprintf(path, sizeof(path), "snapshots[%d].index", i);
		if (!a2_json_field(obj, "index", &f))
			a2_invalid("snapshots", sid, "%s is required.", path);
		w->index = a2_json_int_field(&f, 0, "snapshots", sid, path);

		if (getKeyJsonValueFromContainer(obj, "state", 5, &f) == NULL)
			f.type = jbvNull;
		w->state = JsonbValueToJsonb(&f);

		if (a2_json_field(obj, "pinEventIndexes", &f))
		{
			JsonbContainer *arr;
			int			n;

			if (f.type != jbvBinary || !JsonContainerIsArray(f.val.binary.data))
				a2_invalid("snapshots", sid, "snapshots[%d].pinEventIndexes must be an array.", i);
			arr = f.val.binary.data;
			n = JsonContainerSize(arr);
			if (n > A2_MAX_LIST_ITEMS)
				a2_invalid("snapshots", sid,
						   "snapshots[%d].pinEventIndexes has %d elements; the limit is %d.",
						   i, n, A2_MAX_LIST_ITEMS);
			w->pins = palloc(sizeof(int64) * Max(n, 1));
			w->npins = n;
			for (int j = 0; j < n; j++)
			{
				snprintf(path, sizeof(path), "snapshots[%d].pinEventIndexes[%d]", i, j);
				w->pins[j] = a2_json_int_field(getIthJsonbValueFromContainer(arr, j),
											   1, "snapshots", sid, path);
			}
		}
	}
}

/* Lock every listed event that is unfinished, in index order. */
static void
lock_pinned_events(PutContext *ctx)
{
	int			total = 0;
	int64	   *all;
	A2Args		a;
	uint64		n;

	for (int i = 0; i < ctx->count; i++)
		total += ctx->writes[i].npins;
	ctx->nunfinished = 0;
	ctx->unfinished = NULL;
	if (total == 0)
		return;
	all = palloc(sizeof(int64) * total);
	total = 0;
	for (int i = 0; i < ctx->count; i++)
		for (int j = 0; j < ctx->writes[i].npins; j++)
			all[total++] = ctx->writes[i].pins[j];

	a2_args_init(&a, &lock_unfinished);
	a2_bind(&a, 1, TEXTOID, ctx->call.session);
	a2_bind(&a, 2, INT8ARRAYOID, a2_int8_array(all, NULL, total));
	n = a2_exec_latest(&a, SPI_OK_SELECT);
	ctx->unfinished = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 r = 0; r < n; r++)
		ctx->unfinished[ctx->nunfinished++] = a2_col_int64(r, 1);	/* idx */
}

static void
pin_write(PutContext *ctx, SnapshotWrite *w)
{
	int64	   *keep = palloc(sizeof(int64) * Max(w->npins, 1));
	int			n = 0;

	if (ctx->nunfinished == 0)
		return;
	for (int j = 0; j < w->npins; j++)
		if (bsearch(&w->pins[j], ctx->unfinished, ctx->nunfinished,
					sizeof(int64), cmp_int64))
			keep[n++] = w->pins[j];
	if (n == 0)
		return;
	a2_layer()->insert_pins(ctx->session_id, ctx->reducer, w->index, keep, n);
}


static bool
pinned(PutContext *ctx, int64 index)
{
	A2Args		a;

	bind_snapshot(&a, &is_pinned, ctx, index, NULL);
	a2_exec_latest(&a, SPI_OK_SELECT);
	return a2_col_bool(0, 1);	/* pinned */
}

static void
put_snapshots(PutContext *ctx)
{
	A2Args		a;
	bool		has_head;
	int64		head = 0;

	a2_call_begin(&ctx->call, ctx->session_id);
	a2_lock_session(ctx->session_id);
	lock_pinned_events(ctx);	/* ctx->unfinished arrives sorted by idx */
	qsort(ctx->writes, ctx->count, sizeof(SnapshotWrite), cmp_write);

	bind_snapshot(&a, &lock_head, ctx, 0, NULL);
	has_head = a2_exec_latest(&a, SPI_OK_SELECT) > 0;
	if (has_head)
		head = a2_col_int64(0, 1);	/* up_to_index */

	for (int i = 0; i < ctx->count; i++)
	{
		SnapshotWrite *w = &ctx->writes[i];

		pin_write(ctx, w);
		if (!has_head || w->index >= head)
		{
			if (has_head && w->index > head && pinned(ctx, head))
			{
				a2_layer()->head_to_history(ctx->session_id, ctx->reducer);
			}
			bind_snapshot(&a, &put_head, ctx, w->index, w->state);
			a2_exec_latest(&a, SPI_OK_INSERT);
			bind_snapshot(&a, &drop_history_at, ctx, w->index, NULL);
			a2_exec_latest(&a, SPI_OK_DELETE);
			has_head = true;
			head = w->index;
		}
		else if (pinned(ctx, w->index))
		{
			bind_snapshot(&a, &put_history, ctx, w->index, w->state);
			a2_exec_latest(&a, SPI_OK_INSERT);
		}
	}
	a2_call_end(&ctx->call);
}

Datum
a2_put_snapshots(PG_FUNCTION_ARGS)
{
	PutContext	ctx = {0};
	Jsonb	   *snapshots;
	int			count;

	ctx.session_id = a2_name_arg(fcinfo, 0, "session_id");
	ctx.reducer = a2_name_arg(fcinfo, 1, "reducer_name");
	snapshots = a2_array_arg(fcinfo, 2, "snapshots", &count);
	parse_writes(snapshots, count, &ctx);
	ctx.now_ms = a2_clock_now_ms();
	if (count > 0)
		put_snapshots(&ctx);
	PG_RETURN_VOID();
}
