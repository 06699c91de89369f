package schedule

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

var t0 = time.UnixMilli(1_700_000_000_000)

type harness struct {
	t      *testing.T
	dir    string
	clk    *clock.Manual
	levels Levels
	st     *store.Store
	svc    *Service
}

func newHarness(t *testing.T, dir string, clk *clock.Manual) *harness {
	t.Helper()
	return newHarnessWith(t, dir, clk, nil)
}

// newHarnessWith is newHarness with changes to the service's options.
func newHarnessWith(t *testing.T, dir string, clk *clock.Manual, mutate func(*Options)) *harness {
	t.Helper()
	levels, err := ParseLevels(DefaultLevels)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, clk: clk, levels: levels}
	st, err := store.Open(store.Options{
		Dir: dir, MappedFileSizeCommitLog: 64 << 10, MappedFileSizeConsumeQueue: 20 * 64,
		Clock: clk,
		TagsCode: func(topic string, props message.Props, storeMs int64) int64 {
			if c, ok := levels.TagsCode(topic, props, storeMs); ok {
				return c
			}
			return message.TagsHash(props.Get("TAGS"))
		},
		OnDispatch: func(d store.DispatchRequest) {
			if d.Topic == message.TopicSchedule && h.svc != nil {
				h.svc.Notify(d.QueueID)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
	o := Options{Levels: levels, Store: st, OffsetPath: filepath.Join(dir, "config", "delayOffset.json"), Clock: clk}
	if mutate != nil {
		mutate(&o)
	}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	return h
}

func (h *harness) close() {
	if err := h.svc.Stop(); err != nil {
		h.t.Fatal(err)
	}
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
}

// putDelayed stores a message for topic with a delay level, through Rewrite as the broker does.
func (h *harness) putDelayed(topic string, level int, body string) {
	h.t.Helper()
	m := &message.Message{Topic: topic, QueueID: 1, Body: []byte(body), BornTimestamp: h.clk.Now().UnixMilli(),
		Properties: map[string]string{"DELAY": strconv.Itoa(level), "TAGS": "tag-" + body, "UNIQ_KEY": "U" + body}}
	if ok, err := h.levels.Rewrite(m); !ok || err != nil {
		h.t.Fatalf("rewrite: %v %v", ok, err)
	}
	res, err := h.st.PutMessage(m)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.st.WaitDispatched(ctx, res.PhysicalOffset+int64(res.WroteBytes)); err != nil {
		h.t.Fatal(err)
	}
}

// delivered returns the bodies stored on topic queue 1.
func (h *harness) delivered(topic string) []*message.MessageExt {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.st.WaitDispatched(ctx, h.st.MaxPhyOffset()); err != nil {
		h.t.Fatal(err)
	}
	return storetest.Messages(h.t, h.st, topic, 1)
}

func TestDeliverDueIsNeverEarlyAndRestoresTheMessage(t *testing.T) {
	h := newHarness(t, t.TempDir(), clock.NewManual(t0))
	defer h.close()
	h.putDelayed("Orders", 2, "a") // 5 s
	h.putDelayed("Orders", 2, "b")

	next, idle, err := h.svc.deliverDue(2, t0.Add(5*time.Second-time.Millisecond))
	if err != nil || idle || next != t0.Add(5*time.Second).UnixMilli() {
		t.Fatalf("next=%d idle=%v err=%v", next, idle, err)
	}
	if got := h.delivered("Orders"); len(got) != 0 {
		t.Fatalf("delivered %d messages 1 ms early", len(got))
	}
	if _, idle, err = h.svc.deliverDue(2, t0.Add(5*time.Second)); !idle || err != nil {
		t.Fatalf("idle=%v err=%v", idle, err)
	}
	got := h.delivered("Orders")
	if len(got) != 2 {
		t.Fatalf("delivered %d", len(got))
	}
	m := got[0]
	if string(m.Body) != "a" || m.Properties["TAGS"] != "tag-a" || m.Properties["UNIQ_KEY"] != "Ua" || m.QueueID != 1 {
		t.Fatalf("restored message %+v props %v", m.Message, m.Properties)
	}
	if _, has := m.Properties["DELAY"]; has {
		t.Fatal("DELAY must be dropped on delivery")
	}
	if m.Properties["REAL_TOPIC"] != "Orders" {
		t.Fatalf("REAL_TOPIC = %q", m.Properties["REAL_TOPIC"])
	}
	if off := h.svc.Offsets()[2]; off != 2 {
		t.Fatalf("offset = %d", off)
	}
}

func TestDeliverKeepsReconsumeTimes(t *testing.T) {
	h := newHarness(t, t.TempDir(), clock.NewManual(t0))
	defer h.close()
	m := &message.Message{Topic: "%RETRY%g", QueueID: 1, Body: []byte("x"), ReconsumeTimes: 3,
		Properties: map[string]string{"DELAY": "1", "RETRY_TOPIC": "Orders"}}
	h.levels.Rewrite(m)
	if _, err := h.st.PutMessage(m); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return h.st.MaxOffsetInQueue(message.TopicSchedule, 0) == 1 }, "the first schedule record")
	h.svc.deliverDue(1, t0.Add(time.Second))
	got := h.delivered("%RETRY%g")
	if len(got) != 1 || got[0].ReconsumeTimes != 3 || got[0].Properties["RETRY_TOPIC"] != "Orders" {
		t.Fatalf("got %+v", got)
	}
}

func TestRunnerDeliversWhenClockReachesDueTime(t *testing.T) {
	clk := clock.NewManual(t0)
	h := newHarness(t, t.TempDir(), clk)
	defer h.close()
	h.svc.Start()
	h.putDelayed("Late", 1, "x") // 1 s
	h.putDelayed("Late", 3, "y") // 10 s
	// Each level goroutine parks on a timer for its head; advance in steps and
	// check that nothing arrives before its time.
	testutil.WaitFor(t, 10*time.Second, func() bool { return clk.Pending() >= 3 }, "the persister and the heads of levels 1 and 3")
	clk.Advance(999 * time.Millisecond)
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(h.delivered("Late")) == 1 }, "the first Late delivery")
	if got := h.delivered("Late"); string(got[0].Body) != "x" {
		t.Fatalf("first delivery %q", got[0].Body)
	}
	clk.Advance(8 * time.Second)
	// 9 s after the put: level 3 (10 s) must still be pending.
	if d := h.svc.Stats().Delivered; d != 1 {
		t.Fatalf("delivered %d before due", d)
	}
	clk.Advance(time.Second)
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(h.delivered("Late")) == 2 }, "the second Late delivery")
}

func TestRestartResumesWithoutLossOrDuplicates(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	for i := 0; i < 5; i++ {
		h.putDelayed("R", 1, strconv.Itoa(i))
	}
	clk.Advance(time.Second)
	h.putDelayed("R", 1, "late") // due 1 s after now
	if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.delivered("R")); n != 5 {
		t.Fatalf("delivered %d before restart", n)
	}
	h.close() // persists delayOffset.json

	h2 := newHarness(t, dir, clk)
	defer h2.close()
	if off := h2.svc.Offsets()[1]; off != 5 {
		t.Fatalf("offset after restart = %d", off)
	}
	h2.svc.deliverDue(1, clk.Now().Add(time.Second))
	got := h2.delivered("R")
	if len(got) != 6 || string(got[5].Body) != "late" {
		t.Fatalf("after restart: %d messages", len(got))
	}
}

func TestOffsetOutsideQueueIsCorrectedAndPersisted(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	h.putDelayed("C", 1, "a")
	h.putDelayed("C", 1, "b")
	h.close()
	path := filepath.Join(dir, "config", "delayOffset.json")
	if err := os.WriteFile(path, []byte(`{"offsetTable":{1:99,2:-5}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, dir, clk)
	defer h2.close()
	if off := h2.svc.Offsets(); off[1] != 2 || off[2] != 0 {
		t.Fatalf("corrected offsets = %v", off)
	}
	saved, err := loadOffsets(path)
	if err != nil || saved[1] != 2 || saved[2] != 0 {
		t.Fatalf("persisted correction = %v %v", saved, err)
	}
}

// An offset that leaves its queue while the service runs (a queue truncated
// under it, or a bad write) is corrected by the delivery step itself, which
// persists the correction and carries on rather than stalling the level.
func TestDeliveryCorrectsOffsetOutsideQueue(t *testing.T) {
	tests := []struct {
		name          string
		level         int
		offset        int64
		wantOffset    int64
		wantDelivered int
		// wantPersisted is the corrected offset, written at once, or the
		// progress of the deliveries after it, committed with them.
		wantPersisted int64
	}{
		{name: "below the queue minimum", level: 1, offset: -5, wantOffset: 2, wantDelivered: 2, wantPersisted: 2},
		{name: "beyond the queue maximum", level: 1, offset: 99, wantOffset: 2, wantDelivered: 0, wantPersisted: 2},
		{name: "on a level with no queue", level: 2, offset: 7, wantOffset: 0, wantDelivered: 0, wantPersisted: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			h := newHarness(t, dir, clk)
			defer h.close()
			h.putDelayed("D", 1, "a")
			h.putDelayed("D", 1, "b")
			h.svc.setOffset(tt.level, tt.offset)
			clk.Advance(time.Second)
			_, idle, err := h.svc.deliverDue(tt.level, clk.Now())
			if err != nil || !idle {
				t.Fatalf("deliverDue: idle %v err %v, want an idle level and no error", idle, err)
			}
			if off := h.svc.Offsets()[tt.level]; off != tt.wantOffset {
				t.Fatalf("offset %d, want %d", off, tt.wantOffset)
			}
			if n := len(h.delivered("D")); n != tt.wantDelivered {
				t.Fatalf("delivered %d, want %d", n, tt.wantDelivered)
			}
			saved, err := loadOffsets(filepath.Join(dir, "config", "delayOffset.json"))
			if _, ok := saved[tt.level]; err != nil || !ok || saved[tt.level] != tt.wantPersisted {
				t.Fatalf("persisted %v err %v, want level %d at %d", saved, err, tt.level, tt.wantPersisted)
			}
		})
	}
}

func TestStopPersistsProgress(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	h.putDelayed("S", 1, "a")
	h.svc.deliverDue(1, t0.Add(time.Second))
	h.close()
	saved, err := loadOffsets(filepath.Join(dir, "config", "delayOffset.json"))
	if err != nil || saved[1] != 1 {
		t.Fatalf("saved = %v err = %v", saved, err)
	}
}

func TestUndeliverableMessagesAreSkippedNotRetriedForever(t *testing.T) {
	h := newHarness(t, t.TempDir(), clock.NewManual(t0))
	defer h.close()
	// A half message carrying DELAY, and a record with no REAL_TOPIC.
	for _, props := range []map[string]string{
		{"DELAY": "1", "REAL_TOPIC": "RMQ_SYS_TRANS_HALF_TOPIC", "REAL_QID": "0"},
		{"DELAY": "1"},
	} {
		if _, err := h.st.PutMessage(&message.Message{Topic: message.TopicSchedule, QueueID: 0, Body: []byte("z"), Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return h.st.MaxOffsetInQueue(message.TopicSchedule, 0) == 2 }, "the second schedule record")
	if _, idle, err := h.svc.deliverDue(1, t0.Add(time.Second)); !idle || err != nil {
		t.Fatalf("idle=%v err=%v", idle, err)
	}
	if st := h.svc.Stats(); st.Delivered != 0 || st.Skipped != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNextDue(t *testing.T) {
	clk := clock.NewManual(t0)
	h := newHarness(t, t.TempDir(), clk)
	defer h.close()
	if _, ok, busy := h.svc.NextDue(); ok || busy {
		t.Fatalf("empty levels: ok=%v busy=%v", ok, busy)
	}
	h.putDelayed("ND", 3, "a") // 10 s
	h.putDelayed("ND", 2, "b") // 5 s
	next, ok, busy := h.svc.NextDue()
	if !ok || busy || !next.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("NextDue = %v %v %v, want %v", next, ok, busy, t0.Add(5*time.Second))
	}
	clk.Advance(5 * time.Second)
	if _, _, busy := h.svc.NextDue(); !busy {
		t.Fatal("a due head not delivered must read as busy")
	}
	h.svc.deliverDue(2, clk.Now())
	next, ok, busy = h.svc.NextDue()
	if !ok || busy || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after delivering level 2: NextDue = %v %v %v", next, ok, busy)
	}
	clk.Advance(5 * time.Second)
	h.svc.deliverDue(3, clk.Now())
	if _, ok, busy := h.svc.NextDue(); ok || busy {
		t.Fatalf("all delivered: ok=%v busy=%v", ok, busy)
	}
}

// The service's reads of its level queues are not a consumer's gets: they
// leave the store's getMessageTimesTotal (GET_BROKER_RUNTIME_INFO) alone, as
// the Java ScheduleMessageService, which reads its consume queues directly,
// leaves DefaultMessageStore.getMessage's counters.
func TestLevelReadsAreNotCountedAsGets(t *testing.T) {
	h := newHarness(t, t.TempDir(), clock.NewManual(t0))
	defer h.close()
	h.putDelayed("Orders", 2, "a") // 5 s
	h.putDelayed("Orders", 2, "b")
	if _, idle, err := h.svc.deliverDue(2, t0.Add(5*time.Second)); !idle || err != nil {
		t.Fatalf("idle=%v err=%v", idle, err)
	}
	if off := h.svc.Offsets()[2]; off != 2 {
		t.Fatalf("offset = %d, want both messages delivered", off)
	}
	info := h.st.RuntimeInfo()
	if info["getMessageTimesTotal"] != "0" || info["getMessageTimesTotalFound"] != "0" {
		t.Fatalf("getMessageTimesTotal %s, getMessageTimesTotalFound %s after the service read its queue; want 0 and 0",
			info["getMessageTimesTotal"], info["getMessageTimesTotalFound"])
	}
}

// markingStore records whether the service's delivery puts carry
// message.Message.Delivery.
type markingStore struct {
	*store.Store
	puts, unmarked atomic.Int32
}

func (m *markingStore) PutMessage(msg *message.Message) (*store.PutResult, error) {
	if msg.Topic != message.TopicSchedule {
		m.puts.Add(1)
		if !msg.Delivery {
			m.unmarked.Add(1)
		}
	}
	return m.Store.PutMessage(msg)
}

// TestDeliveriesAreMarkedForTheDiskGuard: a due message's put carries
// message.Message.Delivery, so that the store takes it over
// diskSpaceWarningLevelRatio (store.writeRefused); refused, the pending
// messages kept their pinned commitlog file and the disk full for good (the
// 10-minute retention soak stalled that way).
func TestDeliveriesAreMarkedForTheDiskGuard(t *testing.T) {
	var ms *markingStore
	h := newHarnessWith(t, t.TempDir(), clock.NewManual(t0), func(o *Options) {
		ms = &markingStore{Store: o.Store.(*store.Store)}
		o.Store = ms
	})
	defer h.close()
	h.putDelayed("Orders", 1, "a")
	h.svc.deliverDue(1, t0.Add(time.Second))
	if got := h.delivered("Orders"); len(got) != 1 {
		t.Fatalf("%d delivered", len(got))
	}
	if ms.puts.Load() != 1 || ms.unmarked.Load() != 0 {
		t.Fatalf("%d delivery puts, %d without the Delivery mark", ms.puts.Load(), ms.unmarked.Load())
	}
}

// TestCoalescedRounds: with Coalesce, a level's messages falling due within
// the window of a round that delivered wait for the window's end and go out
// together; one due when the window has passed goes out at its own
// millisecond; NextDue reports the window's end, not busy, meanwhile.
func TestCoalescedRounds(t *testing.T) {
	clk := clock.NewManual(t0)
	h := newHarnessWith(t, t.TempDir(), clk, func(o *Options) { o.Coalesce = 5 * time.Millisecond })
	defer h.close()
	for _, d := range []int64{0, 1, 3, 10, 100} { // level 1 (1 s): due at t0 + 1 s + d
		clk.Set(t0.Add(time.Duration(d) * time.Millisecond))
		h.putDelayed("Co", 1, strconv.FormatInt(d, 10))
	}
	at := func(ms int64) time.Time { return t0.Add(time.Second + time.Duration(ms)*time.Millisecond) }
	h.svc.Start()
	sleeps := func(ms int64) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, func() bool { return clk.HasTimerAt(at(ms)) },
			"level 1 to sleep until due+"+strconv.FormatInt(ms, 10))
	}
	delivered := func(n int64) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, func() bool { return h.svc.Stats().Delivered == n }, strconv.FormatInt(n, 10)+" delivered")
	}
	sleeps(0)
	clk.Set(at(0))
	delivered(1)
	sleeps(5) // +1 and +3 wait for the end of the window of the round at +0
	clk.Set(at(1))
	if next, ok, busy := h.svc.NextDue(); busy || !ok || !next.Equal(at(5)) {
		t.Fatalf("inside the window: NextDue = %v %v %v, want %v", next, ok, busy, at(5))
	}
	clk.Set(at(4))
	if d := h.svc.Stats().Delivered; d != 1 {
		t.Fatalf("%d delivered before the window's end", d)
	}
	clk.Set(at(5))
	delivered(3)
	sleeps(10) // +10 is due as the window of the round at +5 ends
	clk.Set(at(10))
	delivered(4)
	sleeps(100) // a quiet window: at its own millisecond
	clk.Set(at(100))
	delivered(5)
	for _, m := range h.delivered("Co") {
		d, _ := strconv.ParseInt(string(m.Body), 10, 64)
		if m.StoreTimestamp < at(d).UnixMilli() {
			t.Fatalf("%s due at %v stored at %d: early", m.Body, at(d), m.StoreTimestamp)
		}
	}
}

// hookStore runs onRead once, at the start of the next ReadQueue of queue
// onQueue.
type hookStore struct {
	Store
	onQueue int32
	onRead  func()
}

func (s *hookStore) ReadQueue(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) *store.GetResult {
	if f := s.onRead; f != nil && queueID == s.onQueue {
		s.onRead = nil
		f()
	}
	return s.Store.ReadQueue(topic, queueID, offset, maxMsgs, maxBytes)
}

// NextDue racing a delivery round: it read the level's head, then the round
// delivered that head and recorded itself. NextDue must not combine the old
// head with the new round's window ("not busy, due in 5 ms" for a message
// being delivered: rmqtest's FastForward then stepped to that time, and
// broker TestMessageClockAndNextDue failed once under load with NextDue
// 5.005 s for a 5 s level). It reads offset and round in one snapshot.
func TestNextDueRacingARound(t *testing.T) {
	clk := clock.NewManual(t0)
	var hs *hookStore
	h := newHarnessWith(t, t.TempDir(), clk, func(o *Options) {
		o.Coalesce = 5 * time.Millisecond
		hs = &hookStore{Store: o.Store}
		o.Store = hs
	})
	defer h.close()
	h.putDelayed("NDR", 2, "a") // 5 s
	clk.Advance(5 * time.Second)
	hs.onQueue, hs.onRead = 1, func() { h.svc.deliverDue(2, clk.Now()) } // level 2's queue
	next, ok, busy := h.svc.NextDue()
	if ok && !busy {
		t.Fatalf("NextDue = %v, not busy, while the head it read was being delivered (now %v)", next, clk.Now())
	}
	if got := len(h.delivered("NDR")); got != 1 {
		t.Fatalf("%d delivered, want 1", got)
	}
}

// SetActive(false) holds every level, due messages included, until
// SetActive(true), which delivers them at once; the offsets stay.
func TestSetActiveHoldsAndResumesDelivery(t *testing.T) {
	clk := clock.NewManual(t0)
	h := newHarness(t, t.TempDir(), clk)
	defer h.close()
	h.svc.SetActive(false)
	h.svc.Start()
	h.putDelayed("Held", 1, "x") // 1 s
	clk.Advance(2 * time.Second)
	time.Sleep(50 * time.Millisecond) // a held level, were it not, delivers meanwhile
	if n := len(h.delivered("Held")); n != 0 || h.svc.Offsets()[1] != 0 {
		t.Fatalf("held service delivered %d (offset %d)", n, h.svc.Offsets()[1])
	}
	h.svc.SetActive(true)
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(h.delivered("Held")) == 1 }, "the delivery after SetActive(true)")
	h.svc.SetActive(false)
	h.putDelayed("Held", 1, "y")
	clk.Advance(2 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := len(h.delivered("Held")); n != 1 {
		t.Fatalf("held again, delivered %d", n)
	}
}
