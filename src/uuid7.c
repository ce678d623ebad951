/*-------------------------------------------------------------------------
 *
 * uuid7.c
 *	  Time-ordered event ids: RFC 9562 version 7 UUIDs.
 *
 *	  Why: the unique index a2_events_event_id.  Random (version 4) ids put
 *	  every insert on a random leaf of that index, so after each checkpoint
 *	  nearly every append writes a full-page image of a leaf nobody touched
 *	  since, and the index fills its pages to about 70%.  Ids that start
 *	  with the time land on the index's right edge, where the previous
 *	  appends already were.
 *
 *	  Layout (RFC 9562 section 5.7), 128 bits, big-endian:
 *
 *		48 bits	unix_ts_ms: the store clock (a2.now when set, else the wall
 *				clock), the same reading the event's createdAt holds
 *		 4 bits	version, 0111
 *		12 bits	counter, high part (rand_a)
 *		 2 bits	variant, 10
 *		 6 bits	counter, low part
 *		56 bits	random, new for every id
 *
 *	  Monotonic within a backend, by RFC 9562 section 6.2 method 1 (a
 *	  dedicated counter, here 18 bits): the first id of a millisecond seeds
 *	  the counter with 17 random bits (the top bit clear, so at least 2^17
 *	  ids fit before it overflows); each further id of the same millisecond
 *	  adds one.  A clock reading at or before the last id's time (a clock
 *	  stepped back, a2.now set into the past) reuses that time and counts
 *	  on, and an overflowing counter moves the time one millisecond ahead,
 *	  so each id is greater than the one before it, as text and as uuid.
 *	  Across backends ids are ordered by millisecond only.
 *
 *	  The random bits come from pg_strong_random(), as gen_random_uuid()'s
 *	  do: with 56 of them per id, and 17 more per millisecond and backend,
 *	  two backends making ids in the same millisecond collide with
 *	  negligible probability (and the unique index would refuse it).
 *
 * IDENTIFICATION
 *	  src/uuid7.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port.h"

#include "uuid7.h"

#define UUID7_MAX_MS		((INT64CONST(1) << 48) - 1)
#define UUID7_COUNTER_BITS	18
#define UUID7_COUNTER_MAX	((UINT64CONST(1) << UUID7_COUNTER_BITS) - 1)

/* The last id this backend made: its time and counter */
static int64 last_ms = -1;
static uint32 last_counter = 0;

static void
strong_random(uint8 *buf, size_t len)
{
	if (!pg_strong_random(buf, len))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random bits for an event id")));
}

char *
a2_uuid7(int64 unix_ms)
{
	uint8		rnd[10];
	uint8		b[16];
	int64		ms;
	uint32		counter;

	/* rnd[0..2]: a counter seed; rnd[3..9]: the 56 random bits */
	strong_random(rnd, sizeof(rnd));

	/* 48 unsigned bits: a time before 1970 or after 10889 is clamped */
	ms = Min(Max(unix_ms, 0), UUID7_MAX_MS);
	if (ms > last_ms)
		counter = ((uint32) rnd[0] << 16 | (uint32) rnd[1] << 8 | rnd[2]) &
			(UUID7_COUNTER_MAX >> 1);
	else if (last_counter < UUID7_COUNTER_MAX)
	{
		ms = last_ms;
		counter = last_counter + 1;
	}
	else
	{
		/* overflow: run one millisecond ahead (never past the 48 bits) */
		ms = Min(last_ms + 1, UUID7_MAX_MS);
		counter = 0;
	}
	last_ms = ms;
	last_counter = counter;

	b[0] = (uint8) (ms >> 40);
	b[1] = (uint8) (ms >> 32);
	b[2] = (uint8) (ms >> 24);
	b[3] = (uint8) (ms >> 16);
	b[4] = (uint8) (ms >> 8);
	b[5] = (uint8) ms;
	b[6] = 0x70 | (uint8) (counter >> 14);	/* version 7, counter 17..14 */
	b[7] = (uint8) (counter >> 6);	/* counter 13..6 */
	b[8] = 0x80 | (uint8) (counter & 0x3f); /* variant 10, counter 5..0 */
	memcpy(&b[9], &rnd[3], 7);

	return psprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
					"%02x%02x%02x%02x%02x%02x",
					b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
					b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
