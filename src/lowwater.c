/*-------------------------------------------------------------------------
 *
 * lowwater.c
 *	  Claim low-water marks (lowwater.h): a fixed table of slots, each
 *	  holding the full key (database, a2_events' relfilenode, session id
 *	  hash), the mark and the anchor it was recorded with.  A key has two
 *	  candidate slots; a new key takes an empty one, else the one written
 *	  longer ago.  (With one slot per key, two sessions whose keys met
 *	  evicted each other at every claim and each claim scanned from the
 *	  session's first event: about a fifth of 1,000 sessions in 4,096
 *	  slots, bench/RESULTS.md "Claim low-water slots".)
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

/* 4096 slots of 40 bytes: 160 kB of shared memory */
#define A2_LOW_WATER_SLOTS 4096

typedef struct LowWaterSlot
{
	Oid			dbid;			/* InvalidOid: empty */
	Oid			relnode;		/* a2_events' relfilenode */
	uint64		session_hash;
	int64		mark;
	uint64		anchor;
	uint64		written;		/* the table's clock when last written */
} LowWaterSlot;

typedef struct LowWaterShared
{
	LWLock	   *lock;
	uint64		clock;			/* counts writes */
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

/* The key's two candidate slots: from the low and the high bits of its hash. */
static void
slots_of(LowWaterShared *t, const LowWaterSlot *key, LowWaterSlot **first,
		 LowWaterSlot **second)
{
	uint64		h = key->session_hash ^ ((uint64) key->relnode << 32) ^ key->dbid;
	uint32		one = (uint32) (h % A2_LOW_WATER_SLOTS);
	uint32		two = (uint32) ((h >> 32) % A2_LOW_WATER_SLOTS);

	if (two == one)
		two = (one + 1) % A2_LOW_WATER_SLOTS;
	*first = &t->slots[one];
	*second = &t->slots[two];
}

static bool
same_key(const LowWaterSlot *a, const LowWaterSlot *b)
{
	return a->dbid == b->dbid && a->relnode == b->relnode &&
		a->session_hash == b->session_hash;
}

/* The candidate slot holding the key, or NULL. */
static LowWaterSlot *
find_slot(LowWaterShared *t, const LowWaterSlot *key)
{
	LowWaterSlot *one;
	LowWaterSlot *two;

	slots_of(t, key, &one, &two);
	if (same_key(one, key))
		return one;
	if (same_key(two, key))
		return two;
	return NULL;
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
	if (in_shmem)
		LWLockAcquire(t->lock, LW_SHARED);
	slot = find_slot(t, &key);
	found = slot != NULL;
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
	if (in_shmem)
		LWLockAcquire(t->lock, LW_EXCLUSIVE);
	slot = find_slot(t, &key);
	if (slot == NULL)
	{
		LowWaterSlot *one;
		LowWaterSlot *two;

		/* an empty candidate, else the one written longer ago */
		slots_of(t, &key, &one, &two);
		if (!OidIsValid(one->dbid))
			slot = one;
		else if (!OidIsValid(two->dbid))
			slot = two;
		else
			slot = one->written <= two->written ? one : two;
	}
	/* two valid marks of one incarnation of the session: the higher one */
	if (!(same_key(slot, &key) && slot->anchor == anchor && slot->mark >= mark))
	{
		*slot = key;
		slot->mark = mark;
		slot->anchor = anchor;
		slot->written = ++t->clock;
	}
	if (in_shmem)
		LWLockRelease(t->lock);
}
