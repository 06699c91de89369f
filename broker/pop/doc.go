// Package pop serves 5.x POP consumption: POP_MESSAGE (with long polling),
// ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
// PEEK_MESSAGE, NOTIFICATION and POLLING_INFO, and the client rebalance of
// POP mode: QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE (the mode per
// topic and group, config/messageRequestMode.json as stock; mqadmin
// setConsumeMode -m POP sends it).
//
// The Go API (Pop, PopWait, Ack, ChangeInvisible, ForwardToDLQ, Peek,
// HasMessage) is what the remoting processors call, and what the gRPC front
// end (package grpcapi) calls: a popped
// message comes with its Handle, the extraInfo a remoting client echoes
// back (ExtraInfoUtil: ckQueueOffset popTime invisibleTime reviveQid
// retryFlag brokerName queueId msgQueueOffset).
//
// # Checkpoints and revive
//
// Invisible time runs on the timer store (package timer: never early,
// millisecond precision, durable) instead of a second scanning mechanism.
// Everything the service must remember goes to one system queue, the revive
// topic rmq_sys_REVIVE_LOG_<cluster> queue 0, as JSON records told apart by
// their tag:
//
//	ck    a pop of one queue: group, topic, queue, start offset, popTime,
//	      invisible time, the popped offsets, the cursor after the pop
//	ack   offsets of a checkpoint consumed
//	rv    the trigger: stored as a timer message due at popTime+invisibleTime
//	      (TIMER_DELIVER_MS), it reaches the revive queue when due
//	done  a checkpoint revived (for an orderly one: the offset its queue
//	      went back to)
//
// A checkpoint is keyed by (topic, group, queue, start offset, popTime),
// which is what a handle carries. In memory the service keeps the live
// checkpoints with their acked bits and, per queue and group, the pop cursor
// and the offsets in flight. The consumer offset of a queue is the lowest
// offset in flight, or the cursor when none is: it passes popped messages
// once all earlier ones are acked or revived.
//
// # Durability order
//
// Pop (per queue, under the service lock):
//
//  1. read the messages from the cursor;
//  2. store the trigger (through the broker's put path, which hands it to
//     the timer store);
//  3. store the ck record;
//  4. add the checkpoint in memory, move the cursor, commit the consumer
//     offset, answer.
//
// A crash before 3 leaves at most a trigger without a checkpoint, which is
// dropped when it fires; the messages are popped again, since nothing moved
// the cursor durably. The commitlog is recovered as a prefix, so a ck record
// that survives has its trigger.
//
// Ack: store the ack record, then mark the bit (a fully acked checkpoint is
// forgotten) and answer. An ack of a message not in flight (acked, revived,
// unknown) succeeds and stores nothing.
//
// Change of invisible time: store the new checkpoint's trigger, then its ck
// record (one offset, popTime now), then the ack of the old one.
//
// Revive (the reader, woken by the dispatch of revive records):
//
//  1. read the revive queue; a trigger of a live checkpoint is due, one
//     of a forgotten checkpoint is dropped;
//  2. re-put each unacked message of a due ordinary checkpoint to the POP
//     retry topic %RETRY%<group>_<topic> queue 0 with RECONSUME_TIME+1
//     (RETRY_TOPIC, ORIGIN_MESSAGE_ID and 1ST_POP_TIME set), or to
//     %DLQ%<group> past the group's retryMaxTimes; an orderly checkpoint
//     re-puts nothing: its queue's cursor goes back to its first unacked
//     offset and the same messages are popped again (orderCountInfo counts
//     the attempts);
//  3. store the done record, then forget the checkpoint. A revive the store
//     refuses stays due and is retried at the next read.
//
// # Recovery
//
// Every PersistInterval (and at Stop) the consumer offsets are persisted,
// then the replay start (config/popReviveOffset.json): the revive-queue
// offset of the oldest live checkpoint (or of a rewound orderly checkpoint
// whose attempt counts no later ck record carries yet). Every checkpoint
// before it was closed, and the consumer offsets written first cover its
// messages. At
// start the revive queue is read from the replay start to its end applying
// every record (ck adds, ack marks, done forgets; a cursor becomes the
// largest "next" of its checkpoints, or for an orderly queue the last one's
// rewind), and only then are the triggers read acted on: done records
// later in the log win over earlier triggers, so a revive is redone only if
// the crash came between its re-puts and its done record. A message popped
// and not acked thus comes back after its invisible time, once per expiry
// (at most twice across a crash in that window); an acked one never does.
// After the replay the reader only acts on triggers: the writers have
// applied their own records.
//
// # Orderly pops
//
// A pop with order=true uses reviveQid 999 and skips a queue that has a
// live checkpoint of the group: one batch of a queue is in flight at a time,
// until it is acked or its invisible time ends (stock: ConsumerOrderInfo
// lock).
//
// # Long polling
//
// A pop (or NOTIFICATION) that finds nothing is parked for up to pollTime
// (capped at 20 s, at most MaxPolling parked, then POLLING_FULL); a message
// dispatched to its topic or retry topic, or an orderly queue unblocked,
// re-runs it; at its poll time it answers POLLING_TIMEOUT.
//
// Not done as stock: one revive queue instead of reviveQueueNum (the
// reviveQid of handles is 0, or 999 for orderly pops); pops take the
// retry topic first with popFromRetryProbability 20 %, otherwise only to
// fill the batch; messages are read under the service lock.
package pop
