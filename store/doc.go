// Package store is the message store of the broker: an append-only commitlog
// of Java-compatible records, per-queue consume queues built from it by a
// dispatcher (a goroutine, and puts that dispatch their own records),
// commitlog and queue flushing, a checkpoint, and crash recovery. Of this module it imports only package message.
//
// # Directory layout (Options.Dir, Java storePathRootDir)
//
//	commitlog/<20-digit start offset>                    MappedFileSizeCommitLog bytes each
//	consumequeue/<topic>/<queueId>/<20-digit start byte>  MappedFileSizeConsumeQueue bytes each
//	checkpoint                                           durable progress (below)
//	confirm                                              the confirm offset gate, once one was set (confirm.go)
//	truncate                                             a commitlog cut in progress (truncate.go)
//	abort                                                present while open; left behind by a crash
//	lock                                                 flock'ed by the owning process
//	config/                                              broker JSON files (WriteFileAtomic)
//
// Segment files are created at full size and mapped shared, so bytes copied in
// are in the page cache immediately and survive the death of the process; an
// fsync (msync) makes them survive the machine. Commitlog files are
// preallocated (fallocate), so a full disk shows up as ErrDiskFull when a file
// is created; consume-queue files stay sparse, and a write that faults on a
// full disk is turned into ErrDiskFull instead of killing the process.
//
// # Commitlog record
//
// The commitlog holds message records, byte for byte the format of pull
// bodies; their layout, the properties text and the message ids are
// documented, encoded and decoded in package message. The store writes v1
// records with IPv4 hosts (a topic longer than 127 bytes gets a v2 record),
// sets PHYSICALOFFSET to the record's own commitlog offset, QUEUEOFFSET
// under the put lock (0 for prepared and rollback records), STORETIMESTAMP
// from the clock under that lock and STOREHOST from Options.StoreHost (or
// SetStoreHost).
//
// A record never spans files. When a record (or a whole batch) plus 8 bytes
// does not fit in the rest of the file, the rest becomes a BLANK record and
// the record goes to the next file:
//
//	+--------------------------+---------------------------+
//	| TOTALSIZE = bytes left   | MAGICCODE 0xCBD43194      |  rest of the file unused
//	+--------------------------+---------------------------+
//
// # Consume-queue unit (20 bytes; unit i at byte i*20 of the queue)
//
//	+-----------------------+---------------+-----------------------+
//	| commitlog offset int64| size    int32 | tagsCode        int64 |
//	+-----------------------+---------------+-----------------------+
//
// tagsCode is message.TagsHash(TAGS) unless Options.TagsCode says otherwise. Units
// {0, 2147483647, 0} are fillers before the first unit of a queue whose first
// file does not start at its first message; readers skip them.
//
// # Checkpoint file (1024 bytes: two 512-byte slots, written alternately)
//
//	 0 +---------------------------+
//	   | magic "RMQCKPT1"   uint64 |
//	 8 | sequence           uint64 |  slot = sequence % 2; the higher valid one wins
//	16 | physicOffset       int64  |  commitlog bytes below are fsynced
//	24 | logicsOffset       int64  |  records below have fsynced consume-queue units
//	32 | writtenAtMs        int64  |  informational
//	40 | CRC-32 IEEE of 0..39 uint32|
//	   +---------------------------+
//
// # Writing, dispatch and flush
//
// Puts take one mutex, assign queue offsets from an in-memory table (rebuilt
// from the consume queues at Open, and moved on by replicated records as by
// puts: replica.go's followReplicated), take the store timestamp, copy the record
// into the mapping (under SYNC_FLUSH: pwrite it; readers still read the
// mapping, the page cache being one) and publish the new end. The dispatch
// goroutine, woken by every put, parses the new records, writes their
// consume-queue units and calls Options.OnDispatch. ASYNC_FLUSH fsyncs the
// commitlog every FlushInterval; SYNC_FLUSH puts wake a group-commit goroutine
// whose single sync acknowledges every put waiting at that moment (under load,
// syncs that each covered at least 16 KiB start at least 1 ms apart, so each
// serves more puts). Records looked up by offset behind the window kept
// mapped are read with pread. Every FlushConsumeQueueInterval the consume
// queues with at least two pages to sync (or a new or full file) are fsynced,
// every queue at least once a minute, as Java's FlushConsumeQueueService does;
// then the checkpoint is rewritten, its dispatch position lowered to the
// first unit left unsynced, from which recovery dispatches again.
// A consume-queue file is created by a creator goroutine, without any
// fsync, while the dispatcher goes on with the records of other queues; the
// records of the queue wait for it (dispatch_defer.go), and the dispatch
// position stays at the oldest of them. So a new topic's messages never wait
// for a journal commit, and no queue waits for another's new file. The flush
// fsyncs each
// file created since the last one whole, then its directory (and, for a new
// queue, the topic and consumequeue directories), each once, before the
// checkpoint may count a unit in it (consumeQueue.flush, flushQueues).
//
// # Segment roll: files are created ahead, never by a put
//
// Creating a commitlog file (truncate to full size, fallocate, fsync the file
// and the directory) takes milliseconds, and a put runs under the put lock,
// for a send served inline on a remoting event loop. So the allocator
// goroutine creates each file before a put needs it, in this order:
//
//  1. when a file becomes the newest (Open, or a roll listing it), the file
//     after it is asked for;
//  2. the allocator creates it under its final name: create, truncate,
//     fallocate, fsync the file, fsync the directory, map it, then, once
//     the writer comes within the warm-up's reach of it (or waits for it),
//     zero and fdatasync its first bytes as the warm-up would; the put lock
//     is not held;
//  3. a put that reaches the end of the current file writes the BLANK record
//     and lists the ready file (no I/O), which asks for the next one (1);
//  4. a put that finds the next file not ready yet, or the range it would
//     write being zeroed by the warm-up, changes nothing and releases the put
//     lock: PutMessageInline returns ErrWouldBlock (the broker then serves
//     the send on its worker pool), PutMessage waits for the allocator or the
//     warm-up chunk and tries again.
//
// A crash between any two steps leaves at most one file past the newest one
// in use, empty, short or all zeros: loading accepts it (and a cut tail just
// before it), and recovery removes it because it starts past the commitlog
// end; the allocator then creates it again.
//
// # Full disk and retention
//
// A put is refused with ErrDiskFull while the last disk check (statfs
// behind the DiskUsage interface, every second and after every quarter of
// the reserve written) found the file system over
// DiskSpaceWarningLevelRatio or with less free space than
// Retention.DiskReserve, and while the dispatcher is stalled: a record
// whose consume-queue unit or index keys cannot be written for want of
// space is not skipped; reput stays at it, it is retried every 200 ms and
// after every cleanup that freed space, and recovery dispatches it (never a
// padded gap) and keeps its queue offset. The reserve is what keeps that
// stall rare: records accepted while it held find blocks for their units.
// Refusals lift by themselves once space is back, with no restart. The
// same stall, with puts refused by ErrNotWritable, follows an I/O error on
// a consume-queue or index file (one that could not be created): its
// message was acknowledged, so it is retried, never skipped.
//
// # I/O faults
//
// Every data-file operation goes through the FS seam of vfs.go, the FS of
// Options.FS, which tests set to an ErrorFS (NewErrorFS). A segment creation that fails at
// any step is redone whole by the retry (createMappedFile), even though the
// file now exists. A failed msync may have left its pages clean without
// writing them (Linux reports a writeback error once), so the next sync of
// that file writes the failed range again before syncing it: a flushed
// offset never passes bytes whose flush failed (mappedFile.sync).
//
// cleanup.go deletes expired commitlog files as Java's
// CleanCommitLogService does (fileReservedTime, deleteWhen,
// diskMaxUsedSpaceRatio, diskSpaceCleanForciblyRatio, at most 10 files a
// round, oldest first, never the newest), never a file not yet flushed or
// dispatched or holding Retention.ProtectedOffset (under disk pressure
// Retention.Evacuate re-stores what pins it first); then consume-queue and
// index files wholly below the new minimum, and each queue's minimum offset
// moves to its first unit still in the commitlog. Files leave the lists
// under their locks and are unmapped, truncated in steps and unlinked on
// the cleanup goroutine, never under the put lock.
//
// NoPreallocate leaves commitlog files sparse (a small test store); the
// warm-up still zero-fills ahead of the writer, so such a store uses about
// two segments' worth of disk plus what was written.
//
// # Replication
//
// A master's HA service (package store/ha) reads raw commitlog bytes with
// ReadCommitLog, never across a file; a slave writes them at the same
// offsets with AppendReplicated, which keeps the bytes of a record not
// complete yet in memory and writes and publishes whole records only, so
// the dispatcher, the flushers and recovery treat replicated records as
// their own. It copies them into the mapping one by one, each header last
// (memmove stores a long range's ends after its middle), so a kill leaves
// the records before the one being copied whole and that one whole or
// without a header, which recovery clears as a torn tail: it never
// recovers past a replicated record that was not written (replica.go).
//
// In controller mode (5.3.3) a slave is cut back to where it agrees with
// a new master with TruncateTo, which announces the cut in the truncate
// marker first and is completed by Open after a crash (truncate.go), and
// what consumers see is bounded by the confirm offset (SetConfirmOffset):
// the dispatcher stops before a record ending past it (confirm.go).
//
// # Clock
//
// Options.Clock (internal/clock) gives the store timestamps, the checkpoint
// and index times, the age of commitlog files and the deleteWhen hour, the ASYNC_FLUSH and consume-queue flush periods, and the
// SYNC_FLUSH timeouts (waitFlushed, OnFlushed); tests drive them with a
// manual clock. The group-commit pacing, the disk-check and cleanup periods,
// the pauses between deleted files and the stalled dispatcher's retry read
// the wall clock: they pace work, no one waits for them.
//
// # Recovery
//
// Open creates the abort marker; Close flushes everything, writes the
// checkpoint and removes it. If the marker is absent at Open and the checkpoint
// is valid, the checkpoint's physicOffset is the commitlog end and records
// after logicsOffset are re-dispatched. Otherwise every record from
// min(physicOffset, logicsOffset) (or the first file) is verified — magic,
// sizes, PHYSICALOFFSET equal to its position, body CRC — and re-dispatched.
// A damaged span followed by valid records is skipped (counted and logged; the
// scanner resynchronises on the next position that verifies, and a file whose
// damage runs to its end gets a BLANK there); bytes after the last valid record
// are zeroed and later files deleted. Only data regions are read (SEEK_DATA),
// so the preallocated, never-written tail of a segment costs nothing. Finally
// consume-queue units pointing at or past the commitlog end are dropped, and
// queue offsets are taken from the queues.
package store
