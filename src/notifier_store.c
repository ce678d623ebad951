/*-------------------------------------------------------------------------
 *
 * notifier_store.c
 *	  Durable records of announcements, under $PGDATA/a2_notifier/.
 *
 *	  The notifier's queue lives in shared memory and is empty after every
 *	  start.  That loses nothing for plain transactions: whatever committed
 *	  before a restart was owed to listeners whose connections the restart
 *	  closed, and a listener catches up by reading when it reconnects.  A
 *	  prepared transaction is different: it survives a clean restart and a
 *	  crash, and its COMMIT PREPARED afterwards owes an announcement to the
 *	  listeners of then.  So at PREPARE (XACT_EVENT_PRE_PREPARE) its entries
 *	  are also written here, and the worker reads them back into the queue
 *	  after a start.
 *
 *	  What is durable: one file per transaction, named by its 64-bit full
 *	  xid (8 hex digits of epoch, 8 of xid, ".prep"), holding a header
 *	  (magic, format version, record kind, full xid, database, item count),
 *	  the items (greatest index, a due time, the session id) and a CRC-32C.
 *	  It is written to a temporary name, fsynced, and renamed into place
 *	  with the directory fsynced, after the WAL that carries the xid is
 *	  flushed: so a record never names an xid that
 *	  recovery could hand out again.  It is removed when its entries were
 *	  announced (after the NOTIFY committed) or dropped (the transaction
 *	  aborted); the removal is not fsynced, since a record that reappears
 *	  after a crash is judged again and at worst announced twice.
 *
 *	  What a restart rebuilds: the queue.  The first worker after shared
 *	  memory was (re)initialised reads every record back into it; a record
 *	  whose transaction is still prepared waits as before, one that was
 *	  committed or rolled back meanwhile (say while a2 was not preloaded)
 *	  is announced or dropped, and one whose clog is gone is announced.  A
 *	  record that does not fit in the queue stays on disk and is read again
 *	  when there is room; meanwhile the worker judges it straight from its
 *	  file on every pass (so one larger than the whole queue is announced
 *	  too).  A record that cannot be read (permissions, a read error, larger
 *	  than 64 MB) or is not valid is renamed to ".bad" with a WARNING, and
 *	  the scan goes on with the others.
 *
 *	  What is not covered: the records are files, not WAL.  A standby
 *	  promoted after a failover has the records its base backup copied,
 *	  not the ones the old primary wrote since; a prepared transaction
 *	  without a record is decided without an announcement there, and
 *	  listeners, reconnecting to the new primary anyway, catch up by
 *	  reading.
 *
 *	  What it costs: nothing per append or per plain commit.  Per PREPARE of
 *	  a transaction that appended: one WAL flush of its own (PREPARE then
 *	  flushes its prepare record as before), one small file written and two
 *	  fsyncs (file and directory) -- four syncs where a plain PREPARE has
 *	  one; per announced prepared transaction one unlink.
 *
 *	  Room to grow: each item has a due time (0 = when the transaction
 *	  commits) and the header a record kind, so a later version can keep
 *	  other announcements here -- written at pre-commit, judged by the same
 *	  rule, removed once made.  Due announcements (docs/semantics.md, "Scheduling") took the other
 *	  way a restart can recover them: scheduler.c rebuilds them from
 *	  a2_events.not_before, at no cost per commit.  Readers refuse versions
 *	  and kinds they do not know (".bad"), so an older a2 never misreads a
 *	  newer record.
 *
 * IDENTIFICATION
 *	  src/notifier_store.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "a2.h"
#include "notifier_store.h"
#include "notifier_xid.h"

#define A2_STORE_MAGIC		0x524E3241	/* "A2NR" */
#define A2_STORE_VERSION	1
/* record kinds */
#define A2_RECORD_PREPARED	1	/* a prepared transaction's announcements */
/* a record larger than this is corrupt (a transaction's sessions, with ids) */
#define A2_STORE_MAX_BYTES	((off_t) 67108864)	/* 64 MB */

typedef struct A2StoreHeader
{
	uint32		magic;
	uint16		version;
	uint16		kind;
	uint64		fxid;
	Oid			dboid;
	uint32		nitems;
} A2StoreHeader;

/* each item: int64 max_index, int64 due_at (0), uint16 len, the id's bytes */
#define A2_ITEM_FIXED	(sizeof(int64) * 2 + sizeof(uint16))

static void
record_path(char *path, size_t size, FullTransactionId fxid, const char *suffix)
{
	snprintf(path, size, "%s/%08X%08X%s", A2_STORE_DIR,
			 EpochFromFullTransactionId(fxid), XidFromFullTransactionId(fxid),
			 suffix);
}

static void
ensure_dir(void)
{
	struct stat st;

	if (stat(A2_STORE_DIR, &st) == 0)
		return;
	if (errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat directory \"%s\": %m", A2_STORE_DIR)));
	if (MakePGDirectory(A2_STORE_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", A2_STORE_DIR)));
	/* the new directory's entry in the data directory, durably */
	(void) fsync_fname_ext(".", true, false, ERROR);
}

void
a2_store_write_prepared(FullTransactionId fxid, Oid dboid,
						const A2Announcement *items, int n)
{
	StringInfoData buf;
	A2StoreHeader hdr;
	pg_crc32c	crc;
	char		tmp[MAXPGPATH];
	char		path[MAXPGPATH];
	int			fd;
	int			i;

	/*
	 * The xid must be durable in WAL before a record names it: otherwise a
	 * crash could make recovery hand the xid to another transaction, whose
	 * commit would then announce our sessions.  The transaction wrote its
	 * events, so its last record carries the xid.
	 */
	if (XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = A2_STORE_MAGIC;
	hdr.version = A2_STORE_VERSION;
	hdr.kind = A2_RECORD_PREPARED;
	hdr.fxid = U64FromFullTransactionId(fxid);
	hdr.dboid = dboid;
	hdr.nitems = (uint32) n;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (char *) &hdr, sizeof(hdr));
	for (i = 0; i < n; i++)
	{
		int64		due_at = 0;
		uint16		len = (uint16) strlen(items[i].session_id);

		appendBinaryStringInfo(&buf, (char *) &items[i].max_index, sizeof(int64));
		appendBinaryStringInfo(&buf, (char *) &due_at, sizeof(int64));
		appendBinaryStringInfo(&buf, (char *) &len, sizeof(uint16));
		appendBinaryStringInfo(&buf, items[i].session_id, len);
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf.data, buf.len);
	FIN_CRC32C(crc);
	appendBinaryStringInfo(&buf, (char *) &crc, sizeof(crc));

	ensure_dir();
	record_path(tmp, sizeof(tmp), fxid, ".tmp");
	record_path(path, sizeof(path), fxid, ".prep");
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, buf.data, buf.len) != buf.len)
	{
		/* no errno from a short write: assume the disk is full */
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));

	/*
	 * Into place, and the directory entry made durable.  Two fsyncs, one
	 * fewer than durable_rename: the file is complete and synced before it
	 * gets its name.  A failed fsync fails the PREPARE; its record is then
	 * one of an aborted transaction, dropped when read.
	 */
	if (rename(tmp, path) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename file \"%s\" to \"%s\": %m", tmp, path)));
	(void) fsync_fname_ext(A2_STORE_DIR, true, false, ERROR);
	pfree(buf.data);
}

void
a2_store_remove(FullTransactionId fxid)
{
	char		path[MAXPGPATH];

	record_path(path, sizeof(path), fxid, ".prep");
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
}

/* Read a whole record file into memory; NULL (errno set) on failure. */
static char *
read_file(const char *path, Size *len)
{
	struct stat st;
	char	   *data;
	int			fd;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return NULL;
	errno = 0;
	if (fstat(fd, &st) != 0 || st.st_size > A2_STORE_MAX_BYTES)
	{
		int			save = errno ? errno : EFBIG;

		CloseTransientFile(fd);
		errno = save;
		return NULL;
	}
	data = palloc(st.st_size + 1);
	errno = 0;
	if (read(fd, data, st.st_size) != st.st_size)
	{
		int			save = errno ? errno : EIO;

		CloseTransientFile(fd);
		pfree(data);
		errno = save;
		return NULL;
	}
	CloseTransientFile(fd);
	*len = st.st_size;
	return data;
}

/*
 * Parse a record; NULL when it is not a valid one of ours.  The items
 * point into data (session ids are copied, NUL-terminated).
 */
static A2Announcement *
parse_record(char *data, Size len, FullTransactionId fxid, A2StoreHeader *hdr)
{
	A2Announcement *items;
	pg_crc32c	crc;
	pg_crc32c	stored;
	Size		off = sizeof(A2StoreHeader);
	uint32		i;

	if (len < sizeof(A2StoreHeader) + sizeof(pg_crc32c))
		return NULL;
	memcpy(hdr, data, sizeof(A2StoreHeader));
	memcpy(&stored, data + len - sizeof(pg_crc32c), sizeof(pg_crc32c));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len - sizeof(pg_crc32c));
	FIN_CRC32C(crc);
	if (!EQ_CRC32C(crc, stored) || hdr->magic != A2_STORE_MAGIC ||
		hdr->version != A2_STORE_VERSION || hdr->kind != A2_RECORD_PREPARED ||
		hdr->fxid != U64FromFullTransactionId(fxid) || hdr->nitems == 0 ||
		hdr->nitems > len / A2_ITEM_FIXED)
		return NULL;
	len -= sizeof(pg_crc32c);
	items = palloc(sizeof(A2Announcement) * hdr->nitems);
	for (i = 0; i < hdr->nitems; i++)
	{
		int64		due_at;
		uint16		idlen;
		char	   *id;

		if (len - off < A2_ITEM_FIXED)
			return NULL;
		memcpy(&items[i].max_index, data + off, sizeof(int64));
		memcpy(&due_at, data + off + sizeof(int64), sizeof(int64));
		memcpy(&idlen, data + off + sizeof(int64) * 2, sizeof(uint16));
		off += A2_ITEM_FIXED;
		if (due_at != 0 || idlen == 0 || idlen > A2_MAX_NAME_BYTES || len - off < idlen)
			return NULL;
		id = palloc(idlen + 1);
		memcpy(id, data + off, idlen);
		id[idlen] = '\0';
		if (strlen(id) != idlen)
			return NULL;
		items[i].session_id = id;
		off += idlen;
	}
	return off == len ? items : NULL;
}

/*
 * Rename a record that cannot be used to ".bad", with a WARNING saying
 * why; the scan goes on with the other records.  why is NULL for a record
 * whose contents are not valid, else the error of reading it.
 */
static void
set_aside(const char *path, const char *why)
{
	char		bad[MAXPGPATH];

	snprintf(bad, sizeof(bad), "%s.bad", path);
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 why ? errmsg("a2 notifier: could not read record \"%s\" (%s), renamed to \"%s\"", path, why, bad)
			 : errmsg("a2 notifier: record \"%s\" is not valid, renamed to \"%s\"", path, bad),
			 errdetail("Its announcements, if any, are not made; listeners catch up by reading.")));
	if (rename(path, bad) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not rename file \"%s\": %m", path)));
}

int
a2_store_scan(A2StoreCallback cb, void *arg, Snapshot snap, FullTransactionId next)
{
	DIR		   *dir;
	struct dirent *de;
	int			seen = 0;

	dir = AllocateDir(A2_STORE_DIR);
	if (dir == NULL && errno == ENOENT)
		return 0;
	while ((de = ReadDir(dir, A2_STORE_DIR)) != NULL)
	{
		uint32		epoch;
		uint32		xid;
		char		suffix[8];
		char		path[MAXPGPATH];
		FullTransactionId fxid;
		char	   *data;
		Size		len;
		A2StoreHeader hdr;
		A2Announcement *items;

		if (strlen(de->d_name) < 17 ||
			sscanf(de->d_name, "%8X%8X%7s", &epoch, &xid, suffix) != 3)
			continue;
		fxid = FullTransactionIdFromEpochAndXid(epoch, xid);
		snprintf(path, sizeof(path), "%s/%s", A2_STORE_DIR, de->d_name);
		if (strcmp(suffix, ".tmp") == 0)
		{
			/* left by a writer that failed or crashed, unless it still runs */
			if (!a2_xid_running(fxid, snap, next) && unlink(path) != 0 && errno != ENOENT)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			continue;
		}
		if (strcmp(suffix, ".prep") != 0)
			continue;
		data = read_file(path, &len);
		if (data == NULL)
		{
			if (errno == ENOENT)	/* removed since we listed it */
				continue;
			/* one unreadable file must not hide the records after it */
			set_aside(path, strerror(errno));
			continue;
		}
		items = parse_record(data, len, fxid, &hdr);
		if (items == NULL)
		{
			set_aside(path, NULL);
			continue;
		}
		seen++;
		if (!cb(fxid, hdr.dboid, items, (int) hdr.nitems, arg))
			break;
	}
	FreeDir(dir);
	return seen;
}

void
a2_store_count(int *records, int *set_aside)
{
	DIR		   *dir;
	struct dirent *de;

	*records = 0;
	*set_aside = 0;
	dir = AllocateDir(A2_STORE_DIR);
	if (dir == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(dir, A2_STORE_DIR)) != NULL)
	{
		size_t		len = strlen(de->d_name);

		if (len > 5 && strcmp(de->d_name + len - 5, ".prep") == 0)
			(*records)++;
		else if (len > 4 && strcmp(de->d_name + len - 4, ".bad") == 0)
			(*set_aside)++;
	}
	FreeDir(dir);
}
