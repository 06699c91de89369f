package broker

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// holdHarness runs a hold service on a manual clock and records wake-ups.
type holdHarness struct {
	t     *testing.T
	clk   *clock.Manual
	s     *PullRequestHoldService
	woken chan *heldPull
}

func newHoldHarness(t *testing.T) *holdHarness {
	h := &holdHarness{t: t, clk: clock.NewManual(time.Unix(1_700_000_000, 0)), woken: make(chan *heldPull, 16)}
	h.s = newPullRequestHoldService(h.clk, zerolog.Nop(), func(hp *heldPull) { h.woken <- hp })
	h.s.start()
	t.Cleanup(h.s.shutdown)
	return h
}

func (h *holdHarness) park(name string, conn *remoting.Conn, topic string, offset int64, hold time.Duration, tags ...int64) *heldPull {
	f := &tagFilter{all: len(tags) == 0, codes: map[int32]struct{}{}}
	for _, c := range tags {
		f.codes[int32(c)] = struct{}{}
	}
	hp := &heldPull{conn: conn, req: &remoting.Command{Remark: name}, topic: topic, offset: offset,
		match: f.match, deadline: h.clk.Now().Add(hold)}
	h.s.suspend(hp, func(string, int32) int64 { return offset })
	return hp
}

// expect waits for the named pulls to wake, in any order, and then checks
// that nothing else wakes.
func (h *holdHarness) expect(names ...string) {
	h.t.Helper()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	for range names {
		select {
		case hp := <-h.woken:
			if !want[hp.req.Remark] {
				h.t.Fatalf("woke %s, want %v", hp.req.Remark, names)
			}
			delete(want, hp.req.Remark)
		case <-time.After(coreTestTimeout):
			h.t.Fatalf("still waiting for %v", want)
		}
	}
	h.expectNone()
}

func (h *holdHarness) expectNone() {
	h.t.Helper()
	select {
	case hp := <-h.woken:
		h.t.Fatalf("unexpected wake of %s", hp.req.Remark)
	case <-time.After(20 * time.Millisecond):
	}
}

// advance moves the manual clock once the service sleeps on it.
func (h *holdHarness) advance(d time.Duration) {
	testutil.WaitFor(h.t, coreTestTimeout, func() bool { return h.clk.Pending() > 0 }, "the hold service to sleep")
	h.clk.Advance(d)
}

func TestPullHoldDeadlines(t *testing.T) {
	h := newHoldHarness(t)
	h.park("late", nil, "T", 0, 3*time.Second)
	h.park("early", nil, "T", 0, time.Second)
	h.park("mid", nil, "U", 0, 2*time.Second)
	h.expectNone()
	h.advance(time.Second)
	h.expect("early")
	h.advance(1500 * time.Millisecond)
	h.expect("mid")
	h.advance(time.Second)
	h.expect("late")
	if n := h.s.held(); n != 0 {
		t.Fatalf("%d still held", n)
	}
}

func TestPullHoldNotify(t *testing.T) {
	cases := []struct {
		name      string
		offset    int64
		tags      []int64
		notifyMax int64
		notifyTag int64
		wantWake  bool
	}{
		{name: "new message any tag", offset: 5, notifyMax: 6, notifyTag: 42, wantWake: true},
		{name: "matching tag", offset: 5, tags: []int64{42}, notifyMax: 6, notifyTag: 42, wantWake: true},
		{name: "filtered tag keeps waiting", offset: 5, tags: []int64{42}, notifyMax: 6, notifyTag: 7},
		{name: "message behind the offset", offset: 5, notifyMax: 5, notifyTag: 42},
		{name: "int32 tag comparison", offset: 0, tags: []int64{-5}, notifyMax: 1, notifyTag: 0x1_FFFF_FFFB, wantWake: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHoldHarness(t)
			h.park("p", nil, "T", tc.offset, time.Minute, tc.tags...)
			h.park("other queue", nil, "Other", tc.offset, time.Minute)
			h.s.notify("T", 0, tc.notifyMax, tc.notifyTag, "")
			if tc.wantWake {
				h.expect("p")
			} else {
				h.expectNone()
			}
			if want := map[bool]int{true: 1, false: 2}[tc.wantWake]; h.s.held() != want {
				t.Fatalf("held %d, want %d", h.s.held(), want)
			}
		})
	}
}

func TestPullHoldRaceWithDispatch(t *testing.T) {
	h := newHoldHarness(t)
	hp := &heldPull{req: &remoting.Command{Remark: "raced"}, topic: "T", offset: 3, match: func(int64) bool { return false },
		deadline: h.clk.Now().Add(time.Minute)}
	// The message landed between the store read and the park: the queue is
	// already past the offset, so the pull must not wait for its deadline.
	h.s.suspend(hp, func(string, int32) int64 { return 4 })
	h.expect("raced")
	if h.s.held() != 0 {
		t.Fatal("raced pull still held")
	}
}

func TestPullHoldDropConnAndShutdown(t *testing.T) {
	h := newHoldHarness(t)
	gone, kept := &remoting.Conn{}, &remoting.Conn{}
	h.park("gone1", gone, "T", 0, time.Second)
	h.park("kept", kept, "T", 0, 2*time.Second)
	h.park("gone2", gone, "U", 0, 3*time.Second)
	h.s.dropConn(gone)
	if n := h.s.held(); n != 1 {
		t.Fatalf("held %d after drop, want 1", n)
	}
	h.advance(3 * time.Second)
	h.expect("kept")

	h.park("at shutdown", kept, "T", 0, time.Second)
	h.s.shutdown()
	h.clk.Advance(time.Hour)
	h.expectNone()
	h.park("after shutdown", kept, "T", 0, 0)
	h.expectNone()
	if n := h.s.held(); n != 0 {
		t.Fatalf("held %d after shutdown", n)
	}
}

// TestPullHoldWakesOncePerDispatchBatch: the broker's dispatch hook only
// takes the held pulls the records reach; they are woken when the store's
// batch ends, once each, so the re-run pull reads the whole batch.
func TestPullHoldWakesOncePerDispatchBatch(t *testing.T) {
	h := newHoldHarness(t)
	b := newStoreEvents(h.s, nil)
	h.park("p", nil, "T", 5, time.Minute)
	h.park("q", nil, "T", 6, time.Minute)
	h.park("other queue", nil, "Other", 0, time.Minute)
	for off := int64(5); off < 8; off++ {
		b.onDispatch(store.DispatchRequest{Topic: "T", QueueID: 0, QueueOffset: off})
	}
	h.expectNone()
	if n := h.s.held(); n != 1 {
		t.Fatalf("held %d during the batch, want 1 (the other queue's)", n)
	}
	b.onDispatchBatch()
	h.expect("p", "q")
	b.onDispatch(store.DispatchRequest{Topic: "T", QueueID: 0, QueueOffset: 8})
	b.onDispatchBatch()
	h.expectNone()
	if n := len(b.wakes.pulls); n != 0 {
		t.Fatalf("%d pulls left gathered after the batch", n)
	}
}

// TestPullHoldWakersBusy: re-runs go to the long-lived wakers; while every
// waker is busy (a re-run reading the disk) and their queue is full, a
// woken pull still runs at once on a goroutine of its own, and every pull
// is re-run exactly once.
func TestPullHoldWakersBusy(t *testing.T) {
	release := make(chan struct{})
	var blocked atomic.Int32
	ran := make(chan string, holdWakers+holdWakeQLen+8)
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s := newPullRequestHoldService(clk, zerolog.Nop(), func(hp *heldPull) {
		if hp.queueID == 0 {
			blocked.Add(1)
			<-release // a slow re-run
		}
		ran <- hp.req.Remark
	})
	s.start()
	t.Cleanup(s.shutdown)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	slow := 0
	wakeSlow := func() {
		s.suspend(&heldPull{req: &remoting.Command{Remark: fmt.Sprintf("slow%d", slow)}, topic: "T",
			match: func(int64) bool { return true }, deadline: clk.Now().Add(time.Minute)},
			func(string, int32) int64 { return 0 })
		slow++
		s.notify("T", 0, 1, 0, "")
	}
	for range holdWakers {
		wakeSlow()
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return blocked.Load() == holdWakers }, "every waker to be busy")
	for len(s.wakeq) < holdWakeQLen {
		wakeSlow()
	}
	s.suspend(&heldPull{req: &remoting.Command{Remark: "fast"}, topic: "T", queueID: 1,
		match: func(int64) bool { return true }, deadline: clk.Now().Add(time.Minute)},
		func(string, int32) int64 { return 0 })
	s.notify("T", 1, 1, 0, "")
	select {
	case name := <-ran:
		if name != "fast" {
			t.Fatalf("re-ran %s first, want fast", name)
		}
	case <-time.After(coreTestTimeout):
		t.Fatal("a woken pull waited for busy wakers")
	}
	close(release)
	seen := map[string]bool{}
	for range slow {
		select {
		case name := <-ran:
			if seen[name] {
				t.Fatalf("%s re-ran twice", name)
			}
			seen[name] = true
		case <-time.After(coreTestTimeout):
			t.Fatalf("%d of %d slow pulls re-ran", len(seen), slow)
		}
	}
	select {
	case name := <-ran:
		t.Fatalf("extra re-run of %s", name)
	case <-time.After(20 * time.Millisecond):
	}
}
