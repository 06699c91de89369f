package brokerstats

import (
	"sync"
	"sync/atomic"
	"time"
)

// Sampling periods and list lengths of J4 StatsItem: a snapshot every 10 s
// kept for a minute (7), every 10 min kept for an hour (7), every hour kept
// for a day (25).
const (
	minutePeriod = 10 * time.Second
	hourPeriod   = 10 * time.Minute
	dayPeriod    = time.Hour

	minuteKeep = 7
	hourKeep   = 7
	dayKeep    = 25
)

// Item is one stats key's counters (J4 StatsItem): value (messages or bytes)
// and times (how many calls added to it). Add is two atomic adds; the
// snapshot lists are touched only by the sampler and by readers.
type Item struct {
	value atomic.Int64
	times atomic.Int64

	mu                sync.Mutex
	minute, hour, day []callSnapshot // oldest first
}

type callSnapshot struct {
	at           time.Time
	times, value int64
}

// Snapshot is one window of an item (J4 StatsSnapshot).
type Snapshot struct {
	Sum   int64
	Tps   float64
	Avgpt float64
	Times int64
}

// Add counts one call that added v.
func (it *Item) Add(v int64) {
	it.value.Add(v)
	it.times.Add(1)
}

// AddTimes counts n calls that together added v (J4 incTopicPutNums(topic,
// num, times)).
func (it *Item) AddTimes(v, n int64) {
	it.value.Add(v)
	it.times.Add(n)
}

// Value is the running total.
func (it *Item) Value() int64 { return it.value.Load() }

// Times is the running call count.
func (it *Item) Times() int64 { return it.times.Load() }

// sample appends a snapshot at now to list, seeding an empty list with a
// zero snapshot one period earlier as J4 samplingInSeconds does, and keeps
// the newest keep.
func (it *Item) sample(list []callSnapshot, now time.Time, period time.Duration, keep int) []callSnapshot {
	if len(list) == 0 {
		list = append(list, callSnapshot{at: now.Add(-period)})
	}
	list = append(list, callSnapshot{at: now, times: it.times.Load(), value: it.value.Load()})
	if n := len(list) - keep; n > 0 {
		list = append(list[:0], list[n:]...)
	}
	return list
}

// SampleMinute, SampleHour and SampleDay take one snapshot for the window.
func (it *Item) SampleMinute(now time.Time) {
	it.mu.Lock()
	it.minute = it.sample(it.minute, now, minutePeriod, minuteKeep)
	it.mu.Unlock()
}

// SampleHour is SampleMinute for the hour window.
func (it *Item) SampleHour(now time.Time) {
	it.mu.Lock()
	it.hour = it.sample(it.hour, now, hourPeriod, hourKeep)
	it.mu.Unlock()
}

// SampleDay is SampleMinute for the day window.
func (it *Item) SampleDay(now time.Time) {
	it.mu.Lock()
	it.day = it.sample(it.day, now, dayPeriod, dayKeep)
	it.mu.Unlock()
}

// compute is J4 StatsItem.computeStatsData: the difference between the
// newest and the oldest snapshot of the window. Java divides by a zero
// interval into NaN; here that is 0.
func compute(list []callSnapshot) Snapshot {
	var s Snapshot
	if len(list) == 0 {
		return s
	}
	first, last := list[0], list[len(list)-1]
	s.Sum = last.value - first.value
	if ms := last.at.Sub(first.at).Milliseconds(); ms > 0 {
		s.Tps = float64(s.Sum) * 1000 / float64(ms)
	}
	s.Times = last.times - first.times
	if s.Times > 0 {
		s.Avgpt = float64(s.Sum) / float64(s.Times)
	}
	return s
}

// Minute, Hour and Day report the windows (J4 getStatsDataInMinute, ...).
func (it *Item) Minute() Snapshot { it.mu.Lock(); defer it.mu.Unlock(); return compute(it.minute) }

// Hour is the hour window.
func (it *Item) Hour() Snapshot { it.mu.Lock(); defer it.mu.Unlock(); return compute(it.hour) }

// Day is the day window.
func (it *Item) Day() Snapshot { it.mu.Lock(); defer it.mu.Unlock(); return compute(it.day) }
