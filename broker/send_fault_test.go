package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// A send whose commitlog write or sync fails is answered with an error
// code, never SUCCESS; the broker keeps serving, and what it acknowledged
// is there after a restart.
func TestSendAnswersAnIOErrorWithAnErrorCode(t *testing.T) {
	inj := &store.Injector{}
	m := clock.NewManual(time.Unix(1_700_000_000, 0))
	o := coreTestOptions(t, func(o *Options) {
		o.FlushDiskType = "SYNC_FLUSH"
		o.Clock = m
	})
	o.FS = store.NewErrorFS(inj)
	tb := startBrokerWith(t, o, nil)
	acked := 0
	send := func(want bool, what string) {
		t.Helper()
		// While a send waits, the clock moves on past its SyncFlushTimeout
		// (its outcome does not depend on how often); a send that a
		// successful flush answers never waits for it.
		done := make(chan *remoting.Command, 1)
		go func() { done <- tb.send(sendArgs{topic: "FaultSend", body: []byte("m")}) }()
		var resp *remoting.Command
		for resp == nil {
			select {
			case resp = <-done:
			case <-time.After(5 * time.Millisecond):
				if !want {
					m.Advance(time.Duration(o.SyncFlushTimeout) * time.Millisecond)
				}
			}
		}
		if want && resp.Code != remoting.Success {
			t.Fatalf("%s: code %d remark %q, want SUCCESS", what, resp.Code, resp.Remark)
		}
		if !want && resp.Code == remoting.Success {
			t.Fatalf("%s answered SUCCESS (faults %v)", what, inj.Hits())
		}
		if resp.Code == remoting.Success {
			acked++
		}
	}
	send(true, "a send before any fault")
	// Data: the record's write, not the warmer's zeros.
	inj.Add(store.Rule{Op: store.OpWrite, Nth: 1, Path: "commitlog", Data: func(b []byte) bool { return bytes.Contains(b, []byte("FaultSend")) }})
	send(false, "a send whose commitlog write fails")
	send(true, "the next send")
	inj.Add(store.Rule{Op: store.OpMsync, Path: "commitlog"})
	send(false, "a send whose commitlog sync fails")
	inj.Clear()
	send(true, "a send once the disk healed")
	if len(inj.Hits()) < 2 {
		t.Fatalf("faults injected: %v", inj.Hits())
	}
	tb.Shutdown()
	tb2 := startBrokerWith(t, o, nil)
	tb2.Store().WaitDispatched(t.Context(), tb2.Store().MaxPhyOffset())
	// The send whose sync failed was stored (FLUSH_DISK_TIMEOUT means
	// that), so the queue holds the acknowledged ones and at most that one.
	if n := tb2.Store().MaxOffsetInQueue("FaultSend", 0); n < int64(acked) || n > int64(acked)+1 {
		t.Fatalf("queue 0 holds %d messages after the restart; %d were acknowledged", n, acked)
	}
}
