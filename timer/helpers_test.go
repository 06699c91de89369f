package timer

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// epoch is the manual clock's start: a whole second, so tests can aim at
// slot boundaries.
var epoch = time.UnixMilli(1_700_000_000_000)

// env is a real message store plus a timer store on a manual clock.
type env struct {
	t      testing.TB
	dir    string
	clk    *clock.Manual
	st     *store.Store
	opts   Options
	cur    atomic.Pointer[TimerStore]
	seq    atomic.Int64
	mu     sync.Mutex
	putErr func(m *message.Message) error // injected put failures (faultStore)

	storeMutate func(*store.Options)
}

func (e *env) setPutErr(fn func(m *message.Message) error) {
	e.mu.Lock()
	e.putErr = fn
	e.mu.Unlock()
}

// faultStore is the store as the timer store sees it, with injectable put
// failures.
type faultStore struct{ e *env }

func (f faultStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	f.e.mu.Lock()
	fn := f.e.putErr
	f.e.mu.Unlock()
	if fn != nil {
		if err := fn(m); err != nil {
			return nil, err
		}
	}
	return f.e.st.PutMessage(m)
}

func (f faultStore) ReadQueue(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) *store.GetResult {
	return f.e.st.ReadQueue(topic, queueID, offset, maxMsgs, maxBytes)
}
func (f faultStore) LookMessageByOffset(o int64) ([]byte, error) {
	return f.e.st.LookMessageByOffset(o)
}
func (f faultStore) MinOffsetInQueue(t string, q int32) int64 { return f.e.st.MinOffsetInQueue(t, q) }
func (f faultStore) MaxOffsetInQueue(t string, q int32) int64 { return f.e.st.MaxOffsetInQueue(t, q) }
func (f faultStore) MaxPhyOffset() int64                      { return f.e.st.MaxPhyOffset() }

// newEnv opens a store and a started timer store in a temp dir. mutate may
// change the timer options (defaults: precision 100 ms, 1200 slots = 120 s
// ring, roll window 60 s, 4 KiB TimerLog segments).
func newEnv(t *testing.T, mutate func(*Options)) *env {
	t.Helper()
	return newEnvStore(t, nil, mutate)
}

// newEnvStore is newEnv with changes to the message store's options too.
func newEnvStore(t testing.TB, storeMutate func(*store.Options), mutate func(*Options)) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), storeMutate, mutate)
}

// newEnvIn is newEnvStore with both stores under dir.
func newEnvIn(t testing.TB, dir string, storeMutate func(*store.Options), mutate func(*Options)) *env {
	t.Helper()
	e := &env{t: t, dir: dir, clk: clock.NewManual(epoch), storeMutate: storeMutate}
	e.openStore()
	e.opts = Options{
		Dir: e.dir, PrecisionMs: 100, WheelSlots: 1200, RollWindow: 60 * time.Second,
		MappedFileSizeTimerLog: 4096, Clock: e.clk, BrokerName: "broker-a", Store: faultStore{e},
	}
	e.opts.Logger = testlog.New(t)
	if mutate != nil {
		mutate(&e.opts)
	}
	e.openTimer()
	t.Cleanup(func() {
		if ts := e.cur.Load(); ts != nil {
			ts.Stop()
		}
		e.st.Close()
	})
	return e
}

func (e *env) openStore() {
	e.t.Helper()
	so := store.Options{
		Dir: e.dir, MappedFileSizeCommitLog: 1 << 20, MappedFileSizeConsumeQueue: 20 * 1024,
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		OnDispatch: func(d store.DispatchRequest) {
			if d.Topic == message.TopicWheelTimer {
				e.cur.Load().Notify()
			}
		},
	}
	if e.storeMutate != nil {
		e.storeMutate(&so)
	}
	st, err := store.Open(so)
	if err != nil {
		e.t.Fatalf("store.Open: %v", err)
	}
	e.st = st
}

func (e *env) openTimer() *TimerStore {
	e.t.Helper()
	ts, err := Open(e.opts)
	if err != nil {
		e.t.Fatalf("timer.Open: %v", err)
	}
	e.cur.Store(ts)
	ts.Start()
	return ts
}

func (e *env) ts() *TimerStore { return e.cur.Load() }

// restart stops the timer store cleanly and opens it again.
func (e *env) restart() *TimerStore {
	e.t.Helper()
	if err := e.ts().Stop(); err != nil {
		e.t.Fatalf("Stop: %v", err)
	}
	return e.openTimer()
}

// crashRestart abandons the timer store as a killed process would and opens
// it again.
func (e *env) crashRestart() *TimerStore {
	e.t.Helper()
	e.ts().crash()
	return e.openTimer()
}

func (e *env) nowMs() int64 { return e.opts.Clock.Now().UnixMilli() }

// advance moves the manual clock.
func (e *env) advance(d time.Duration) { e.clk.Advance(d) }

// send admits and stores a message on topic like the broker's send path and
// returns it with its uniq key set.
func (e *env) send(topic string, props map[string]string) *message.Message {
	e.t.Helper()
	m, err := e.trySend(topic, props)
	if err != nil {
		e.t.Fatalf("send: %v", err)
	}
	return m
}

func (e *env) trySend(topic string, props map[string]string) (*message.Message, error) {
	n := e.seq.Add(1)
	p := map[string]string{message.PropUniqKey: fmt.Sprintf("UK%08d", n)}
	for k, v := range props {
		p[k] = v
	}
	m := &message.Message{Topic: topic, QueueID: 0, Body: []byte("body-" + strconv.FormatInt(n, 10)), Properties: p,
		BornTimestamp: e.nowMs(), BornHost: netip.MustParseAddrPort("127.0.0.1:5555")}
	if _, _, err := AdmitMessage(m, e.nowMs(), e.opts.MaxDelaySec); err != nil {
		return nil, err
	}
	if _, err := e.st.PutMessage(m); err != nil {
		return nil, err
	}
	return m, nil
}

// sendAt sends a message with TIMER_DELIVER_MS = at (ms).
func (e *env) sendAt(topic string, at int64) *message.Message {
	return e.send(topic, map[string]string{message.PropTimerDeliverMs: strconv.FormatInt(at, 10)})
}

// got returns every message stored on topic queue 0.
func (e *env) got(topic string) []*message.MessageExt {
	e.t.Helper()
	return storetest.Messages(e.t, e.st, topic, 0)
}

// waitFor is testutil.WaitFor with a 20 s limit that also logs the timer
// store's stats when it times out.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	done := false
	defer func() {
		if !done {
			e.t.Logf("timer store stats at the timeout: %+v", e.ts().Stats())
		}
	}()
	testutil.WaitFor(e.t, 20*time.Second, cond, what)
	done = true
}

// waitCount waits until topic holds n messages.
func (e *env) waitCount(topic string, n int) []*message.MessageExt {
	e.t.Helper()
	var got []*message.MessageExt
	e.waitFor(fmt.Sprintf("%d messages on %s", n, topic), func() bool {
		got = e.got(topic)
		return len(got) >= n
	})
	return got
}

// settle waits until the timer store has read the whole timer queue (and
// every record is dispatched) and has nothing due at the current clock left
// to do.
func (e *env) settle() {
	e.t.Helper()
	e.waitFor("timer store to settle", func() bool { return settled(e) })
}

// settled reports whether the pipeline is quiescent at the current clock:
// every stored record is dispatched, the enqueue has linked the whole timer
// queue, no commit is asked for or under way, and the dequeue is not
// delivering and has nothing due. On the manual
// clock quiescence lasts until the test sends or advances.
//
// Everything is read under the timer store's lock, in this order, so that the
// answer holds at one instant although the store's dispatcher runs on. With
// the lock held, the only goroutines that can still put a record are a
// dequeue delivering a batch (deqWakeAt stays MinInt64 until it takes the
// lock again) and an enqueue delivering a bypassed record (it moves the queue
// offset past that record only under the lock, so EnqueueBehind > 0 until
// then). When neither is at work no record can enter the commitlog while the
// lock is held: what is dispatched when DispatchBehind is read stays all
// there is, and the timer queue's end read after it is final. (Read outside
// the lock, a delivery could put a roll between the dispatch check and the
// dequeue check and finish before the latter.)
func settled(e *env) bool {
	ts := e.ts()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e.st.DispatchBehind() != 0 {
		return false
	}
	if ts.commitRequested { // a commit is on its way
		return false
	}
	if !ts.flushMu.TryLock() { // a flush is under way (flush takes mu only inside)
		return false
	}
	ts.flushMu.Unlock()
	if !ts.closed && ts.opts.Store.MaxOffsetInQueue(message.TopicWheelTimer, 0) > ts.queueOffset {
		return false
	}
	return dequeueIdleLocked(ts, ts.nowMs())
}

// dequeueIdleLocked reports whether a dequeue step at now would neither
// deliver nor open or close a slot: no batch in flight, no slot due, and in
// the open slot no entry due, absorbed or not. The dequeue opens a slot in
// one step and absorbs its entries in the next, and links made while a slot
// is open wait for the dequeue's next wake; so an entry due at now may still
// be only in the slot's chain, and a slot just opened may hold delivered-
// before-a-restart entries that Pending counts until they are absorbed.
// Unabsorbed entries not yet due are no work at now: the dequeue absorbs them
// by their time at the latest. With Coalesce, what is due inside the round
// window waits for the window's end (ts.rounds.Next) and is no work at now
// either. ts.mu must be held.
func dequeueIdleLocked(ts *TimerStore, now int64) bool {
	if ts.deqWakeAt == math.MinInt64 { // a batch is being delivered
		return false
	}
	due := func(at int64) bool { return ts.rounds.Next(at) <= now }
	// A dequeue whose wake time has come has a step to run: the step that
	// opens a slot leaves the wake time as it was until the next one absorbs
	// the slot (NextDue calls that busy too). A closed store runs no step.
	if !ts.closed && ts.deqWakeAt != math.MaxInt64 && due(ts.deqWakeAt) {
		return false
	}
	o := ts.open
	if o == nil {
		next, ok := ts.nonEmpty.min(ts.readTime)
		return !ok || !due(next)
	}
	if len(o.imm) > 0 || (len(o.items) > 0 && due(o.items[0].target)) || due(o.t+ts.p) {
		return false
	}
	s, live := ts.wh.get(o.t)
	for pos := s.last; live && pos > o.scannedNext && pos >= 0; {
		u, ok := ts.tl.read(pos)
		if !ok || ts.slotOf(u.target()) != o.t || u.prevPos >= pos {
			break // absorb skips the rest of a broken chain too
		}
		if due(u.target()) {
			return false
		}
		pos = u.prevPos
	}
	return true
}

// uniqCounts maps uniq key → deliveries.
func uniqCounts(ms []*message.MessageExt) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		out[m.Properties[message.PropUniqKey]]++
	}
	return out
}
