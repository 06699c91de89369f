// Package schedule serves 4.x delay levels (ScheduleMessageService).
//
// A send carrying DELAY=n (n > 0, clamped to the highest level) is rewritten
// before it is stored:
//
//	producer ──send(topic T, queue q, DELAY=n)──▶ Rewrite
//	                                                │  REAL_TOPIC=T, REAL_QID=q
//	                                                ▼
//	            commitlog ◀── SCHEDULE_TOPIC_XXXX, queue n-1
//	                │ dispatch: tagsCode = storeTimestamp + delay(n)
//	                ▼
//	  consume queue SCHEDULE_TOPIC_XXXX/n-1 (FIFO, one fixed delay per queue)
//	                │ level goroutine n sleeps until the head is due
//	                ▼
//	            deliver: topic T, queue q, DELAY dropped, reconsumeTimes kept
//	                │
//	                ▼  stored as a normal message; wakes long-polling pulls
//
// Because every queue has a single delay, its head gates the rest: each level
// needs one timer for its head, not a scan. A level with nothing pending waits
// for the dispatch notification of its next message (Notify).
//
// Progress is the next consume-queue offset per level, kept in
// config/delayOffset.json:
//
//	{"offsetTable":{"1":23,"2":0}}
//
// A level writes the file before a read could bring its deliveries not yet
// written past deliverBatch (32), and when it stops delivering unless its
// next message is due within commitIdle (10 ms): messages sent at a steady
// rate, due every millisecond or so, share a write instead of paying one
// each (it is also written every PersistInterval when it changed, when a
// correction is made, and at Stop). A kill -9 therefore re-delivers at most
// one batch: at most 32 duplicates per level that was delivering at the kill,
// exactly the messages stored since that level's last write (crash_test.go
// kills at every step and checks this count); before, it was everything
// delivered in the last PersistInterval (10 s). Duplicates, never loss: the
// file is written after the deliveries it covers are stored. A power loss
// under ASYNC_FLUSH can lose deliveries not yet flushed, like any other
// message stored in that window.
//
// Surviving a kill needs no fsync: the page cache keeps a completed write.
// So a batch commit rewrites the file in place with one unsynced write of
// the file's length (the JSON padded with spaces; offsetWriter), and the
// file is synced every PersistInterval, at a correction and at Stop; a power
// loss re-delivers at most what was delivered since the last sync, as stock
// does. Under SYNC_FLUSH, where a delivery is durable once stored, every
// commit is synced too (Options.SyncCommits): a power loss then re-delivers
// at most a batch per level as well.
//
// On load an offset outside its queue's [min, max] is clamped into it and
// the correction persisted at once.
//
// # Messages that cannot be delivered
//
// A level is FIFO, so a message the store refuses would block every message
// behind it, for every topic. A refusal the store reports as permanent
// (store.IsPermanent: topic too long or not a directory name, message or
// properties too large, ...) moves the message aside (store.Diverter): a
// retry message %RETRY%<g> goes to %DLQ%<g> when that topic can be stored,
// anything else is appended to the dead-letter log (<store
// root>/deadletter/schedule.log, one JSON object per line with its topic,
// properties and body), logged once and counted (Stats.ToDLQ,
// Stats.DeadLettered); the level goes on. Transient failures (disk full,
// store closed) pause the level and are retried every RetryInterval. The
// broker refuses such names before they are stored (message.ValidateTopic,
// ValidateRetryGroup); the diversion also drains poison stored earlier.
package schedule
