/*-------------------------------------------------------------------------
 *
 * extension.h
 *	  What this backend knows about the installed extension: its schema,
 *	  the version of its SQL objects (pg_extension.extversion), and whether
 *	  a2_events is a Citus table.
 *
 *	  Read from the catalogs on first use and kept until a relcache
 *	  invalidation of a2_events (ANALYZE, VACUUM, DDL, ALTER EXTENSION
 *	  UPDATE, a2_distribute(), DROP EXTENSION) marks it stale; the next
 *	  a2_extension_refresh() reads it again.  a2_extension_generation()
 *	  changes only when something a statement's text depends on changed
 *	  (the schema's name, the objects' version, distributed mode): kept
 *	  plans of an older generation are prepared again (statements.c).
 *
 *	  Takes AccessShareLock on pg_extension and pg_dist_partition for the
 *	  length of a catalog scan, and AccessShareLock on a2_events (once its
 *	  OID is known) to the end of the transaction, before anything else a
 *	  call locks: a refresh waits for an ALTER EXTENSION a2 UPDATE in
 *	  progress and then sees its objects.
 *
 * IDENTIFICATION
 *	  src/extension.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_EXTENSION_H
#define A2_EXTENSION_H

/*
 * The versions of a2's SQL objects this library serves.  A new library
 * keeps serving a database whose objects are older until ALTER EXTENSION
 * a2 UPDATE runs; statements pick their text by this (statements.h).
 */
typedef enum A2Objects
{
	A2_OBJECTS_0_1 = 0,			/* 0.1.0 */
	A2_OBJECTS_0_2,				/* 0.2.0: a2_retired_sessions, a2_retired_last_index() */
	A2_OBJECTS_0_3,				/* 0.3.0: a2_events.not_before */
	A2_OBJECTS_0_4,				/* 0.4.0 */
	A2_OBJECTS_COUNT
} A2Objects;

#define A2_OBJECTS_LATEST (A2_OBJECTS_COUNT - 1)

/* "0.3.0" for A2_OBJECTS_0_3 */
extern const char *a2_objects_name(A2Objects objects);

extern void a2_extension_init(void);

/* Read the catalogs again if an invalidation made what we know stale. */
extern void a2_extension_refresh(void);

/* Each of these refreshes first. */
extern const char *a2_extension_schema(void);	/* quoted, as SQL names it */
extern A2Objects a2_installed_objects(void);
extern bool a2_distributed(void);
extern uint64 a2_extension_generation(void);

/* OID of one of the extension's relations (InvalidOid if missing). */
extern Oid	a2_relid(const char *relname);

/*
 * The relfilenode of one of the extension's relations: false if missing.
 * A TRUNCATE, VACUUM FULL, restore or new extension changes it, which the
 * shared-memory hints of lowwater.c and key_park.c key on.
 */
extern bool a2_relfilenode(const char *relname, Oid *relnode);

#endif							/* A2_EXTENSION_H */
