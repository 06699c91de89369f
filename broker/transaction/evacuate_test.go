package transaction

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// checkLog records checks by transaction id.
type checkLog struct {
	mu sync.Mutex
	by map[string]int
}

func (c *checkLog) Check(ch Check) bool {
	c.mu.Lock()
	c.by[ch.TransactionID]++
	c.mu.Unlock()
	return true
}

var errKilled = errors.New("killed")

// TestEvacuateCrashYieldsDuplicatesNeverLoss evacuates the first half
// messages (those below a commitlog offset, all within their timeout) and
// kills the service at each step, as kill -9 would: the store keeps the
// copies made, the walk's progress is what was committed. A service opened
// afresh over the same store and offsets then checks every half message
// once it is past its timeout: none is lost and none is checked twice. A
// copy made before the kill supersedes its original (check.go superseded:
// the restarted service finds it beyond the committed progress), and
// without a kill each is checked once, about its copy when it was moved.
func TestEvacuateCrashYieldsDuplicatesNeverLoss(t *testing.T) {
	const n, moved = 6, 4
	for _, tc := range []struct {
		name string
		hit  int // the n-th copy kills the service; 0: none
	}{{"none", 0}, {"after-put/1", 1}, {"after-put/4", moved}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC))
			st, err := store.Open(store.Options{Dir: t.TempDir(), MappedFileSizeCommitLog: 64 << 10, MappedFileSizeConsumeQueue: 20 * 64, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for i := range n {
				m := &message.Message{Topic: "T", Body: []byte("h" + strconv.Itoa(i)), BornTimestamp: clk.Now().UnixMilli(),
					Properties: map[string]string{message.PropTranMsg: "true", message.PropProducerGroup: "pg", message.PropUniqKey: "U" + strconv.Itoa(i)}}
				if err := Hook(m); err != nil {
					t.Fatal(err)
				}
				if _, err := st.PutMessage(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.WaitDispatched(t.Context(), st.MaxPhyOffset()); err != nil {
				t.Fatal(err)
			}
			below, ok := st.CommitLogOffsetOf(message.TopicTransHalf, 0, moved)
			if !ok {
				t.Fatal("no half unit at", moved)
			}
			offsets := memOffsets{}
			hits := 0
			open := func(fp func(string) error) *Service {
				s, err := New(Options{Store: st, Put: st, Topics: noTopics{}, Offsets: offsets, Producers: noProducers{},
					Timeout: 30 * time.Second, CheckInterval: time.Hour, Clock: clk, failpoint: fp})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open(func(name string) error {
				if name == "evacuate:after-put" {
					if hits++; hits == tc.hit {
						return errKilled
					}
				}
				return nil
			})
			checks := &checkLog{by: map[string]int{}}
			s.SetChecker(checks)
			s.Evacuate(below)
			if len(checks.by) != 0 {
				t.Fatalf("checks sent for half messages within their timeout: %v", checks.by)
			}
			progress, _ := offsets.Query(txSysGroup, message.TopicTransHalf, 0)
			switch {
			case tc.hit == 0 && progress != moved:
				t.Fatalf("walk progress %d after evacuating, want %d", progress, moved)
			case tc.hit > 0 && progress != 0:
				t.Fatalf("walk progress %d committed by a killed pass", progress)
			}
			// The restarted walk sees what is dispatched; the copies' units
			// may still be on their way (a later pass would walk them).
			if err := st.WaitDispatched(t.Context(), st.MaxPhyOffset()); err != nil {
				t.Fatal(err)
			}
			copies := int(st.MaxOffsetInQueue(message.TopicTransHalf, 0)) - n

			s = open(nil) // the restart
			s.SetChecker(checks)
			clk.Advance(31 * time.Second)
			s.checkNow()
			dups := 0
			for i := range n {
				c := checks.by["U"+strconv.Itoa(i)]
				if c == 0 {
					t.Fatalf("half message %d lost: never checked (%v)", i, checks.by)
				}
				dups += c - 1
			}
			if dups != 0 {
				t.Fatalf("%d duplicate checks with %d copies made, want 0", dups, copies)
			}
		})
	}
}
