package schedule

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// putPoison stores on a delay level what an unvalidated send-back used to
// store: a retry message whose %RETRY%<group> cannot be stored.
func (h *harness) putPoison(group string, level int, body string) {
	h.t.Helper()
	m := &message.Message{Topic: message.RetryTopic(group), QueueID: 0, Body: []byte(body), BornTimestamp: h.clk.Now().UnixMilli(),
		Properties: map[string]string{"DELAY": strconv.Itoa(level), "UNIQ_KEY": "U" + body}}
	if ok, err := h.levels.Rewrite(m); !ok || err != nil {
		h.t.Fatalf("rewrite: %v %v", ok, err)
	}
	if _, err := h.st.PutMessage(m); err != nil {
		h.t.Fatal(err)
	}
}

var (
	group121 = strings.Repeat("g", 121) // %RETRY% is 128 long, %DLQ% 126: the DLQ takes it
	group125 = strings.Repeat("g", 125) // neither fits: the dead-letter log takes it
	groupBad = "../../../evil_grp"      // not a directory name: the dead-letter log
)

func deadLetterPath(dir string) string { return filepath.Join(dir, "deadletter", "schedule.log") }

// checkPoisonMovedAside checks that the three poisoned messages went to the
// DLQ or the dead-letter log and the good ones were delivered.
func checkPoisonMovedAside(t *testing.T, h *harness, dir string, good []string) {
	t.Helper()
	got := h.delivered("Good")
	if len(got) != len(good) {
		t.Fatalf("delivered %d good messages, want %d", len(got), len(good))
	}
	for i, m := range got {
		if string(m.Body) != good[i] {
			t.Fatalf("good message %d = %q, want %q", i, m.Body, good[i])
		}
	}
	dlq := h.st.GetMessage(message.DLQTopic(group121), 0, 0, 10, 1<<20, nil)
	if dlq.Status != store.Found || len(dlq.Messages) != 1 {
		t.Fatalf("DLQ of the 121-character group: %v", dlq.Status)
	}
	if ext, err := message.DecodeRecord(dlq.Messages[0]); err != nil || string(ext.Body) != "p121" || ext.Properties["DELAY"] != "" {
		t.Fatalf("DLQ message %+v %v", ext, err)
	}
	dl, err := store.ReadDeadLetters(deadLetterPath(dir))
	if err != nil || len(dl) != 2 {
		t.Fatalf("dead letters %+v %v", dl, err)
	}
	if dl[0].Topic != message.RetryTopic(group125) || string(dl[0].Body) != "p125" || dl[0].Source != "schedule" ||
		!strings.Contains(dl[0].Reason, "too long") || dl[1].Topic != message.RetryTopic(groupBad) || string(dl[1].Body) != "pbad" {
		t.Fatalf("dead letters %+v", dl)
	}
}

// One send-back blocks a delay level for every topic, permanently: a
// poisoned message at the head of level 1 must not hold up the messages
// behind it.
func TestPoisonedMessageAtHeadOfLevelCannotBlockIt(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, clock.NewManual(t0))
	defer h.close()
	h.putPoison(group125, 1, "p125")
	h.putPoison(groupBad, 1, "pbad")
	h.putPoison(group121, 1, "p121")
	h.putDelayed("Good", 1, "a")
	h.putDelayed("Good", 1, "b")
	if _, idle, err := h.svc.deliverDue(1, t0.Add(time.Second)); !idle || err != nil {
		t.Fatalf("deliverDue: idle %v err %v", idle, err)
	}
	checkPoisonMovedAside(t, h, dir, []string{"a", "b"})
	if st := h.svc.Stats(); st.Delivered != 2 || st.ToDLQ != 1 || st.DeadLettered != 2 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	if off := h.svc.Offsets()[1]; off != 5 {
		t.Fatalf("level 1 offset %d, want 5", off)
	}
}

// Poison stored before the fix (or before a restart) is handled by the
// running service too: nothing stays stuck across a restart.
func TestPoisonedMessageStoredBeforeRestartCannotBlockLevel(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	h.putPoison(group125, 1, "p125")
	h.putPoison(groupBad, 1, "pbad")
	h.putPoison(group121, 1, "p121")
	h.putDelayed("Good", 1, "a")
	h.close()

	h = newHarness(t, dir, clk)
	defer h.close()
	h.putDelayed("Good", 1, "b")
	clk.Advance(time.Second)
	h.svc.Start()
	testutil.WaitFor(t, 10*time.Second, func() bool { return h.svc.Stats().Delivered == 2 }, "both messages delivered")
	checkPoisonMovedAside(t, h, dir, []string{"a", "b"})
	if st := h.svc.Stats(); st.ToDLQ != 1 || st.DeadLettered != 2 {
		t.Fatalf("stats %+v", st)
	}
}
