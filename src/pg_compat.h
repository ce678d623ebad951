/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  Every difference between the PostgreSQL majors a2 supports (15 to 18)
 *	  that its code meets, in one place: the operations call the a2_*
 *	  names below and never test PG_VERSION_NUM themselves.
 *
 *	  Checked against 15, 16.2, 17.12 and 18.6 (every file builds with
 *	  -Werror; the suites of scripts/matrix.sh pass on 17 and 18, and passed
 *	  by hand on 16) and found unchanged for a2's use, so needing nothing
 *	  here: the background worker API and BackgroundWorkerInitializeConnection,
 *	  shmem_request_hook and shmem_startup_hook, RequestNamedLWLockTranche,
 *	  the xact and subxact callbacks, Async_Notify from the notifier (which
 *	  sets MyDatabaseId per sending transaction), WaitLatch with
 *	  PG_WAIT_EXTENSION, the SPI plan calls (SPI_prepare_cursor,
 *	  SPI_keepplan, SPI_execute_snapshot), the systable scans of
 *	  pg_extension, and pg_class_aclcheck.
 *
 * IDENTIFICATION
 *	  src/pg_compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_PG_COMPAT_H
#define A2_PG_COMPAT_H

#include "postgres.h"

#include "access/transam.h"
#include "utils/datetime.h"
#include "utils/guc.h"

/* 16 moved the varlena macros (VARDATA_ANY, ...) out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "a2 supports PostgreSQL 15, 16, 17 and 18"
#endif

/*
 * DecodeDateTime: 16 added a DateTimeErrorExtra argument, filled in with
 * the offending time zone name or abbreviation on some errors.  a2 only
 * asks whether a literal parses, so the details are dropped.
 */
static inline int
a2_decode_datetime(char **field, int *ftype, int nf, int *dtype,
				   struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/*
 * A GUC check hook's *extra: 16 moved GUC memory into a memory context and
 * frees extra with guc_free() (pfree), so it must come from guc_malloc();
 * before 16 it was free()d, so malloc().  NULL when out of memory.
 */
static inline void *
a2_guc_extra_alloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/*
 * The shared transaction-id counters (oldestClogXid and the like): 17
 * renamed ShmemVariableCache to TransamVariables.
 */
#if PG_VERSION_NUM >= 170000
#define a2_transam TransamVariables
#else
#define a2_transam ShmemVariableCache
#endif

/*
 * 18 replaced the attribute pg_attribute_noreturn(), written after a
 * declaration, by pg_noreturn, written before it (C11 _Noreturn).  GCC and
 * Clang take the attribute in front too.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * The module's magic block: from 18 on it also names the library and its
 * version (pg_get_loaded_modules()).  A2_VERSION comes from a2.control
 * through the Makefile.
 */
#if PG_VERSION_NUM >= 180000
#define A2_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "a2", .version = A2_VERSION)
#else
#define A2_MODULE_MAGIC PG_MODULE_MAGIC
#endif

#endif							/* A2_PG_COMPAT_H */
