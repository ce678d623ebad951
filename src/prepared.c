/*-------------------------------------------------------------------------
 *
 * prepared.c
 *	  Whether a prepared transaction of this database waits for COMMIT
 *	  PREPARED (prepared.h).
 *
 *	  Core's pg_prepared_xact() is called directly, as a set-returning
 *	  function, not through a statement: a claim asks this up to twice,
 *	  and a statement's executor start-up cost several times what the
 *	  function does.  Both of the function's return modes are read (one
 *	  row per call, or a tuplestore), so its implementation may change
 *	  between majors.
 *
 * IDENTIFICATION
 *	  src/prepared.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/twophase.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/fmgroids.h"
#include "utils/tuplestore.h"

#include "prepared.h"

/* pg_prepared_xact(): transaction, gid, prepared, ownerid, dbid */
#define PREPARED_XACT_DBID 5

/* A row's dbid column (isnull as read) names this database. */
static bool
mine(Datum dbid, bool isnull)
{
	return !isnull && DatumGetObjectId(dbid) == MyDatabaseId;
}

static bool
of_this_database(HeapTupleHeader row)
{
	bool		isnull;
	Datum		dbid = GetAttributeByNum(row, PREPARED_XACT_DBID, &isnull);

	return mine(dbid, isnull);
}

static bool
in_tuplestore(ReturnSetInfo *rsinfo)
{
	TupleTableSlot *slot;
	bool		found = false;

	if (rsinfo->setResult == NULL)
		return false;
	slot = MakeSingleTupleTableSlot(rsinfo->setDesc, &TTSOpsMinimalTuple);
	while (!found && tuplestore_gettupleslot(rsinfo->setResult, true, false, slot))
	{
		bool		isnull;
		Datum		dbid = slot_getattr(slot, PREPARED_XACT_DBID, &isnull);

		found = mine(dbid, isnull);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(rsinfo->setResult);
	return found;
}

bool
a2_prepared_xacts_waiting(void)
{
	FmgrInfo	flinfo;
	ReturnSetInfo rsinfo;
	ExprContext *econtext;
	bool		found = false;

	LOCAL_FCINFO(fcinfo, 0);

	if (max_prepared_xacts == 0)
		return false;

	fmgr_info(F_PG_PREPARED_XACT, &flinfo);
	econtext = CreateStandaloneExprContext();
	MemSet(&rsinfo, 0, sizeof(rsinfo));
	rsinfo.type = T_ReturnSetInfo;
	rsinfo.econtext = econtext;
	rsinfo.allowedModes = (int) (SFRM_ValuePerCall | SFRM_Materialize);
	rsinfo.returnMode = SFRM_ValuePerCall;
	InitFunctionCallInfoData(*fcinfo, &flinfo, 0, InvalidOid, NULL, (Node *) &rsinfo);

	for (;;)
	{
		Datum		row;

		rsinfo.isDone = ExprSingleResult;
		fcinfo->isnull = false;
		row = FunctionCallInvoke(fcinfo);
		if (rsinfo.returnMode == SFRM_Materialize)
		{
			found = in_tuplestore(&rsinfo);
			break;
		}
		if (rsinfo.isDone == ExprEndResult)
			break;
		if (!fcinfo->isnull && of_this_database(DatumGetHeapTupleHeader(row)))
		{
			found = true;
			break;
		}
	}
	/* runs the function's shutdown callback when it stopped early */
	FreeExprContext(econtext, true);
	return found;
}
