package transaction

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

func TestTransactionHookRewritesTranMsgSends(t *testing.T) {
	cases := []struct {
		name      string
		topic     string
		props     map[string]string
		sysFlag   int32
		wantHalf  bool
		wantFlags int32
	}{
		{name: "TRAN_MSG true", topic: "T", props: map[string]string{"TRAN_MSG": "true"}, sysFlag: 0x4 | 0x1, wantHalf: true, wantFlags: 0x1},
		{name: "TRAN_MSG upper case", topic: "T", props: map[string]string{"TRAN_MSG": "TRUE"}, sysFlag: 0x4, wantHalf: true, wantFlags: 0},
		{name: "TRAN_MSG without prepared flag", topic: "T", props: map[string]string{"TRAN_MSG": "true"}, sysFlag: 0x2, wantHalf: true, wantFlags: 0x2},
		{name: "TRAN_MSG false", topic: "T", props: map[string]string{"TRAN_MSG": "false"}, sysFlag: 0x4, wantFlags: 0x4},
		{name: "prepared flag only", topic: "T", props: map[string]string{}, sysFlag: 0x4, wantFlags: 0x4},
		{name: "rollback flag only", topic: "T", props: map[string]string{}, sysFlag: 0xC, wantFlags: 0xC},
		{name: "already half", topic: message.TopicTransHalf, props: map[string]string{"TRAN_MSG": "true", "REAL_TOPIC": "X", "REAL_QID": "3"}, wantHalf: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &message.Message{Topic: c.topic, QueueID: 5, Properties: c.props, SysFlag: c.sysFlag}
			if err := Hook(m); err != nil {
				t.Fatal(err)
			}
			if got := m.Topic == message.TopicTransHalf; got != c.wantHalf {
				t.Fatalf("half = %v, want %v (topic %s)", got, c.wantHalf, m.Topic)
			}
			if c.topic == message.TopicTransHalf {
				if m.Properties["REAL_TOPIC"] != "X" || m.Properties["REAL_QID"] != "3" {
					t.Fatalf("a half message was rewritten again: %v", m.Properties)
				}
				return
			}
			if c.wantHalf {
				if m.QueueID != 0 || m.Properties["REAL_TOPIC"] != "T" || m.Properties["REAL_QID"] != "5" {
					t.Fatalf("half message %+v", m)
				}
			} else if m.QueueID != 5 || m.Properties["REAL_TOPIC"] != "" {
				t.Fatalf("message changed: %+v", m)
			}
			if m.SysFlag != c.wantFlags {
				t.Fatalf("sysFlag %#x, want %#x", m.SysFlag, c.wantFlags)
			}
		})
	}
}

func TestTransactionIDFor(t *testing.T) {
	half := &message.Message{Topic: message.TopicTransHalf, Properties: map[string]string{"UNIQ_KEY": "U1"}}
	plain := &message.Message{Topic: "T", Properties: map[string]string{"UNIQ_KEY": "U2"}}
	res := &store.PutResult{}
	if got := IDFor(half, res); got != "U1" {
		t.Fatalf("half: %q", got)
	}
	if got := IDFor(plain, res); got != "" {
		t.Fatalf("plain: %q", got)
	}
	if got := IDFor(half, nil); got != "" {
		t.Fatalf("failed put: %q", got)
	}
}

func TestTransactionCheckCounters(t *testing.T) {
	cases := []struct {
		name        string
		times       string
		max         int
		wantNext    int
		wantDiscard bool
	}{
		{name: "first check", times: "", max: 15, wantNext: 1},
		{name: "counting up", times: "3", max: 15, wantNext: 4},
		{name: "last allowed", times: "14", max: 15, wantNext: 15},
		{name: "budget spent", times: "15", max: 15, wantNext: 15, wantDiscard: true},
		{name: "unreadable", times: "x", max: 15, wantNext: 0},
	}
	for _, c := range cases {
		next, discard := txNextCheckTimes(c.times, c.max)
		if next != c.wantNext || discard != c.wantDiscard {
			t.Errorf("%s: got %d %v, want %d %v", c.name, next, discard, c.wantNext, c.wantDiscard)
		}
	}
	immunity := []struct {
		v    string
		want int64
	}{{"30", 30000}, {"-1", 6000}, {"abc", 6000}, {"0", 0}}
	for _, c := range immunity {
		if got := txImmunityMs(c.v, 6*time.Second); got != c.want {
			t.Errorf("immunity %q: %d, want %d", c.v, got, c.want)
		}
	}
}

func TestTransactionReleaseRule(t *testing.T) {
	const nowMs = 100_000
	cases := []struct {
		name      string
		decision  txDecision
		unfenced  bool  // decided before the pass began, fence still unset
		next      int64 // where the walk stopped
		passEnd   int64 // half queue end after the pass's copies
		wantKept  bool
		wantFence int64
		wantOpOff int64
	}{
		{name: "fenced, walked past, old", decision: txDecision{atMs: nowMs - 20_000, fence: 5}, next: 5, passEnd: 9, wantFence: 5, wantOpOff: 11},
		{name: "walk short of the fence", decision: txDecision{atMs: nowMs - 20_000, fence: 5}, next: 4, passEnd: 9, wantKept: true, wantFence: 5, wantOpOff: 10},
		{name: "too recent", decision: txDecision{atMs: nowMs - 1_000, fence: 5}, next: 9, passEnd: 9, wantKept: true, wantFence: 5, wantOpOff: 10},
		{name: "fence set by this pass, copies made", decision: txDecision{atMs: nowMs - 20_000, fence: -1}, unfenced: true, next: 7, passEnd: 9, wantKept: true, wantFence: 9, wantOpOff: 10},
		{name: "fence set by this pass, queue walked to its end", decision: txDecision{atMs: nowMs - 20_000, fence: -1}, unfenced: true, next: 9, passEnd: 9, wantFence: 9, wantOpOff: 11},
		{name: "decided during the pass", decision: txDecision{atMs: nowMs - 20_000, fence: -1}, next: 9, passEnd: 9, wantKept: true, wantFence: -1, wantOpOff: 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			om := memOffsets{}
			d := c.decision
			s := &Service{
				offsets: om, timeout: 6 * time.Second, interval: 10 * time.Second,
				decided: map[int64]*txDecision{3: &d, 77: {atMs: nowMs, fence: -1}},
				// op 10 decided chain 3, op 11 chain 77 (kept: decided just now), op 12 is not read yet.
				ops: []txOpEntry{{offset: 10, origin: 3}, {offset: 11, origin: 77}}, opRead: 12,
			}
			var unfenced []*txDecision
			if c.unfenced {
				unfenced = append(unfenced, &d)
			}
			s.release(c.next, &txPass{nowMs: nowMs, end: c.passEnd}, unfenced)
			if _, kept := s.decided[3]; kept != c.wantKept {
				t.Fatalf("kept = %v, want %v", kept, c.wantKept)
			}
			if d.fence != c.wantFence {
				t.Fatalf("fence %d, want %d", d.fence, c.wantFence)
			}
			if off, _ := om.Query(txSysGroup, message.TopicTransOpHalf, 0); off != c.wantOpOff {
				t.Fatalf("op offset %d, want %d", off, c.wantOpOff)
			}
		})
	}
}

// memOffsets is an in-memory Offsets.
type memOffsets map[string]int64

func (m memOffsets) key(group, topic string, queueID int32) string {
	return topic + "@" + group + "/" + strconv.Itoa(int(queueID))
}

func (m memOffsets) Query(group, topic string, queueID int32) (int64, bool) {
	off, ok := m[m.key(group, topic, queueID)]
	return off, ok
}

func (m memOffsets) Commit(group, topic string, queueID int32, offset int64) {
	m[m.key(group, topic, queueID)] = offset
}
