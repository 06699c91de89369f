package timer

import (
	"strconv"
	"time"

	"github.com/rmqio/rmq/message"
)

// Timer messages sent and checked for delivery by the tests of full disks
// (diskfull_tmpfs_test.go) and of injected faults (fault_test.go).

// deliverAtProps is the properties of a timer message due at ms.
func deliverAtProps(ms int64) map[string]string {
	return map[string]string{message.PropTimerDeliverMs: strconv.FormatInt(ms, 10)}
}

// checkDelivered waits until every message of acked (due at due[uniq key])
// is on topic and checks that none came early.
func checkDelivered(e *env, topic string, acked []*message.Message, due map[string]int64) {
	e.t.Helper()
	got := e.waitCount(topic, len(acked))
	counts := uniqCounts(got)
	for _, m := range acked {
		if uk := m.Properties[message.PropUniqKey]; counts[uk] == 0 {
			e.t.Errorf("acknowledged timer %s lost", uk)
		}
	}
	for _, m := range got {
		uk := m.Properties[message.PropUniqKey]
		deq, err := strconv.ParseInt(m.Properties[message.PropTimerDequeueMs], 10, 64)
		if err != nil || deq < due[uk] {
			e.t.Errorf("%s due at %d delivered at %d (%v)", uk, due[uk], deq, err)
		}
	}
}

// fullDiskTimers tracks the timer messages a test sent and had acknowledged.
type fullDiskTimers struct {
	e     *env
	acked []*message.Message
	due   map[string]int64
}

func (f *fullDiskTimers) send(at int64) (*message.Message, error) {
	m, err := f.e.trySend("T", deliverAtProps(at))
	if err == nil {
		f.acked = append(f.acked, m)
		if f.due == nil {
			f.due = map[string]int64{}
		}
		f.due[m.Properties[message.PropUniqKey]] = at
	}
	return m, err
}

func (f *fullDiskTimers) mustSend(at int64) *message.Message {
	f.e.t.Helper()
	m, err := f.send(at)
	if err != nil {
		f.e.t.Fatalf("send: %v", err)
	}
	return m
}

// deliverAll checks that nothing is delivered before first and that
// everything acknowledged is delivered, none early, by last.
func (f *fullDiskTimers) deliverAll(first, last int64) {
	e := f.e
	e.t.Helper()
	e.settle()
	e.advance(time.Duration(first-1-e.nowMs()) * time.Millisecond)
	e.settle()
	if got := e.got("T"); len(got) != 0 {
		e.t.Fatalf("%d timers delivered early", len(got))
	}
	e.advance(time.Duration(last-e.nowMs()) * time.Millisecond)
	checkDelivered(e, "T", f.acked, f.due)
}
