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
// It is written every PersistInterval when it changed, when a correction is
// made, and at Stop; a crash re-delivers at most what was delivered since the
// last write (duplicates, never loss). On load an offset outside its queue's
// [min, max] is clamped into it and the correction persisted at once.
package schedule
