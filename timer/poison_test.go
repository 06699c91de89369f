package timer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// A poisoned timer message (its real topic can never be stored) at the head
// of a slot must not hold up the wheel: it goes to its group's DLQ when that
// can be stored, else to the dead-letter log, and the messages behind it are
// delivered. The same holds for poison stored before a restart.
func TestPoisonedMessageAtHeadOfSlotCannotBlockWheel(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "running"
		if restart {
			name = "across a crash restart"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			at := e.nowMs() + 500
			group121, group125 := strings.Repeat("g", 121), strings.Repeat("g", 125)
			p121 := e.sendAt(message.RetryTopic(group121), at)
			p125 := e.sendAt(message.RetryTopic(group125), at)
			pbad := e.sendAt(message.RetryTopic("../../../evil_grp"), at)
			var good []*message.Message
			for range 3 {
				good = append(good, e.sendAt("Orders", at))
			}
			e.settle()
			if restart {
				e.crashRestart()
				e.settle()
			}
			e.advance(time.Second)
			e.waitCount("Orders", len(good))
			e.waitFor("poison moved aside", func() bool { st := e.ts().Stats(); return st.ToDLQ+st.DeadLettered == 3 })
			e.settle()
			counts := uniqCounts(e.got("Orders"))
			for _, m := range good {
				if counts[m.Properties[message.PropUniqKey]] != 1 {
					t.Fatalf("deliveries %v", counts)
				}
			}
			dlq := e.st.GetMessage(message.DLQTopic(group121), 0, 0, 10, 1<<20, nil)
			if dlq.Status != store.Found || len(dlq.Messages) != 1 {
				t.Fatalf("DLQ: %v", dlq.Status)
			}
			if ext, err := message.DecodeRecord(dlq.Messages[0]); err != nil || ext.Properties[message.PropUniqKey] != p121.Properties[message.PropUniqKey] {
				t.Fatalf("DLQ message %+v %v", ext, err)
			}
			dl, err := store.ReadDeadLetters(filepath.Join(e.dir, "deadletter", "timer.log"))
			if err != nil || len(dl) != 2 {
				t.Fatalf("dead letters %+v %v", dl, err)
			}
			keys := map[string]bool{dl[0].Properties[message.PropUniqKey]: true, dl[1].Properties[message.PropUniqKey]: true}
			if !keys[p125.Properties[message.PropUniqKey]] || !keys[pbad.Properties[message.PropUniqKey]] || dl[0].Source != "timer" {
				t.Fatalf("dead letters %+v", dl)
			}
			if st := e.ts().Stats(); st.ToDLQ != 1 || st.DeadLettered != 2 || st.PutRetries != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
