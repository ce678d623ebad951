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
 *	  on, and an overflowing counter moves the time one millisecond ahead
 *	  (at the last millisecond the 48 bits hold, the random tail counts on
 *	  instead), so each id is greater than the one before it, as text and
 *	  as uuid.
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
#define UUID7_TAIL_MAX		((UINT64CONST(1) << 56) - 1)

/* The last id this backend made: its time, counter and random tail */
static int64 last_ms = -1;
static uint32 last_counter = 0;
static uint64 last_tail = 0;

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
	uint64		tail = 0;

	/* rnd[0..2]: a counter seed; rnd[3..9]: the 56 random bits */
	strong_random(rnd, sizeof(rnd));
	for (int i = 3; i < 10; i++)
		tail = tail << 8 | rnd[i];

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
	else if (last_ms < UUID7_MAX_MS)
	{
		/* overflow: run one millisecond ahead */
		ms = last_ms + 1;
		counter = 0;
	}
	else
	{
		/*
		 * Overflow at the last millisecond the 48 bits hold: no time is
		 * left to run ahead to, so the tail counts on from the last id's
		 * (2^56 more ids) instead of the time wrapping to 1970.
		 */
		ms = last_ms;
		counter = last_counter;
		tail = last_tail + 1;
		if (tail > UUID7_TAIL_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("no time-ordered event id is left at the store clock's time"),
					 errhint("Supply event ids, or reset a2.now.")));
	}
	last_ms = ms;
	last_counter = counter;
	last_tail = tail;

	b[0] = (uint8) (ms >> 40);
	b[1] = (uint8) (ms >> 32);
	b[2] = (uint8) (ms >> 24);
	b[3] = (uint8) (ms >> 16);
	b[4] = (uint8) (ms >> 8);
	b[5] = (uint8) ms;
	b[6] = 0x70 | (uint8) (counter >> 14);	/* version 7, counter 17..14 */
	b[7] = (uint8) (counter >> 6);	/* counter 13..6 */
	b[8] = 0x80 | (uint8) (counter & 0x3f); /* variant 10, counter 5..0 */
	for (int i = 0; i < 7; i++)
		b[9 + i] = (uint8) (tail >> (8 * (6 - i)));

	return psprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
					"%02x%02x%02x%02x%02x%02x",
					b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
					b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
