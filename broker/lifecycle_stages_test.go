package broker

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// TestStoreCallbacksNeverReachHalfBuiltBroker: the store calls back from
// inside Open (recovery re-dispatches the commitlog, the cleanup may ask
// what to keep) while New has not built the services yet. Those callbacks
// are bound to values that exist before the store, never to a method of the
// Broker being built; fired during Open they wake nobody, keep every file and
// move nothing, and once New returns they reach the finished Broker. The
// messages re-dispatched during Open are served after Start (a pull, a
// delay level delivering).
func TestStoreCallbacksNeverReachHalfBuiltBroker(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	o := coreTestOptions(t, func(o *Options) { o.Clock = clk })
	tb := startBrokerWith(t, o, nil)
	tb.mustSend(sendArgs{topic: "StagesT", body: []byte("plain")})
	tb.mustSend(sendArgs{topic: "StagesD", body: []byte("delayed"), props: coreProps("DELAY", "2")}) // 5 s
	tb.waitDispatched()
	tb.stop()
	// Without checkpoint and consume queues, the next Open rebuilds every
	// queue by dispatching each record during recovery.
	if err := os.Remove(filepath.Join(o.StorePathRootDir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(o.StorePathRootDir, "consumequeue")); err != nil {
		t.Fatal(err)
	}

	var (
		so           store.Options
		opening      atomic.Bool // from the store's options until New returns
		dispatched   atomic.Int32
		openProbeErr atomic.Pointer[string]
	)
	o2 := o
	o2.storeOptions = func(s *store.Options) {
		for name, fn := range map[string]any{
			"OnDispatch": s.OnDispatch, "OnDispatchBatch": s.OnDispatchBatch, "TagsCode": s.TagsCode,
			"Retention.ProtectedOffset": s.Retention.ProtectedOffset, "Retention.Evacuate": s.Retention.Evacuate,
		} {
			if got := funcName(fn); strings.Contains(got, "(*Broker)") {
				t.Errorf("store callback %s is %s: bound to the Broker being built", name, got)
			}
		}
		so = *s
		opening.Store(true)
		inner := s.OnDispatch
		s.OnDispatch = func(d store.DispatchRequest) {
			if opening.Load() {
				dispatched.Add(1)
				// Every callback, asked mid-Open, answers as for a broker
				// with nothing to protect yet: keep every file.
				if p := so.Retention.ProtectedOffset(true); p != 0 {
					msg := "ProtectedOffset during Open is not 0 (keep every file)"
					openProbeErr.Store(&msg)
				}
				so.Retention.Evacuate(math.MaxInt64)
			}
			inner(d)
		}
	}
	b, err := New(o2)
	opening.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if dispatched.Load() < 2 {
		_ = b.Shutdown()
		t.Fatalf("recovery dispatched %d records during Open, want both", dispatched.Load())
	}
	if p := openProbeErr.Load(); p != nil {
		t.Error(*p)
	}
	// Attached: the Broker answers now (nothing delivers before Start, so
	// nothing is pinned by the delay levels).
	if p := so.Retention.ProtectedOffset(false); p == 0 {
		t.Error("ProtectedOffset after New still keeps every file: the Broker was not attached")
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		t.Fatal(err)
	}
	tb = &testBroker{Broker: b, t: t, opts: o2, json: tb.json, bin: tb.bin}
	t.Cleanup(func() {
		if err := b.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if got := tb.messagesOn("StagesT", 0); len(got) != 1 || string(got[0].Body) != "plain" {
		t.Fatalf("recovered queue holds %d messages", len(got))
	}
	if got := tb.messagesOn(message.TopicSchedule, 1); len(got) != 1 {
		t.Fatalf("recovered delay level holds %d messages", len(got))
	}
	clk.Advance(5 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("StagesD", 0)) == 1 }, "delay-level delivery of a recovered message")
}

// funcName is the name of the function fn (a func value) refers to; a
// method value's name is "pkg.(*T).method-fm".
func funcName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.IsNil() {
		return "<nil>"
	}
	return runtime.FuncForPC(v.Pointer()).Name()
}
