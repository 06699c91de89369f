package timer

import (
	"errors"
	"io/fs"
	"strings"
	"sync"

	"github.com/rmqio/rmq/store"
)

// timing is 5.3.3's TimerMetrics.timingCount: by real topic, the timer
// messages in the wheel (+1 when a message or roll entry is linked, -1 when
// its entry is delivered, rolled, dropped by a recall or as delivered by the
// master; a message delivered without entering the wheel is not counted, as
// stock skips TIMER_ENQUEUE_MS = MaxInt64), with a data version bumped at
// every change (a delivery batch's decrements of one topic are one change;
// stock bumps per message: only a change matters to a slave). It is what GET_TIMER_METRICS (61) answers and what a slave
// copies from its master when the versions differ. It is kept in
// config/timermetrics in the stock JSON at each flush that finds it
// changed; a crash loses the changes since (stock's file drifts alike).
// Entries skipped as unreadable carry no topic and stay counted.
type timing struct {
	mu      sync.Mutex
	counts  map[string]*TopicCount
	version DataVersion
	dirty   bool
	failing bool // the last write failed (logged once)
	path    string
}

func (t *TimerStore) loadTiming(path string) {
	tm := &t.timing
	tm.path, tm.counts = path, map[string]*TopicCount{}
	err := store.ReadFileWithBackup(path, func(b []byte) error {
		m, err := DecodeStockMetrics(b)
		if err != nil {
			return err
		}
		tm.version = m.DataVersion
		for k, v := range m.TimingCount {
			tm.counts[k] = &TopicCount{Count: v.Count, TimeStamp: v.TimeStamp}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.log.Error().Err(err).Str("path", path).Msg("timer: timer metrics unreadable, counting from zero")
	}
}

// add counts delta timer messages of topic at nowMs (TimerMetrics.addAndGet);
// a count never goes below zero (entries counted before a crash lost them).
func (tm *timing) add(topic string, delta, nowMs int64) {
	if topic == "" {
		return
	}
	tm.mu.Lock()
	c, ok := tm.counts[topic]
	if !ok {
		c = &TopicCount{}
		tm.counts[strings.Clone(topic)] = c // topic may point into a read buffer
	}
	c.Count = max(c.Count+delta, 0)
	c.TimeStamp = nowMs
	tm.version.Counter++
	tm.version.Timestamp = nowMs
	tm.dirty = true
	tm.mu.Unlock()
}

// snapshotLocked copies the counts. tm.mu must be held.
func (tm *timing) snapshotLocked() *StockMetrics {
	m := &StockMetrics{DataVersion: tm.version, TimingCount: make(map[string]TopicCount, len(tm.counts))}
	for k, v := range tm.counts {
		m.TimingCount[k] = *v
	}
	return m
}

// StockMetrics is the GET_TIMER_METRICS answer: the timer messages in the
// wheel by real topic and their data version.
func (t *TimerStore) StockMetrics() *StockMetrics {
	t.timing.mu.Lock()
	defer t.timing.mu.Unlock()
	return t.timing.snapshotLocked()
}

// CopyMasterMetrics replaces the counts with the master's when its data
// version differs (SlaveSynchronize.syncTimerMetrics), and reports whether
// it did; the file is written at the next flush. A store that delivers
// ignores it: its counts are its own.
func (t *TimerStore) CopyMasterMetrics(m *StockMetrics) bool {
	if t.delivering() {
		return false
	}
	tm := &t.timing
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.version == m.DataVersion {
		return false
	}
	tm.version = m.DataVersion
	tm.counts = make(map[string]*TopicCount, len(m.TimingCount))
	for k, v := range m.TimingCount {
		tm.counts[k] = &TopicCount{Count: v.Count, TimeStamp: v.TimeStamp}
	}
	tm.dirty = true
	return true
}

// flushTiming writes config/timermetrics when the counts changed since the
// last write. Only the first of consecutive failures is returned (a full
// disk fails every flush).
func (t *TimerStore) flushTiming() error {
	tm := &t.timing
	tm.mu.Lock()
	if !tm.dirty {
		tm.mu.Unlock()
		return nil
	}
	m := tm.snapshotLocked()
	tm.dirty = false
	tm.mu.Unlock()
	err := store.WriteFileAtomic(t.opts.FS, tm.path, m.Encode())
	tm.mu.Lock()
	defer tm.mu.Unlock()
	first := !tm.failing
	tm.failing = err != nil
	if err != nil {
		tm.dirty = true
		if first {
			return err
		}
	}
	return nil
}
