/*-------------------------------------------------------------------------
 *
 * notifier.c
 *	  The notifier's shared-memory queue: settings, shared memory, the
 *	  appending side (record, wake), the worker's accessors, and
 *	  the columns of a2_notify_status() it knows (notify.c builds the row).
 *
 *	  The queue is a fixed array of a2.notify_queue_size slots.  A slot
 *	  holds one announcement: database, top-level xid, greatest index and
 *	  the session id (up to A2_MAX_NAME_BYTES; the ids live in a separate
 *	  array so the worker's scans touch only the small headers).  Free
 *	  slots form a stack; used slots are listed densely in used[], so both
 *	  recording and scanning cost what is queued, not the queue's size.
 *	  It is not FIFO: a prepared transaction's entry may wait for COMMIT
 *	  PREPARED while later entries are announced around it.
 *
 *	  One LWLock guards the whole structure.  Backends hold it only to copy
 *	  their few entries in (at pre-commit); the worker holds it only to list
 *	  and mark slots, never while it asks about xids or sends.
 *
 *	  Entries of prepared transactions are "durable": they also have a
 *	  record on disk (notifier_store.c).  The first worker after shared
 *	  memory was initialised reads the records back (load_requested starts
 *	  set); a backend whose prepared entries found no room sets it again.
 *	  Once the last durable entry of a transaction is freed, the worker
 *	  removes its record.
 *
 * IDENTIFICATION
 *	  src/notifier.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "a2.h"
#include "notifier.h"
#include "notifier_xid.h"

#define A2_NAME_STRIDE	(A2_MAX_NAME_BYTES + 1)
#define A2_QUEUE_DEFAULT	4096
#define A2_QUEUE_MAX		(1024 * 1024)
/* disk-only records a2_notify_wait() can judge one by one */
#define A2_DISK_MAX		64

typedef enum A2SlotState
{
	A2_SLOT_FREE = 0,
	A2_SLOT_READY,				/* recorded; its xid may still be running */
	A2_SLOT_SENDING				/* taken by the worker, not yet committed */
} A2SlotState;

typedef struct A2NotifySlot
{
	uint8		state;			/* A2SlotState */
	bool		durable;		/* a record on disk has this entry too */
	uint16		len;			/* bytes of the session id in names */
	Oid			dboid;
	FullTransactionId fxid;		/* the recording top-level transaction */
	int64		max_index;
} A2NotifySlot;

typedef struct A2NotifierShared
{
	LWLock	   *lock;
	int			size;			/* number of slots */
	int			nused;			/* entries in used[] */
	int			nfree;			/* entries in freestack[] */
	Latch	   *worker_latch;	/* NULL while no worker runs */
	pid_t		worker_pid;
	pg_atomic_uint32 load_requested;	/* durable records not all queued */
	pg_atomic_uint64 recorded;
	pg_atomic_uint64 announced;
	pg_atomic_uint64 coalesced;
	pg_atomic_uint64 fallbacks;
	pg_atomic_uint64 dropped;
	/*
	 * Durable records the worker keeps on disk only, because the queue had
	 * no room for them (or they are larger than the queue), and whose
	 * transactions were still prepared when it last looked: a backend's
	 * commit wakes the worker for them, and a2_notify_wait() counts them.
	 */
	int			ndisk;
	bool		disk_overflow;	/* more than A2_DISK_MAX of them */
	FullTransactionId disk[A2_DISK_MAX];
	/* the arrays below follow, laid out by shmem_size() */
} A2NotifierShared;

static A2NotifierShared *shared = NULL;

/* the queue's arrays, in shared memory after the header */
static A2NotifySlot *qslots;	/* [size] */
static int *used;				/* [nused] slot numbers in use */
static int *usedpos;			/* [size] a slot's position in used, or -1 */
static int *freestack;			/* [nfree] free slot numbers */
static char *names;				/* [size][A2_NAME_STRIDE] session ids */
static int	queue_size = A2_QUEUE_DEFAULT;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
shmem_size(int n)
{
	Size		sz = MAXALIGN(sizeof(A2NotifierShared));

	sz = add_size(sz, MAXALIGN(mul_size(n, sizeof(A2NotifySlot))));
	sz = add_size(sz, MAXALIGN(mul_size(n, sizeof(int))) * 3);
	sz = add_size(sz, mul_size(n, A2_NAME_STRIDE));
	return sz;
}

static void
notifier_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shmem_size(queue_size));
	RequestNamedLWLockTranche("a2_notifier", 1);
}

static void
notifier_shmem_startup(void)
{
	bool		found;
	char	   *p;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("a2 notifier", shmem_size(queue_size), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(A2NotifierShared));
		shared->lock = &(GetNamedLWLockTranche("a2_notifier"))->lock;
		shared->size = queue_size;
		/* a fresh queue: whatever is on disk is not in it */
		pg_atomic_init_u32(&shared->load_requested, 1);
		pg_atomic_init_u64(&shared->recorded, 0);
		pg_atomic_init_u64(&shared->announced, 0);
		pg_atomic_init_u64(&shared->coalesced, 0);
		pg_atomic_init_u64(&shared->fallbacks, 0);
		pg_atomic_init_u64(&shared->dropped, 0);
	}
	/* every process computes the same addresses from the one base */
	p = (char *) shared + MAXALIGN(sizeof(A2NotifierShared));
	qslots = (A2NotifySlot *) p;
	p += MAXALIGN(mul_size(queue_size, sizeof(A2NotifySlot)));
	used = (int *) p;
	p += MAXALIGN(mul_size(queue_size, sizeof(int)));
	usedpos = (int *) p;
	p += MAXALIGN(mul_size(queue_size, sizeof(int)));
	freestack = (int *) p;
	p += MAXALIGN(mul_size(queue_size, sizeof(int)));
	names = p;
	if (!found)
	{
		for (i = 0; i < queue_size; i++)
		{
			qslots[i].state = A2_SLOT_FREE;
			usedpos[i] = -1;
			/* pop order 0, 1, 2, ...: the stack's top is its end */
			freestack[i] = queue_size - 1 - i;
		}
		shared->nfree = queue_size;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * A bad a2.notify_queue_size in postgresql.conf (or -c, or ALTER SYSTEM)
 * must stop the server, as a bad core setting does.  A setting defined by
 * a library is first a placeholder holding the text; PostgreSQL would
 * report a value that fails to convert as a WARNING and use the default,
 * so check the text ourselves before defining the setting.  (This runs in
 * the postmaster while it loads shared_preload_libraries, where an ERROR
 * ends start-up.)
 */
static void
check_queue_size_text(void)
{
	const char *text = GetConfigOption("a2.notify_queue_size", true, false);
	const char *hint = NULL;
	int			value;

	if (text == NULL)
		return;
	if (!parse_int(text, &value, 0, &hint) || value < 1 || value > A2_QUEUE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\": \"%s\"",
						"a2.notify_queue_size", text),
				 errdetail("a2.notify_queue_size is a number of queue slots from 1 to %d.",
						   A2_QUEUE_MAX),
				 errhint("Correct or remove the setting (the default is %d) and start the server again.",
						 A2_QUEUE_DEFAULT)));
}

void
a2_notifier_init(void)
{
	BackgroundWorker worker;

	/*
	 * Without preloading there is no queue, and a PGC_POSTMASTER setting
	 * cannot be defined after start-up at all.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	check_queue_size_text();
	DefineCustomIntVariable("a2.notify_queue_size",
							"Announcements the notifier's shared queue holds.",
							"Each slot takes about 1 kB of shared memory. When "
							"the queue is full, a committing transaction sends its "
							"NOTIFY itself, as without the notifier. A value that is "
							"not a number from 1 to 1048576 stops the server from starting.",
							&queue_size,
							A2_QUEUE_DEFAULT, 1, A2_QUEUE_MAX,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = notifier_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = notifier_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "a2");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "a2_notifier_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "a2 notifier");
	snprintf(worker.bgw_type, BGW_MAXLEN, "a2 notifier");
	RegisterBackgroundWorker(&worker);
}

bool
a2_notifier_available(void)
{
	return shared != NULL;
}

/* Take n free slots for fxid's entries.  Caller holds the lock and checked room. */
static void
put_entries(Oid dboid, FullTransactionId fxid, const A2Announcement *items,
			int n, bool durable)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		int			s = freestack[--shared->nfree];
		A2NotifySlot *slot = &qslots[s];
		size_t		len = strlen(items[i].session_id);

		Assert(len <= A2_MAX_NAME_BYTES);
		slot->dboid = dboid;
		slot->fxid = fxid;
		slot->durable = durable;
		slot->max_index = items[i].max_index;
		slot->len = (uint16) len;
		memcpy(names + (Size) s * A2_NAME_STRIDE, items[i].session_id, len);
		usedpos[s] = shared->nused;
		used[shared->nused++] = s;
		slot->state = A2_SLOT_READY;
	}
}

bool
a2_notifier_record(FullTransactionId fxid, const A2Announcement *items, int n,
				   bool durable)
{
	if (shared == NULL || n <= 0 || !FullTransactionIdIsValid(fxid))
		return false;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (shared->nfree < n)
	{
		LWLockRelease(shared->lock);
		return false;
	}
	put_entries(MyDatabaseId, fxid, items, n, durable);
	LWLockRelease(shared->lock);
	pg_atomic_fetch_add_u64(&shared->recorded, n);
	return true;
}

void
a2_notifier_request_load(bool wake)
{
	Latch	   *latch;

	if (shared == NULL)
		return;
	pg_atomic_write_u32(&shared->load_requested, 1);
	pg_memory_barrier();
	latch = shared->worker_latch;
	if (wake && latch != NULL)
		SetLatch(latch);
}

void
a2_notifier_count_fallback(void)
{
	if (shared != NULL)
		pg_atomic_fetch_add_u64(&shared->fallbacks, 1);
}

void
a2_notifier_wake(void)
{
	Latch	   *latch;

	if (shared == NULL ||
		(shared->nused == 0 && shared->ndisk == 0 && !shared->disk_overflow &&
		 pg_atomic_read_u32(&shared->load_requested) == 0))
		return;
	/*
	 * An unlocked read: a stale pointer only sets some other latch.  The
	 * worker's own transactions end here too; waking itself would make it
	 * spin while entries wait for prepared transactions.
	 */
	latch = shared->worker_latch;
	if (latch != NULL && latch != MyLatch)
		SetLatch(latch);
}

/* ---- the worker's side ---------------------------------------------- */

static void
detach_worker(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->worker_latch = NULL;
	shared->worker_pid = 0;
	LWLockRelease(shared->lock);
}

/* Put every SENDING slot back to READY.  Caller holds the lock. */
static void
unsend_locked(void)
{
	int			i;

	for (i = 0; i < shared->nused; i++)
	{
		A2NotifySlot *slot = &qslots[used[i]];

		if (slot->state == A2_SLOT_SENDING)
			slot->state = A2_SLOT_READY;
	}
}

/*
 * Become the queue's worker.  Slots a previous worker was sending when it
 * died go back to READY: they are announced again rather than lost (a
 * listener may then hear one twice).
 */
void
a2_notifier_attach_worker(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a2 notifier started without its shared memory"),
				 errhint("Add a2 to shared_preload_libraries.")));
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	unsend_locked();
	shared->worker_latch = MyLatch;
	shared->worker_pid = MyProcPid;
	LWLockRelease(shared->lock);
	before_shmem_exit(detach_worker, (Datum) 0);
}

/* After an error in a pass: what was being sent is owed again. */
void
a2_notifier_unsend(void)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	unsend_locked();
	LWLockRelease(shared->lock);
}

/*
 * True (once) when durable records may be missing from the queue.  The
 * flag is cleared before the worker reads the directory, so a record
 * written after the read sets it again.
 */
bool
a2_notifier_take_load_request(void)
{
	return pg_atomic_exchange_u32(&shared->load_requested, 0) != 0;
}

/* Does the queue hold a durable entry of fxid?  Caller holds the lock. */
static bool
has_durable(FullTransactionId fxid)
{
	int			i;

	for (i = 0; i < shared->nused; i++)
	{
		A2NotifySlot *slot = &qslots[used[i]];

		if (slot->durable && FullTransactionIdEquals(slot->fxid, fxid))
			return true;
	}
	return false;
}

/* Put a durable record's entries back into the queue, all or none. */
A2Restore
a2_notifier_restore(Oid dboid, FullTransactionId fxid,
					const A2Announcement *items, int n)
{
	A2Restore	result = A2_RESTORED;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (has_durable(fxid))
		result = A2_RESTORE_ALREADY;
	else if (shared->nfree < n)
		result = A2_RESTORE_NO_ROOM;
	else
		put_entries(dboid, fxid, items, n, true);
	LWLockRelease(shared->lock);
	return result;
}

/*
 * Publish the durable records kept on disk only whose transactions are
 * still prepared (the worker, after each read of the records).
 */
void
a2_notifier_set_disk(const FullTransactionId *fxids, int n)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->disk_overflow = n > A2_DISK_MAX;
	shared->ndisk = Min(n, A2_DISK_MAX);
	memcpy(shared->disk, fxids, sizeof(FullTransactionId) * shared->ndisk);
	LWLockRelease(shared->lock);
}

/* Count announcements the worker made straight from durable records. */
void
a2_notifier_count_announced(int64 announced, int64 dropped)
{
	pg_atomic_fetch_add_u64(&shared->announced, announced);
	pg_atomic_fetch_add_u64(&shared->dropped, dropped);
}

/*
 * List up to max READY slots and their xids.  The listing starts at
 * *cursor and wraps, and the cursor moves past what was listed, so more
 * than max entries waiting for prepared transactions cannot hide the
 * entries behind them.
 */
int
a2_notifier_list_ready(int *slots, FullTransactionId *fxids, int max, int *cursor)
{
	int			n = 0;
	int			i;
	int			start;

	LWLockAcquire(shared->lock, LW_SHARED);
	start = shared->nused > 0 ? *cursor % shared->nused : 0;
	for (i = 0; i < shared->nused && n < max; i++)
	{
		int			s = used[(start + i) % shared->nused];

		if (qslots[s].state != A2_SLOT_READY)
			continue;
		slots[n] = s;
		fxids[n] = qslots[s].fxid;
		n++;
	}
	*cursor = start + i;
	LWLockRelease(shared->lock);
	return n;
}

/*
 * Free slot s.  When it was the last durable entry of its transaction,
 * add the transaction to done[] (its record can go).  Caller holds the
 * lock.
 */
static void
free_slot(int s, FullTransactionId *done, int *ndone)
{
	int			pos = usedpos[s];
	int			last = used[shared->nused - 1];
	A2NotifySlot *slot = &qslots[s];

	/* keep used[] dense: the last entry takes the freed one's place */
	used[pos] = last;
	usedpos[last] = pos;
	shared->nused--;
	usedpos[s] = -1;
	slot->state = A2_SLOT_FREE;
	freestack[shared->nfree++] = s;
	if (slot->durable && !has_durable(slot->fxid))
		done[(*ndone)++] = slot->fxid;
	slot->durable = false;
}

int
a2_notifier_take(const int *slots, const uint8 *fates, int n,
				 A2Taken *out, char *namebuf, FullTransactionId *done, int *ndone)
{
	int			ntaken = 0;
	int64		dropped = 0;
	int			i;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < n; i++)
	{
		int			s = slots[i];
		A2NotifySlot *slot = &qslots[s];

		if (fates[i] == A2_XID_ABORTED || fates[i] == A2_XID_FUTURE)
		{
			free_slot(s, done, ndone);
			dropped++;
		}
		else if (fates[i] == A2_XID_COMMITTED || fates[i] == A2_XID_FORGOTTEN)
		{
			A2Taken    *t = &out[ntaken];

			t->slot = s;
			t->dboid = slot->dboid;
			t->max_index = slot->max_index;
			t->fxid = slot->fxid;
			t->durable = slot->durable;
			t->session_id = namebuf + (Size) ntaken * A2_NAME_STRIDE;
			memcpy(t->session_id, names + (Size) s * A2_NAME_STRIDE, slot->len);
			t->session_id[slot->len] = '\0';
			slot->state = A2_SLOT_SENDING;
			ntaken++;
		}
	}
	LWLockRelease(shared->lock);
	if (dropped > 0)
		pg_atomic_fetch_add_u64(&shared->dropped, dropped);
	return ntaken;
}

void
a2_notifier_release(const A2Taken *taken, int n, int64 announced, int64 coalesced,
					FullTransactionId *done, int *ndone)
{
	int			i;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < n; i++)
		free_slot(taken[i].slot, done, ndone);
	LWLockRelease(shared->lock);
	pg_atomic_fetch_add_u64(&shared->announced, announced);
	pg_atomic_fetch_add_u64(&shared->coalesced, coalesced);
}

/* ---- SQL functions ------------------------------------------------- */

/*
 * The queue's depth, and how many of its entries wait for a transaction
 * that is still running (or prepared); with_disk: the durable records the
 * queue had no room for count as one entry each (a2_notify_wait owes them
 * too; a2_notify_status() shows the queue alone).  Every other entry is owed by the
 * worker: taken and being sent, or recorded by a transaction that has
 * finished (committed ones it will send, aborted ones it will drop).
 */
static int
count_waiting(int *depth, bool with_disk)
{
	/* a fresh snapshot, judged as the worker judges (notifier_xid.c) */
	Snapshot	snap = GetLatestSnapshot();
	FullTransactionId next = ReadNextFullTransactionId();
	int			waiting = 0;
	int			i;

	LWLockAcquire(shared->lock, LW_SHARED);
	*depth = shared->nused;
	for (i = 0; i < shared->nused; i++)
	{
		A2NotifySlot *slot = &qslots[used[i]];

		if (slot->state == A2_SLOT_READY && a2_xid_running(slot->fxid, snap, next))
			waiting++;
	}
	/* records kept on disk count as entries; too many to list are owed */
	if (with_disk)
		*depth += shared->ndisk + (shared->disk_overflow ? 1 : 0);
	for (i = 0; with_disk && i < shared->ndisk; i++)
	{
		if (a2_xid_running(shared->disk[i], snap, next))
			waiting++;
	}
	LWLockRelease(shared->lock);
	return waiting;
}

PG_FUNCTION_INFO_V1(a2_notify_wait);

/*
 * a2_notify_wait(timeout_ms): wait until the notifier has sent everything
 * that transactions finished so far are owed, so that a listener's next
 * round trip receives it.  True when done, false after timeout_ms.
 * Without the notifier announcements are sent at commit: true at once.
 */
Datum
a2_notify_wait(PG_FUNCTION_ARGS)
{
	int64		timeout_ms;
	TimestampTz deadline;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("timeout_ms must not be null")));
	timeout_ms = PG_GETARG_INT64(0);
	if (timeout_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout_ms must be >= 0, not " INT64_FORMAT, timeout_ms)));
	if (shared == NULL)
		PG_RETURN_BOOL(true);

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), Min(timeout_ms, INT64CONST(86400000) * 365));
	for (;;)
	{
		int			depth;

		/* records on disk not yet read back are owed too */
		if (count_waiting(&depth, true) == depth &&
			pg_atomic_read_u32(&shared->load_requested) == 0)
			PG_RETURN_BOOL(true);
		if (GetCurrentTimestamp() >= deadline)
			PG_RETURN_BOOL(false);
		a2_notifier_wake();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Columns 2-10 of a2_notify_status() (notify.c): the worker's pid, the
 * queue's size and depth, how many queued entries wait for a transaction
 * that is still running (a prepared one, typically), and the counters since
 * the server started; all NULL without the shared queue.
 */
void
a2_notifier_status_columns(Datum *values, bool *nulls)
{
	int			depth;
	int			waiting;
	pid_t		pid;

	if (shared == NULL)
	{
		for (int i = 0; i < A2_NOTIFIER_STATUS_COLUMNS; i++)
			nulls[i] = true;
		return;
	}
	waiting = count_waiting(&depth, false);
	pid = shared->worker_pid;
	if (pid != 0)
		values[0] = Int32GetDatum(pid);
	else
		nulls[0] = true;
	values[1] = Int32GetDatum(shared->size);
	values[2] = Int32GetDatum(depth);
	values[3] = Int32GetDatum(waiting);
	values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->recorded));
	values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->announced));
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->coalesced));
	values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->fallbacks));
	values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->dropped));
}
