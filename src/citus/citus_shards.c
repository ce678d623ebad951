/*-------------------------------------------------------------------------
 *
 * citus_shards.c
 *	  Sessions pinned to a local shard for the rest of the transaction (see
 *	  citus_shards.h), and the statement text that runs on the shard tables.
 *
 *	  The pins live in TopTransactionContext; a transaction pins one
 *	  session or a few, so a list is searched linearly.  A subtransaction
 *	  abort drops every pin: Citus's metadata lock, taken inside that
 *	  subtransaction, may be gone with it, and an unpinned session only
 *	  costs the next call its pin again.
 *
 * IDENTIFICATION
 *	  src/citus/citus_shards.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "pg_compat.h"
#include "citus/citus_shards.h"

typedef struct Pin
{
	char	   *session_id;
	const A2ShardSet *set;
} Pin;

static List *pins = NIL;		/* of Pin *, in TopTransactionContext */
static bool local_write_told = false;
static bool callbacks_registered = false;

static void
pins_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			pins = NIL;			/* freed with TopTransactionContext */
			local_write_told = false;
			break;
		default:
			break;
	}
}

static void
pins_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		pins = NIL;
		local_write_told = false;
	}
}

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(pins_xact_callback, NULL);
	RegisterSubXactCallback(pins_subxact_callback, NULL);
	callbacks_registered = true;
}

void
a2_tell_local_write(void)
{
	register_callbacks();
	local_write_told = true;
}

bool
a2_local_write_told(void)
{
	return local_write_told;
}

void
a2_pin_session(const char *session_id, const A2ShardSet *set)
{
	MemoryContext old;
	Pin		   *pin;

	register_callbacks();
	if (a2_pinned_session(session_id) != NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	pin = palloc(sizeof(Pin));
	pin->session_id = pstrdup(session_id);
	pin->set = set;
	pins = lappend(pins, pin);
	MemoryContextSwitchTo(old);
}

static const A2ShardSet *
find_pin(const char *id, size_t len)
{
	ListCell   *lc;

	foreach(lc, pins)
	{
		Pin		   *pin = (Pin *) lfirst(lc);

		if (strlen(pin->session_id) == len && memcmp(pin->session_id, id, len) == 0)
			return pin->set;
	}
	return NULL;
}

const A2ShardSet *
a2_pinned_session(const char *session_id)
{
	if (pins == NIL)
		return NULL;
	return find_pin(session_id, strlen(session_id));
}

const A2ShardSet *
a2_pinned_session_datum(Datum session_text)
{
	text	   *t;
	const A2ShardSet *set;

	if (pins == NIL)
		return NULL;
	t = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(session_text));
	set = find_pin(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if ((Pointer) t != DatumGetPointer(session_text))
		pfree(t);
	return set;
}

bool
a2_shard_group_pinned(int64 anchor)
{
	ListCell   *lc;

	foreach(lc, pins)
	{
		if (((Pin *) lfirst(lc))->set->anchor == anchor)
			return true;
	}
	return false;
}

int64
a2_shard_of(const A2ShardSet *set, const char *relname)
{
	for (int i = 0; i < set->count; i++)
		if (strcmp(set->relnames[i], relname) == 0)
			return set->shardids[i];
	return 0;
}

static bool
ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

char *
a2_shard_statement_text(const char *sql, const A2ShardSet *set)
{
	static const char prefix[] = "@extschema@.";
	StringInfoData buf;
	const char *p = sql;
	const char *hit;

	initStringInfo(&buf);
	while ((hit = strstr(p, prefix)) != NULL)
	{
		const char *name = hit + strlen(prefix);
		const char *end = name;
		const char *after;
		char	   *ident;
		int64		shardid;

		while (ident_char(*end))
			end++;
		after = end;
		while (*after == ' ')
			after++;
		appendBinaryStringInfo(&buf, p, end - p);
		p = end;
		ident = pnstrdup(name, end - name);
		shardid = a2_shard_of(set, ident);
		if (shardid != 0)
			appendStringInfo(&buf, "_" INT64_FORMAT, shardid);
		else if (*after != '(')	/* not a function call either */
			elog(ERROR, "statement with a shard text names table %s, which is not keyed by session: \"%s\"",
				 ident, sql);
		pfree(ident);
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}
