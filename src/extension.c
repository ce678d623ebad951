/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  The installed extension as this backend sees it (extension.h).
 *
 *	  One scan of pg_extension gives the schema and extversion; one scan of
 *	  Citus's pg_dist_partition (when that catalog exists) says whether
 *	  a2_events is distributed.  Nothing here runs SQL, so it works before
 *	  SPI is connected and costs nothing on a server without Citus.
 *
 *	  Everything else about the relations (a new relation under the same
 *	  name, new statistics, a new index) is the plan cache's job: a kept
 *	  plan revalidates itself.  Only a change in what the statement texts
 *	  depend on bumps the generation.
 *
 * IDENTIFICATION
 *	  src/extension.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "extension.h"

static const char *const objects_names[A2_OBJECTS_COUNT] = {
	[A2_OBJECTS_0_1] = "0.1.0",
	[A2_OBJECTS_0_2] = "0.2.0",
	[A2_OBJECTS_0_3] = "0.3.0",
	[A2_OBJECTS_0_4] = "0.4.0",
};

static bool cache_valid = false;
static uint64 generation = 0;
static char *schema_quoted = NULL;	/* in TopMemoryContext */
static Oid	schema_oid = InvalidOid;
static Oid	events_relid = InvalidOid;
static A2Objects objects = A2_OBJECTS_LATEST;
static bool distributed = false;

/*
 * a2_relid's answers (InvalidOid included), forgotten at every change of
 * pg_class, as the syscache entry it copies would be, and when the state
 * is read again.
 */
#define RELID_CACHE_SIZE 32
static struct
{
	char		name[NAMEDATALEN];
	Oid			relid;
}			relids[RELID_CACHE_SIZE];
static int	nrelids = 0;

/* a2_events, locked by a refresh in this (sub)transaction: the next is a no-op */
static Oid	locked_relid = InvalidOid;

const char *
a2_objects_name(A2Objects o)
{
	Assert(o >= 0 && o < A2_OBJECTS_COUNT);
	return objects_names[o];
}

static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == events_relid)
		cache_valid = false;
}

static void
pg_class_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	nrelids = 0;
}

/*
 * Any end or start of a transaction or subtransaction: the lock may be
 * gone (a subtransaction's abort releases what it took), so the next
 * refresh takes it again.
 */
static void
lock_xact_callback(XactEvent event, void *arg)
{
	locked_relid = InvalidOid;
}

static void
lock_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	locked_relid = InvalidOid;
}

void
a2_extension_init(void)
{
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(RELNAMENSP, pg_class_callback, (Datum) 0);
	RegisterXactCallback(lock_xact_callback, NULL);
	RegisterSubXactCallback(lock_subxact_callback, NULL);
}

static A2Objects
objects_of(const char *extversion)
{
	for (int i = 0; i < A2_OBJECTS_COUNT; i++)
		if (strcmp(objects_names[i], extversion) == 0)
			return (A2Objects) i;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the installed a2 objects have version %s, which this library does not serve",
					extversion),
			 errdetail("This library serves versions %s to %s.",
					   objects_names[0], objects_names[A2_OBJECTS_LATEST]),
			 errhint("Install the a2 library of that version, or ALTER EXTENSION a2 UPDATE.")));
	return A2_OBJECTS_LATEST;	/* keep compiler quiet */
}

/* The a2 row of pg_extension: its schema and version. */
static void
read_extension_row(Oid *nsp, A2Objects *version)
{
	Oid			extoid = get_extension_oid("a2", true);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"a2\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION a2.")));

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		v = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		*nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
		*version = isnull ? A2_OBJECTS_0_1 : objects_of(TextDatumGetCString(v));
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!found)
		elog(ERROR, "could not find the pg_extension row of extension \"a2\"");
}

/*
 * Is `relid` in Citus's pg_dist_partition?  A catalog scan rather than a
 * query, so it costs nothing on a server without Citus (no such table).
 */
static bool
citus_distributes(Oid relid)
{
	Oid			dist_partition = get_relname_relid("pg_dist_partition",
												   PG_CATALOG_NAMESPACE);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	if (!OidIsValid(dist_partition) || !OidIsValid(relid))
		return false;
	rel = table_open(dist_partition, AccessShareLock);
	/* logicalrelid (a regclass) is its first column */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Read the catalogs into the cache. */
static void
read_state(void)
{
	Oid			nsp = InvalidOid;
	A2Objects	version = A2_OBJECTS_LATEST;
	char	   *nspname;
	const char *quoted;
	Oid			relid;
	bool		dist;

	read_extension_row(&nsp, &version);
	nspname = get_namespace_name(nsp);
	if (nspname == NULL)
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	quoted = quote_identifier(nspname);
	relid = get_relname_relid("a2_events", nsp);
	dist = citus_distributes(relid);

	/* a new generation only when the statements' text would change */
	if (schema_quoted == NULL || strcmp(schema_quoted, quoted) != 0 ||
		dist != distributed || version != objects)
	{
		if (schema_quoted)
			pfree(schema_quoted);
		schema_quoted = MemoryContextStrdup(TopMemoryContext, quoted);
		distributed = dist;
		objects = version;
		generation++;
	}
	events_relid = relid;
	schema_oid = nsp;
	nrelids = 0;
	cache_valid = true;
}

/*
 * ALTER EXTENSION a2 UPDATE holds an ACCESS EXCLUSIVE lock on a2_events
 * until it commits.  A refresh waits for it, before anything chooses a
 * text: the lock on a2_events, once granted, delivers the invalidations
 * the update sent, so a call that began during the update runs the new
 * objects' texts, not the old ones planned again against the new objects
 * (whose indexes differ: an old text can find its index gone).  In a
 * backend's first call the cache is read, then a2_events locked, then the
 * cache checked again.  Every call's statements lock a2_events anyway.
 * Once granted, the lock is held to the end of the transaction (or of the
 * subtransaction that took it, if it aborts), and taking it again would
 * be a lookup that delivers nothing: a refresh takes it once.
 */
void
a2_extension_refresh(void)
{
	for (;;)
	{
		if (OidIsValid(events_relid) && events_relid != locked_relid &&
			IsTransactionState())
		{
			LockRelationOid(events_relid, AccessShareLock);
			locked_relid = events_relid;
		}
		if (cache_valid)
			return;
		read_state();
	}
}

const char *
a2_extension_schema(void)
{
	a2_extension_refresh();
	return schema_quoted;
}

A2Objects
a2_installed_objects(void)
{
	a2_extension_refresh();
	return objects;
}

bool
a2_distributed(void)
{
	a2_extension_refresh();
	return distributed;
}

uint64
a2_extension_generation(void)
{
	a2_extension_refresh();
	return generation;
}

Oid
a2_relid(const char *relname)
{
	Oid			relid;

	a2_extension_refresh();
	for (int i = 0; i < nrelids; i++)
		if (strcmp(relids[i].name, relname) == 0)
			return relids[i].relid;
	relid = get_relname_relid(relname, schema_oid);
	if (nrelids < RELID_CACHE_SIZE && strlen(relname) < NAMEDATALEN)
	{
		strlcpy(relids[nrelids].name, relname, NAMEDATALEN);
		relids[nrelids++].relid = relid;
	}
	return relid;
}

bool
a2_relfilenode(const char *relname, Oid *relnode)
{
	Oid			relid = a2_relid(relname);
	HeapTuple	tup;

	if (!OidIsValid(relid))
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return false;
	*relnode = (Oid) ((Form_pg_class) GETSTRUCT(tup))->relfilenode;
	ReleaseSysCache(tup);
	return true;
}
