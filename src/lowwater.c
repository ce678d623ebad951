/*-------------------------------------------------------------------------
 *
 * lowwater.c
 *	  Claim low-water marks (lowwater.h): a fixed table of slots, one per
 *	  hash of (database, a2_events' relfilenode, session id), each holding
 *	  the full key, the mark and the anchor it was recorded with.
 *
 *	  Why a mark is safe (docs/internals.md, "Claim low-water marks"):
 *	  - an event's index is assigned under the session lock as the
 *	    session's greatest index plus one and is never reused, not even
 *	    after the session is dropped (a2_retired_sessions); the TypeScript
 *	    backend takes the same lock and assigns the same way;
 *	  - processed is final: nothing sets processed_at back to NULL.  A
 *	    dead-lettered event is unprocessed (processed_at is NULL), so the
 *	    mark, the least *unprocessed* index, never passes one: a redrive
 *	    puts back an event that is above the mark already;
 *	  - so an index below the least unprocessed index a snapshot saw stays
 *	    processed for good, provided the snapshot saw only committed
 *	    changes: a claim records a mark only when its transaction has no
 *	    transaction id yet (its own completions could roll back).
 *	  What is not covered by these rules is caught by the key and the
 *	  anchor: TRUNCATE, VACUUM FULL or a restore give a2_events a new
 *	  relfilenode (new keys); DROP EXTENSION a new OID and relfilenode; a
 *	  session whose rows were deleted and that started again, which a2
 *	  never does but a writer that ignores a2_retired_sessions might (or a
 *	  test that appends the same ids at the same a2.now again), has a
 *	  lowest event row with another xmin (its index, xmin and event id
 *	  make the anchor), so its mark is ignored and replaced.
 *
 *	  Locking: the shared table is guarded by one LWLock, taken alone
 *	  (shared to read a slot, exclusive to write one) for a few
 *	  instructions.  Without shared_preload_libraries the table is the
 *	  backend's own and needs no lock.
 *
 * IDENTIFICATION
 *	  src/lowwater.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "extension.h"
#include "lowwater.h"

/* 4096 slots of 32 bytes: 128 kB of shared memory */
#define A2_LOW_WATER_SLOTS 4096

typedef struct LowWaterSlot
{
	Oid			dbid;			/* InvalidOid: empty */
	Oid			relnode;		/* a2_events' relfilenode */
	uint64		session_hash;
	int64		mark;
	uint64		anchor;
} LowWaterSlot;

typedef struct LowWaterShared
{
	LWLock	   *lock;
	LowWaterSlot slots[A2_LOW_WATER_SLOTS];
} LowWaterShared;

static LowWaterShared *shared = NULL;	/* shared memory, or the backend's */
static bool in_shmem = false;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
low_water_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(LowWaterShared)));
	RequestNamedLWLockTranche("a2_low_water", 1);
}

static void
low_water_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("a2 low-water marks", sizeof(LowWaterShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(LowWaterShared));
		shared->lock = &(GetNamedLWLockTranche("a2_low_water"))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
	in_shmem = true;
}

void
a2_low_water_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = low_water_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = low_water_shmem_startup;
}

bool
a2_low_water_enabled(void)
{
	return !a2_distributed();
}

/* The table, the backend's own when a2 is not preloaded. */
static LowWaterShared *
table(void)
{
	if (shared == NULL)
		shared = MemoryContextAllocZero(TopMemoryContext, sizeof(LowWaterShared));
	return shared;
}

/* The slot's key for session_id; false when a2_events cannot be found. */
static bool
slot_key(const char *session_id, LowWaterSlot *key)
{
	if (!a2_relfilenode("a2_events", &key->relnode))
		return false;
	key->dbid = MyDatabaseId;
	key->session_hash = hash_bytes_extended((const unsigned char *) session_id,
											strlen(session_id), 0);
	return true;
}

static LowWaterSlot *
slot_of(LowWaterShared *t, const LowWaterSlot *key)
{
	uint64		h = key->session_hash ^ ((uint64) key->relnode << 32) ^ key->dbid;

	return &t->slots[h % A2_LOW_WATER_SLOTS];
}

static bool
same_key(const LowWaterSlot *a, const LowWaterSlot *b)
{
	return a->dbid == b->dbid && a->relnode == b->relnode &&
		a->session_hash == b->session_hash;
}

bool
a2_low_water_get(const char *session_id, int64 *mark, uint64 *anchor)
{
	LowWaterShared *t = table();
	LowWaterSlot key;
	LowWaterSlot *slot;
	bool		found;

	if (!slot_key(session_id, &key))
		return false;
	slot = slot_of(t, &key);
	if (in_shmem)
		LWLockAcquire(t->lock, LW_SHARED);
	found = same_key(slot, &key);
	if (found)
	{
		*mark = slot->mark;
		*anchor = slot->anchor;
	}
	if (in_shmem)
		LWLockRelease(t->lock);
	return found;
}

void
a2_low_water_set(const char *session_id, int64 mark, uint64 anchor)
{
	LowWaterShared *t = table();
	LowWaterSlot key;
	LowWaterSlot *slot;

	if (!slot_key(session_id, &key))
		return;
	slot = slot_of(t, &key);
	if (in_shmem)
		LWLockAcquire(t->lock, LW_EXCLUSIVE);
	/* two valid marks of one incarnation of the session: the higher one */
	if (!(same_key(slot, &key) && slot->anchor == anchor && slot->mark >= mark))
	{
		*slot = key;
		slot->mark = mark;
		slot->anchor = anchor;
	}
	if (in_shmem)
		LWLockRelease(t->lock);
}
