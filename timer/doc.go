// Package timer implements 5.x timer messages (RIP-43): a producer sets
// TIMER_DELIVER_MS, TIMER_DELAY_SEC or TIMER_DELAY_MS and the message is
// delivered to its topic at that time, never earlier.
//
// # Path of a timer message
//
//	send ──Admit/Rewrite──▶ commitlog, topic rmq_sys_wheel_timer queue 0
//	                        (TIMER_OUT_MS = exact due time, REAL_TOPIC, REAL_QID)
//	enqueue stage ─ reads that consume queue ─▶ TimerLog unit + wheel slot link
//	dequeue stage ─ walks due slots ─▶ reads the original from the commitlog and
//	                stores it on REAL_TOPIC/REAL_QID (TIMER_ENQUEUE_MS,
//	                TIMER_DEQUEUE_MS set; REAL_* and TIMER_OUT_MS kept, as stock)
//	flush         ─ TimerLog sync → wheel write → delete set → checkpoint
//
// Admit is the single admission rule (precedence TIMER_DELAY_SEC >
// TIMER_DELAY_MS > TIMER_DELIVER_MS; a DELAY level, handled by the caller,
// beats all three). Unlike stock, TIMER_OUT_MS holds the exact requested time,
// not a rounded slot time.
//
// # Timing
//
// The wheel is a ring of WheelSlots slots of PrecisionMs each. Slot T holds
// the entries due in [T, T+p). The dequeue goroutine sleeps until the next
// non-empty slot begins (an enqueue into an earlier slot wakes it), opens the
// slot, and delivers its entries in due-time order, each at its exact
// TIMER_OUT_MS: lateness does not depend on the precision, and nothing leaves
// early. The slot closes (the read time moves past it) once the clock has
// passed its end and all its entries are done; the read time therefore never
// runs ahead of the clock. A message read after its slot closed bypasses the
// wheel and is delivered at once (TIMER_ENQUEUE_MS = MaxInt64, as stock).
// Deliveries go in batches of BatchSize with a yield between batches, so a
// flood due in one second does not starve new sends.
//
// A message due further than RollWindow ahead gets a roll entry at
// now+RollWindow instead; when that comes it is stored again on the timer
// topic (TIMER_ROLL_TIMES+1, a fresh commitlog copy, so commitlog retention
// cannot remove it) and enqueued afresh. Roll entries are ordinary wheel
// entries, so their progress is in the checkpoint like any other.
//
// # TimerLog unit (52 bytes, big-endian; timerlog/<20-digit start position>)
//
//	 0 +----------------------+
//	   | size = 52      int32 |
//	 4 | prevPos        int64 |  previous unit of the same slot, -1 if none
//	12 | magic          int32 |  1 = message, 3 = roll entry (1|2)
//	16 | writeTime      int64 |  wheel write time (multiple of p) when appended
//	24 | delay          int32 |  exact target - writeTime (target = due time,
//	   |                      |  or the roll time of a roll entry)
//	28 | offsetPy       int64 |  commitlog offset of the message
//	36 | sizePy         int32 |  its record size
//	40 | topicHash      int32 |  Java hashCode of REAL_TOPIC
//	44 | crc            int32 |  CRC-32 IEEE of bytes 0..43 (stock: reserved)
//	48 | reserved       int32 |  0
//	52 +----------------------+
//
// A unit never spans files: when less than 52+16 bytes are left, the rest of
// the file is a 16-byte-headed filler (int32 remaining, int64 0, int32
// 0xCBD43194) and the unit starts the next file. Segments no slot at or after
// the durable read time still references are deleted every CleanInterval.
//
// # Wheel slot (32 bytes, big-endian; file timerwheel = WheelSlots × 32 bytes)
//
//	 0 +----------------------+
//	   | time / p       int64 |  slot time in precision units; slot T is at
//	   |                      |  index (T/p) mod WheelSlots, another time there
//	   |                      |  means another lap: empty
//	 8 | firstPos       int64 |  oldest unit of the chain
//	16 | lastPos        int64 |  newest unit (the chain runs back via prevPos)
//	24 | num            int32 |  units linked
//	28 | crc            int32 |  CRC-32 IEEE of bytes 0..27 (stock: magic)
//	32 +----------------------+  all-zero = never used
//
// The ring is held in memory in chunks of 1024 slots (32 KiB), allocated
// when a slot in them is set and released when their last slot is cleared;
// changed slots are written back at each flush, only after the TimerLog units
// they point at are synced, and a released chunk is punched out of the file.
// The file stays sparse and Open reads only its data regions, so memory, boot
// and restart cost follow the slots in use rather than the ring's span.
//
// # Checkpoint (config/timercheck: two 512-byte slots written alternately)
//
//	 0 +---------------------------+
//	   | magic "RMQTMCK1"   uint64 |
//	 8 | sequence           uint64 |  slot = sequence % 2; the higher valid wins
//	16 | readTimeMs         int64  |  every slot before it is delivered
//	24 | cursorTarget       int64  |  inside slot readTimeMs: every unit at or
//	32 | cursorPos          int64  |  below scannedPos with (target, pos) at or
//	40 | scannedPos         int64  |  below the cursor is delivered (-1: none)
//	48 | flushPos           int64  |  TimerLog units below are synced and linked
//	   |                           |  in the wheel file
//	56 | queueOffset        int64  |  next timer consume-queue offset to read
//	64 | precisionMs        int64  |  geometry the wheel file was written with
//	72 | wheelSlots         int64  |
//	80 | writtenAtMs        int64  |
//	88 | CRC-32 IEEE of 0..87 u32  |
//	   +---------------------------+
//
// # Durability and recovery
//
// The flush order is TimerLog sync → wheel write → delete set → checkpoint,
// from one snapshot taken under the lock, and the consume-queue offset moves
// in the same critical section as the links of the messages it passes. Open
// trusts the TimerLog only up to flushPos: later units are zeroed (their
// messages come again from the consume queue) after cutting every wheel chain
// back below flushPos; a wheel that does not fit the TimerLog, a changed
// geometry or a lost checkpoint rebuilds the wheel from the TimerLog. The
// queue offset is clamped into the consume queue, units that point at
// commitlog bytes lost since they were written are skipped, and any entry
// whose record is unreadable or does not match is skipped and counted, never
// retried. Deliveries made after the last checkpoint are redone: duplicates
// are limited to them. The dequeue's deliveries are committed by a flush in
// groups, on the flush goroutine: the dequeue asks for one once BatchSize (256
// by default) of them are past the last checkpoint, and before it sleeps
// longer than 10 ms; so timers due every millisecond share a flush instead of
// paying one each. The dequeue delivers on while the commit syncs, and waits
// only when CommitWindow batches (8 by default) are uncommitted: under load
// beside a busy commitlog those syncs stalled for hundreds of milliseconds,
// and every timer then due was that late. Every enqueue batch that delivered
// messages already due (bypass) is committed before the next, so a kill -9
// redoes at most BatchSize × CommitWindow deliveries of the dequeue and
// BatchSize of the enqueue, not everything since the last periodic flush
// (crashdup_test.go).
//
// # Deliveries the store refuses
//
// A delivery the store refuses for good (store.IsPermanent) is retried once
// without the timer bookkeeping properties, then moved aside by
// store.Diverter: to %DLQ%<g> for a retry message of group g when that topic
// can be stored, else to the dead-letter log <Dir>/deadletter/timer.log
// (one JSON object per line), logged once and counted (Stats.ToDLQ,
// Stats.DeadLettered). The wheel never waits on such a message; transient
// failures are retried every RetryInterval.
//
// # On a slave: the master's progress
//
// A slave's timer store is written by replication only. It copies its
// master's 5.3.3 TimerCheckpoint (GET_TIMER_CHECK_POINT, stock.go) every
// 3 s and, once it holds what that covers, keeps in config/timermaster the
// rule "a timer-queue record stored below the master's queue position and
// due before its read time was delivered by the master", applied wherever
// a taken-over store meets such a record (master.go). The per-topic counts
// of GET_TIMER_METRICS are kept in config/timermetrics (timing.go).
//
// # Recall
//
// Recall stores a delete marker on the timer topic (TIMER_DEL_UNIQKEY =
// "<topic>+<uniqKey>", as stock) and enters it in a delete set kept in
// config/timerdelete.json. Every delivery consults the set, so a marker works
// whatever slot the target is in and across rolls. Recall of a message the
// wheel already delivered returns ErrAlreadyDelivered.
package timer
