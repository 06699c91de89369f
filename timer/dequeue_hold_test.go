package timer

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// SetDequeue(false) holds the delivery of due timers while the enqueue goes
// on; SetDequeue(true) delivers them, none lost.
func TestSetDequeueHoldsAndResumes(t *testing.T) {
	e := newEnv(t, nil)
	e.ts().SetDequeue(false)
	now := e.nowMs()
	e.sendAt("Held", now+1000)
	testutil.WaitFor(t, 10*time.Second, func() bool { return e.ts().Stats().Enqueued == 1 }, "the enqueue")
	e.advance(2 * time.Second)
	time.Sleep(50 * time.Millisecond) // a held dequeue, were it not, delivers meanwhile
	if got := e.got("Held"); len(got) != 0 {
		t.Fatalf("held dequeue delivered %d", len(got))
	}
	if st := e.ts().Stats(); st.Enqueued != 1 {
		t.Fatalf("enqueue held too: %+v", st)
	}
	e.ts().SetDequeue(true)
	e.waitCount("Held", 1)
}
