/*-------------------------------------------------------------------------
 *
 * wait_gate.h
 *	  How a durable wait holds its event's not_before column (docs/semantics.md,
 *	  "Waits", "How it is stored"): the gate a waiting event stores, and the
 *	  far-future time of a wait without timeout.  Header only: waits.c
 *	  stores the gate, json_out.c recognizes it when it prints an event
 *	  (and waits.c prints through json_out.c, so the rule lives below both).
 *	  No locks.
 *
 * IDENTIFICATION
 *	  src/wait_gate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_WAIT_GATE_H
#define A2_WAIT_GATE_H

/*
 * The not_before of an event that waits without a timeout: the largest
 * time a2 stores (+275760-09-13T00:00:00.000Z, JavaScript's last Date).
 */
#define A2_WAIT_FOREVER		INT64CONST(8640000000000000)

/*
 * A waiting event's gate, the not_before it stores while it waits: the
 * later of its own notBefore and its timeout's due time (until), or
 * A2_WAIT_FOREVER without a timeout.
 */
static inline int64
a2_wait_gate(bool has_until, int64 until, bool has_own, int64 own)
{
	if (!has_until)
		return A2_WAIT_FOREVER;
	return has_own && own > until ? own : until;
}

#endif							/* A2_WAIT_GATE_H */
