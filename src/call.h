/*-------------------------------------------------------------------------
 *
 * call.h
 *	  One a2 call's context: a2_call_begin() checks the clock override
 *	  (clock.h), refreshes what the backend knows of the extension
 *	  (extension.h), picks the storage layer (layer.h), builds the session
 *	  id's text Datum once, and connects SPI; a2_call_end() disconnects.
 *	  Every SQL-callable operation brackets its statements with the pair.
 *
 * IDENTIFICATION
 *	  src/call.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_CALL_H
#define A2_CALL_H

#include "layer.h"

typedef struct A2Call
{
	MemoryContext caller;		/* the context results are returned in */
	const A2Layer *layer;
	const char *session_id;		/* NULL: the call is not about one session */
	Datum		session;		/* session_id as text, (Datum) 0 when NULL */
} A2Call;

extern void a2_call_begin(A2Call *call, const char *session_id);
extern void a2_call_end(A2Call *call);

#endif							/* A2_CALL_H */
