/*-------------------------------------------------------------------------
 *
 * key_park.c
 *	  Parked keys (key_park.h): a fixed table of slots, one per hash of
 *	  (database, a2_events' relfilenode, key), each holding the key, the
 *	  key's version when it was counted, and the store-clock interval
 *	  [from, until) in which the count stands.  Beside it, one version
 *	  counter per bucket of keys and one epoch for all: a key's version is
 *	  (epoch, its bucket's counter).
 *
 *	  Why a parked key is never wrong while it stands (docs/internals.md,
 *	  "Parked keys"):
 *	  - the claim that counts a key reads the key's version first, then
 *	    counts its live leases and rate-window claims with the latest
 *	    committed state, under the key's lock, so no other claim of the key
 *	    runs meanwhile, and proposes the key only if it admits nothing;
 *	  - every transaction that frees a slot of the key (a2_complete,
 *	    a2_fail, a2_cancel of a keyed event; a dropped session, a changed
 *	    limit) increments the key's version after its commit is visible
 *	    (XACT_EVENT_COMMIT runs after the commit leaves the proc array).
 *	    So a release is either visible to the count, or it increments the
 *	    version after the count read it and the proposal no longer matches;
 *	  - a prepared transaction is made visible by COMMIT PREPARED, perhaps
 *	    in another backend, where no callback of its own runs: it
 *	    increments the versions at PREPARE, and a count that starts while
 *	    a prepared transaction of the database waits proposes nothing
 *	    (limits.c checks before the count);
 *	  - the proposal is published at the commit of the counting transaction
 *	    (its count may include its own uncommitted leases), after the
 *	    transaction's own releases, and only if the version still matches;
 *	    a rolled-back subtransaction drops the proposals made so far.
 *	    Until then the transaction's later claims use its own proposals,
 *	    which its own releases drop;
 *	  - time frees slots too: the park ends at the first counted lease's
 *	    expiry or when the oldest claim leaves the rate window, and a store
 *	    clock before the count's (a2.now set back) ignores it.
 *	  A slot freed by a writer other than a2's functions (a TypeScript
 *	  store sharing the tables) is seen at the park's end, as an expiry.
 *
 *	  Locking: the shared table is guarded by one LWLock, taken alone
 *	  (shared to read, exclusive to write) for a few instructions.  Without
 *	  shared_preload_libraries there is no table: nothing is parked.
 *
 * IDENTIFICATION
 *	  src/key_park.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "extension.h"
#include "key_park.h"

#define A2_KEY_PARK_SLOTS	512
#define A2_KEY_PARK_BUCKETS 1024
#define A2_KEY_PARK_KEY_BYTES 127	/* longer keys are never parked */

typedef struct KeyId
{
	Oid			dbid;
	Oid			relnode;		/* a2_events' relfilenode */
	uint64		hash;
} KeyId;

typedef struct ParkSlot
{
	KeyId		id;				/* dbid InvalidOid: empty */
	uint64		version;
	int64		from;
	int64		until;
	char		key[A2_KEY_PARK_KEY_BYTES + 1];
} ParkSlot;

typedef struct ParkShared
{
	LWLock	   *lock;
	bool		used;			/* a key was ever parked: read without the lock */
	uint32		epoch;
	uint32		gens[A2_KEY_PARK_BUCKETS];
	ParkSlot	slots[A2_KEY_PARK_SLOTS];
} ParkShared;

static ParkShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this transaction's proposals and releases, in TopTransactionContext */
static List *proposals = NIL;	/* of ParkSlot, waiting for the commit */
static List *releases = NIL;	/* of KeyId */
static bool release_all = false;
static bool callbacks_registered = false;

static void
key_park_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ParkShared)));
	RequestNamedLWLockTranche("a2_key_park", 1);
}

static void
key_park_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("a2 parked keys", sizeof(ParkShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(ParkShared));
		shared->lock = &(GetNamedLWLockTranche("a2_key_park"))->lock;
		shared->epoch = 1;		/* a version is never 0 */
	}
	LWLockRelease(AddinShmemInitLock);
}

void
a2_key_park_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = key_park_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = key_park_shmem_startup;
}

/* The key's identity in this database; false when it cannot have one. */
static bool
key_id(const char *key, KeyId *id)
{
	if (shared == NULL || a2_distributed() ||
		!a2_relfilenode("a2_events", &id->relnode))
		return false;
	id->dbid = MyDatabaseId;
	id->hash = hash_bytes_extended((const unsigned char *) key, strlen(key),
								   ((uint64) id->relnode << 32) | id->dbid);
	return true;
}

static inline uint32
bucket_of(const KeyId *id)
{
	return (uint32) (id->hash % A2_KEY_PARK_BUCKETS);
}

/* A key may sit in either of two slots (two-choice hashing: few evictions). */
static inline ParkSlot *
slot_of(const KeyId *id, int choice)
{
	uint64		h = choice == 0 ? id->hash >> 16 : id->hash >> 40;

	return &shared->slots[h % A2_KEY_PARK_SLOTS];
}

static inline bool
same_id(const KeyId *a, const KeyId *b)
{
	return a->dbid == b->dbid && a->relnode == b->relnode && a->hash == b->hash;
}

/* The current version of a bucket; the caller holds the lock. */
static inline uint64
version_of(uint32 bucket)
{
	return ((uint64) shared->epoch << 32) | shared->gens[bucket];
}

/* Whether a slot stands at now_ms; the caller holds the lock. */
static inline bool
slot_stands(const ParkSlot *slot, int64 now_ms)
{
	return OidIsValid(slot->id.dbid) &&
		slot->version == version_of(bucket_of(&slot->id)) &&
		slot->from <= now_ms && now_ms < slot->until;
}

/*
 * Where to publish a park; the caller holds the lock exclusively.  The
 * key's own slot if it has one, else a free one of its two (empty, or
 * whose park no longer stands at the new park's clock), else the one that
 * ends first.
 */
static ParkSlot *
place_for(const ParkSlot *park)
{
	ParkSlot   *a = slot_of(&park->id, 0);
	ParkSlot   *b = slot_of(&park->id, 1);

	if (same_id(&a->id, &park->id))
		return a;
	if (same_id(&b->id, &park->id))
		return b;
	if (!slot_stands(a, park->from))
		return a;
	if (!slot_stands(b, park->from))
		return b;
	return a->until <= b->until ? a : b;
}

/* The key's slot, if one of its two holds it; the caller holds the lock. */
static ParkSlot *
find_slot(const KeyId *id, const char *key)
{
	for (int choice = 0; choice < 2; choice++)
	{
		ParkSlot   *slot = slot_of(id, choice);

		if (same_id(&slot->id, id) && strcmp(slot->key, key) == 0)
			return slot;
	}
	return NULL;
}

static void
forget_pending(void)
{
	proposals = NIL;
	releases = NIL;
	release_all = false;
}

/*
 * Publish: the releases first (a transaction that counted a key and then
 * freed one of its slots must not park it), then the proposals whose
 * version still matches.  Runs in a commit callback: nothing here can
 * ERROR.
 */
static void
publish(bool with_proposals)
{
	ListCell   *lc;

	if (proposals == NIL && releases == NIL && !release_all)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (release_all)
		shared->epoch++;
	foreach(lc, releases)
		shared->gens[bucket_of((KeyId *) lfirst(lc))]++;
	if (with_proposals)
	{
		foreach(lc, proposals)
		{
			ParkSlot   *p = lfirst(lc);

			if (p->version == version_of(bucket_of(&p->id)))
			{
				*place_for(p) = *p;
				shared->used = true;
			}
		}
	}
	LWLockRelease(shared->lock);
}

static void
key_park_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			publish(true);
			forget_pending();
			break;
		case XACT_EVENT_PRE_PREPARE:
			/*
			 * Released at COMMIT PREPARED, perhaps in another backend:
			 * increment now; until then no count proposes anything (the
			 * prepared transaction is seen by limits.c).  The proposals
			 * are dropped: their counts may rest on this transaction's own
			 * leases, which may still roll back.
			 */
			publish(false);
			forget_pending();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			forget_pending();
			break;
		default:
			break;
	}
}

static void
key_park_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	/* a count may rest on leases the subtransaction took: drop them all */
	if (event == SUBXACT_EVENT_ABORT_SUB)
		proposals = NIL;
}

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(key_park_xact_callback, NULL);
	RegisterSubXactCallback(key_park_subxact_callback, NULL);
	callbacks_registered = true;
}

uint64
a2_key_park_version(const char *key)
{
	KeyId		id;
	uint64		version;

	if (strlen(key) > A2_KEY_PARK_KEY_BYTES || !key_id(key, &id))
		return 0;
	LWLockAcquire(shared->lock, LW_SHARED);
	version = version_of(bucket_of(&id));
	LWLockRelease(shared->lock);
	return version;
}

void
a2_key_park_propose(const char *key, uint64 version, int64 now_ms, int64 until)
{
	ParkSlot   *p;
	MemoryContext old;

	if (version == 0 || until <= now_ms)
		return;
	register_callbacks();
	old = MemoryContextSwitchTo(TopTransactionContext);
	p = palloc0(sizeof(ParkSlot));
	if (!key_id(key, &p->id))
	{
		MemoryContextSwitchTo(old);
		return;
	}
	p->version = version;
	p->from = now_ms;
	p->until = until;
	strlcpy(p->key, key, sizeof(p->key));
	proposals = lappend(proposals, p);
	MemoryContextSwitchTo(old);
}

void
a2_key_park_release(const char *key)
{
	KeyId	   *id;
	MemoryContext old;

	if (shared == NULL)
		return;
	register_callbacks();
	old = MemoryContextSwitchTo(TopTransactionContext);
	id = palloc(sizeof(KeyId));
	if (key_id(key, id))
	{
		ListCell   *lc;

		releases = lappend(releases, id);
		/* this transaction's own count of the key no longer stands */
		foreach(lc, proposals)
		{
			ParkSlot   *p = lfirst(lc);

			if (same_id(&p->id, id))
				proposals = foreach_delete_current(proposals, lc);
		}
	}
	else
	{
		release_all = true;
		proposals = NIL;
	}
	MemoryContextSwitchTo(old);
}

void
a2_key_park_release_all(void)
{
	if (shared == NULL)
		return;
	register_callbacks();
	release_all = true;
	proposals = NIL;
}

/*
 * This transaction's own proposal for the key that stands at now_ms: its
 * count saw the latest committed state and this transaction's own writes,
 * no release of the key committed since (the version), and this
 * transaction freed none of its slots since (a2_key_park_release drops
 * it).  The caller holds the lock.
 */
static ParkSlot *
own_proposal(const KeyId *id, const char *key, int64 now_ms)
{
	ListCell   *lc;

	foreach(lc, proposals)
	{
		ParkSlot   *p = lfirst(lc);

		if (same_id(&p->id, id) && strcmp(p->key, key) == 0 &&
			slot_stands(p, now_ms))
			return p;
	}
	return NULL;
}

bool
a2_key_park_lookup(const char *key, int64 now_ms, int64 *until)
{
	KeyId		id;
	ParkSlot   *slot;
	bool		parked;

	if (strlen(key) > A2_KEY_PARK_KEY_BYTES || !key_id(key, &id))
		return false;
	LWLockAcquire(shared->lock, LW_SHARED);
	slot = find_slot(&id, key);
	if (slot == NULL || !slot_stands(slot, now_ms))
		slot = own_proposal(&id, key, now_ms);
	parked = slot != NULL;
	if (parked)
		*until = slot->until;
	LWLockRelease(shared->lock);
	return parked;
}

int
a2_key_park_list(int64 now_ms, int max, char ***keys, int64 **untils)
{
	KeyId		id;
	int			n = 0;
	char	   *buf;

	*keys = NULL;
	*untils = NULL;
	/* a stale false only costs the counts the hints would have saved */
	if (max <= 0 || shared == NULL ||
		(proposals == NIL && !((volatile ParkShared *) shared)->used) ||
		!key_id("", &id))
		return 0;
	/* allocated before the lock: nothing below can ERROR while holding it */
	max = Min(max, A2_KEY_PARK_SLOTS);
	buf = palloc((Size) max * (A2_KEY_PARK_KEY_BYTES + 1));
	*keys = palloc(sizeof(char *) * max);
	*untils = palloc(sizeof(int64) * max);
	LWLockAcquire(shared->lock, LW_SHARED);
	/* the shared parks, then this transaction's own (a key may come twice) */
	for (int i = 0; i < A2_KEY_PARK_SLOTS + list_length(proposals) && n < max; i++)
	{
		ParkSlot   *slot = i < A2_KEY_PARK_SLOTS ? &shared->slots[i] :
			list_nth(proposals, i - A2_KEY_PARK_SLOTS);

		if (slot->id.dbid != id.dbid || slot->id.relnode != id.relnode ||
			!slot_stands(slot, now_ms))
			continue;
		(*keys)[n] = buf + (Size) n * (A2_KEY_PARK_KEY_BYTES + 1);
		memcpy((*keys)[n], slot->key, A2_KEY_PARK_KEY_BYTES + 1);
		(*untils)[n] = slot->until;
		n++;
	}
	LWLockRelease(shared->lock);
	return n;
}
