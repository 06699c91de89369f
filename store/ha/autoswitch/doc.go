// Package autoswitch holds the two foundations of 5.3.3 controller-mode
// replication (AutoSwitchHAService, store/ha/autoswitch in
// rocketmq-all-5.3.3) as library code, byte-compatible with the Java
// broker so that rmq and Java 5.3.3 brokers can be members of one group.
// Nothing here is wired into the broker yet; store/ha keeps the classic
// master/slave protocol of 4.x and non-controller 5.x.
//
// # What is built
//
// The epoch file (epochfile.go). EpochFile is EpochFileCache with its
// CheckpointFile: the table of (epoch, startOffset) entries, one per
// master term, kept in <storePathRootDir>/epochFileCheckpoint as the
// count, CRC32 & 0x7FFFFFFF of the entry text, then "epoch-startOffset"
// lines, with the previous content in .bak and the reader falling back to
// it. FormatEpochFile writes the bytes Java writes (the test compares with
// a file written by the 5.3.3 jar); ParseEpochFile reads what Java reads,
// within a size and line limit. Every change is durable before it shows in
// memory (store.WriteFileAtomic, through the store's FS seam). The table
// operations are the stock ones: Append with its ordering checks,
// LastEntry, Entry, FindEpochByOffset, NextEntry, SetLastEndOffset, the
// suffix and prefix truncations and FindConsistentPoint.
//
// The HA frames (frame.go). The slave sends a 16 B handshake (state
// HANDSHAKE, isSyncFromLastFile, isAsyncLearner, broker id) and 12 B
// reports (state TRANSFER, max offset); the master answers the handshake
// with its epoch table (20 B header and 12 B per entry, at most 1000) and
// then sends transfer chunks (36 B header with offset, epoch, epoch start
// and confirm offset, then commitlog bytes). Append* encode them;
// SlaveDecoder (the master's reader) and MasterDecoder (the slave's)
// decode a stream incrementally with bounded buffers and refuse, with
// ErrFrame, an unknown state, a negative or oversize body and an epoch
// body that is not whole entries or more than 1000: the caller closes
// the connection. State holds the HAConnectionState ordinals.
//
// The slave's truncation decision (truncate.go). PlanTruncate is
// AutoSwitchHAClient.doTruncate as a pure function: an empty local table
// keeps everything; otherwise the cut is the consistent point of the two
// tables, each bounded by its side's max offset, and no common point is
// ErrNoConsistentPoint (the handshake fails and the slave retries).
//
// The master's transfer steps (transfer.go). TransferStart picks where a
// slave's stream starts from its first report; a TransferCursor cuts the
// commitlog into chunks that never cross an epoch boundary and builds each
// chunk's header (and heartbeats), as AutoSwitchHAConnection's
// WriteSocketService does, including its habit of naming the next epoch
// in the chunk that closes the current one.
//
// Checked against Java: testdata/java-5.3.3 holds epoch files written by
// the 5.3.3 jar and by a live 5.3.3 master, and the small Java programs
// that cross-checked parsing, consistent points and frame sizes; and
// integration/java/autoswitch-java-master.sh runs TestJavaMaster, which
// replicates a live Java 5.3.3 master's commitlog with these frames.
//
// # What the broker wiring will need
//
//   - Controller registration (codes 1001-1013) to learn the broker id,
//     the role, the master epoch and the sync state set, and the master's
//     HA address from the name server register result.
//   - changeToMaster(epoch): refuse an epoch below LastEpoch, drop the HA
//     connections, truncate undispatched commitlog data, then
//     Append(epoch, commitlog max offset) before accepting writes
//     (AutoSwitchHAService.java:115-162). changeToSlave: stop serving
//     writes and connect to the new master's HA address.
//   - On the master, per connection: read SlaveDecoder frames; answer the
//     handshake with AppendMasterHandshake(Entries(), max offset,
//     LastEpoch()); on the first report pick the start (0 means the
//     commitlog's min offset, or the last file with isSyncFromLastFile);
//     send chunks that never cross an epoch boundary (FindEpochByOffset,
//     NextEntry), with the epoch and epoch start of the chunk's offset and
//     a real confirm offset: a Java slave builds its consume queues only up
//     to the confirm offset it is sent.
//   - The confirm offset: the minimum ack over the sync state set when
//     allAckInSyncStateSet and the set has more than one member, else the
//     max offset (CommitLog.getConfirmOffset, AutoSwitchHAService
//     computeConfirmOffset); the slave keeps min(sent, its max).
//   - Sync state set: expand when a slave's ack reaches the confirm offset
//     and the current epoch's start, shrink when it lags
//     haMaxTimeSlaveNotCatchup or disconnects, both reported to the
//     controller with code 1001; refuse sends below minInSyncReplicas with
//     IN_SYNC_REPLICAS_NOT_ENOUGH.
//   - On the slave: send the handshake, run PlanTruncate on the master's
//     table, truncate the commitlog and TruncateSuffixByOffset to the
//     plan's offset, enter TRANSFER; on each chunk check the offset equals
//     its max offset, Append(epoch, epochStart) when the epoch changes
//     (ErrEpochOrder for an entry it already holds is expected and ignored,
//     as stock ignores appendEntry's false),
//     append the body, take the confirm offset and report its new max.
//     A frame whose state differs from the slave's closes the connection.
//   - Commitlog cleanup: TruncatePrefixByOffset(min offset) when old files
//     are deleted.
package autoswitch
