/*-------------------------------------------------------------------------
 *
 * uuid7.h
 *	  Time-ordered event ids: RFC 9562 version 7 UUIDs as text.
 *
 * IDENTIFICATION
 *	  src/uuid7.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_UUID7_H
#define A2_UUID7_H

/* Length of the text form, without the terminating NUL */
#define A2_UUID_TEXT_LEN	36

/*
 * A new version 7 UUID for the instant unix_ms (epoch milliseconds), in the
 * usual lower-case 8-4-4-4-12 form, palloc'd.  Within a backend every id is
 * greater than the one before it (see uuid7.c).
 */
extern char *a2_uuid7(int64 unix_ms);

#endif							/* A2_UUID7_H */
