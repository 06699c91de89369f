package store

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// putTimeBuckets are the upper bounds (ms, exclusive) of J4
// StoreStatsService.setPutMessageEntireTimeMax's distribution; a put of
// 0 ms goes to the first bucket and one of 10 s or more to the last.
var putTimeBuckets = [...]int64{1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000}

// putTimeLabels are J4 PUT_MESSAGE_ENTIRE_TIME_MAX_DESC.
var putTimeLabels = [len(putTimeBuckets) + 1]string{
	"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
	"[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]",
}

// putTimesPeriod is how long one distribution collects before it becomes
// the reported one (J4 StoreStatsService prints and resets it every
// minute).
const putTimesPeriod = time.Minute

type putTimes struct {
	counts [len(putTimeLabels)]atomic.Int64
}

// storeTimes are the put and get durations of J4 StoreStatsService:
// the largest put and get since Open (putMessageEntireTimeMax,
// getMessageEntireTimeMax) and the put distribution of the last complete
// minute (putMessageDistributeTime). Recording is a few atomic operations;
// a put that races with the minute's rotation counts in the minute that
// just ended.
type storeTimes struct {
	putMax, getMax atomic.Int64 // ms
	cur, last      atomic.Pointer[putTimes]
	rotateAt       atomic.Int64 // unix ms when cur becomes last
}

func (t *storeTimes) init(now time.Time) {
	t.cur.Store(new(putTimes))
	t.rotateAt.Store(now.Add(putTimesPeriod).UnixMilli())
}

// rotate makes cur the reported distribution once its minute is over.
func (t *storeTimes) rotate(now time.Time) {
	due := t.rotateAt.Load()
	if now.UnixMilli() < due || !t.rotateAt.CompareAndSwap(due, now.Add(putTimesPeriod).UnixMilli()) {
		return
	}
	t.last.Store(t.cur.Swap(new(putTimes)))
}

func raiseMax(v *atomic.Int64, ms int64) {
	for {
		old := v.Load()
		if ms <= old || v.CompareAndSwap(old, ms) {
			return
		}
	}
}

// notePut records one stored put that took d.
func (t *storeTimes) notePut(now time.Time, d time.Duration) {
	t.rotate(now)
	ms := d.Milliseconds()
	i := 0
	for i < len(putTimeBuckets) && ms >= putTimeBuckets[i] {
		i++
	}
	t.cur.Load().counts[i].Add(1)
	raiseMax(&t.putMax, ms)
}

// noteGet records one get that took d.
func (t *storeTimes) noteGet(d time.Duration) { raiseMax(&t.getMax, d.Milliseconds()) }

// distribution is J4 putMessageDistributeTimeToString: "label:count " per
// bucket, or "null" before the first minute is over.
func (t *storeTimes) distribution(now time.Time) string {
	t.rotate(now)
	p := t.last.Load()
	if p == nil {
		return "null"
	}
	var sb strings.Builder
	for i, l := range putTimeLabels {
		sb.WriteString(l)
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(p.counts[i].Load(), 10))
		sb.WriteByte(' ')
	}
	return sb.String()
}
