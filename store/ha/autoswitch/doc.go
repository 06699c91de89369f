// Package autoswitch is 5.3.3 controller-mode replication
// (AutoSwitchHAService, store/ha/autoswitch in rocketmq-all-5.3.3),
// byte-compatible with the Java broker so that rmq and Java 5.3.3 brokers
// can be members of one group: the epoch file, the frames, the pure
// truncation and transfer steps, and the runtime Service over them. The
// broker wiring (controller registration, role changes, 1001/1007) is the
// broker's, not this package's; store/ha keeps the classic master/slave
// protocol of 4.x and non-controller 5.x (and the SYNC waiters both use).
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
// suffix and prefix truncations and FindConsistentPoint. One difference:
// an entry may start where the one before it starts (an empty term, kept
// for its old master's handshake; stock's append refuses the new epoch
// instead, see EpochEntry).
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
// in the chunk that closes the current one; it steps over empty terms.
//
// The runtime (service.go, masterconn.go, slave.go). Service listens on
// the HA port in every role. As master (ChangeToMaster: refuse an epoch
// below the last, drop connections and the slave client, drop pending
// replicated bytes with TruncateTo at the end, remove the store's gate and
// wait for the dispatch, drop epoch entries at or above the epoch or
// starting after the end, Append(epoch, end) durably) each
// connection has a reader (SlaveDecoder: the handshake's broker id and
// flags, the reports as acks) and a writer (the epoch table for each
// handshake, TransferStart on the first report, TransferCursor chunks with
// the confirm offset, heartbeats, housekeeping). The writer copies one
// batch out of the store, then writes: no lock is held across a socket.
// Acks move the catch-up times, may propose an expansion of the sync
// state set (ack >= confirm offset and >= the current epoch's start), and
// recompute the confirm offset (minimum ack over the set with
// allAckInSyncStateSet and more than one accepted member, else the end),
// pushed to the store's gate (-1 when off), and the SYNC release point for
// store/ha's Waiters (every member but the master with
// allAckInSyncStateSet, else inSyncReplicas counting the master, at once
// for 1; IsSlaveOK never refuses a master's send: 5.3.3 has no
// SLAVE_NOT_AVAILABLE). CheckSyncStateSet, every
// checkSyncStateSetPeriod on the injected clock, proposes out members not
// caught up for haMaxTimeSlaveNotCatchup or never seen, and a member's
// disconnect proposes it out. Proposals only go to OnSyncStateSetChange;
// the set changes when the broker calls SetSyncStateSet with what the
// controller accepted (meanwhile the union counts, as stock's
// isSynchronizingSyncStateSet). As slave (ChangeToSlave, SetMasterHAAddr)
// a client connects with backoff, sends its handshake, runs PlanTruncate
// on the master's table, TruncateTo and TruncateSuffixByOffset, reports,
// then appends chunks (a mismatched offset closes), records new epochs
// (and, for a chunk below its header's epoch start, the master's epoch
// holding it, which a stock slave misses when its first chunk closes an
// epoch), gates its store at min(confirm offset, end) and reports its end
// on change and on the heartbeat interval. A restarted slave keeps the gate
// its store reloaded.
//
// Checked against Java: testdata/java-5.3.3 holds epoch files written by
// the 5.3.3 jar and by a live 5.3.3 master, and the small Java programs
// that cross-checked parsing, consistent points and frame sizes; and
// integration/java/autoswitch-java-master.sh runs TestJavaMaster, which
// replicates a live Java 5.3.3 master's commitlog with these frames, and
// TestJavaMasterService, the Service as an rmq slave (real store) of that
// master.
//
// # What the broker wiring needs
//
//   - Controller registration (codes 1001-1013) to learn the broker id
//     (SetLocalBrokerID / ChangeToSlave's id), the role, the master epoch
//     and the sync state set (SetSyncStateSet), and the master's HA
//     address from the name server register result (SetMasterHAAddr).
//   - ChangeToMaster before accepting writes (always SYNC_MASTER in
//     controller mode: WaitReplicated for sends that wait for the store),
//     ChangeToSlave to stop serving writes.
//   - OnSyncStateSetChange: report the proposal with ALTER_SYNC_STATE_SET
//     (1001) and call SetSyncStateSet with the answer; refuse sends below
//     minInSyncReplicas with IN_SYNC_REPLICAS_NOT_ENOUGH.
//   - GET_BROKER_EPOCH_CACHE (1007) from Epochs(); haStatus from Stats().
//   - Nothing for commitlog cleanup: the Service drops the epochs before
//     the commitlog's first offset itself (TruncateEpochPrefix).
package autoswitch
