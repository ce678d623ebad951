/*-------------------------------------------------------------------------
 *
 * queues.c
 *	  The queues of a2_claim and a2_claim_next (queues.h): the "queues"
 *	  argument's checks and the paused queues (docs/semantics.md "Queues,
 *	  priorities and limits").  The walk over queues and priority levels
 *	  is dispatch_walk.c.
 *
 * IDENTIFICATION
 *	  src/queues.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/rel.h"

#include "a2.h"
#include "events.h"
#include "extension.h"
#include "queues.h"
#include "spi_util.h"
#include "statements.h"

static A2Statement paused = {
	.name = "queues.paused",
	.texts = {A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4, A2_PAUSED_QUEUES_SQL)},
	.nparams = 0,
	.columns = A2_COLUMNS("queues")
};

A2_STATEMENT_GROUP(queues, &paused);

Datum
a2_queues_arg(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return (Datum) 0;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"queues\" must name at least one queue"),
				 errhint("Pass NULL to serve every queue.")));
	if (n > A2_MAX_LIST_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"queues\" has %d elements; the limit is %d",
						n, A2_MAX_LIST_ITEMS)));
	for (int i = 0; i < n; i++)
	{
		int			len;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"queues\" must not contain nulls")));
		len = VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i]));
		if (len < 1 || len > A2_MAX_NAME_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"queues\" element %d must be a non-empty name of at most %d bytes",
							i + 1, A2_MAX_NAME_BYTES)));
	}
	a2_require_dispatch();
	return PointerGetDatum(arr);
}

/*
 * No queue was ever paused here: a2_queues, which only a2_pause_queue and
 * a2_resume_queue write, has no page (a row of a transaction in progress
 * has one already).  Saves the paused queues' statement of every claim
 * on a database that never paused a queue.
 */
bool
a2_queues_never_paused(void)
{
	Oid			relid = a2_relid("a2_queues");
	Relation	rel;
	bool		empty;

	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	empty = RelationGetNumberOfBlocks(rel) == 0;
	table_close(rel, NoLock);
	return empty;
}

Datum
a2_paused_queues(void)
{
	A2Args		a;
	bool		isnull;
	Datum		d;

	if (!a2_has_dispatch() || a2_distributed() || a2_queues_never_paused())
		return a2_text_array(NULL, 0);
	a2_args_init(&a, &paused);
	a2_exec_latest(&a, SPI_OK_SELECT);
	d = a2_col(0, 1, &isnull);
	return isnull ? a2_text_array(NULL, 0) : PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
}

bool
a2_dispatch_walk_enabled(void)
{
	return a2_has_dispatch() && !a2_distributed();
}
