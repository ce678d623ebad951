/*-------------------------------------------------------------------------
 *
 * call.c
 *	  One a2 call's context (call.h).
 *
 * IDENTIFICATION
 *	  src/call.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"

#include "call.h"
#include "clock.h"
#include "extension.h"

void
a2_call_begin(A2Call *call, const char *session_id)
{
	call->caller = CurrentMemoryContext;
	a2_clock_check_override();
	a2_extension_refresh();
	call->layer = a2_layer();
	call->session_id = session_id;
	call->session = session_id ? CStringGetTextDatum(session_id) : (Datum) 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
a2_call_end(A2Call *call)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}
