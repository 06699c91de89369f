package timer

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
)

func TestAdmit(t *testing.T) {
	const now = int64(1_700_000_000_000)
	const maxSec = DefaultMaxDelaySec
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	tests := []struct {
		name      string
		props     map[string]string
		maxSec    int64
		wantMs    int64
		wantTimer bool
		wantDue   bool
		wantErr   string // substring of the remark; empty: no error
	}{
		{name: "no timer property", props: map[string]string{"TAGS": "a"}},
		{name: "already admitted", props: map[string]string{message.PropTimerOutMs: i(now + 5), message.PropTimerDelaySec: "9"}},
		{name: "deliver ms", props: map[string]string{message.PropTimerDeliverMs: i(now + 1234)}, wantMs: now + 1234, wantTimer: true},
		{name: "delay sec", props: map[string]string{message.PropTimerDelaySec: "10"}, wantMs: now + 10_000, wantTimer: true},
		{name: "delay ms", props: map[string]string{message.PropTimerDelayMs: "250"}, wantMs: now + 250, wantTimer: true},
		{name: "plus sign accepted like Long.parseLong", props: map[string]string{message.PropTimerDelayMs: "+250"}, wantMs: now + 250, wantTimer: true},
		{name: "sec beats ms and deliver", props: map[string]string{message.PropTimerDelaySec: "3", message.PropTimerDelayMs: "1", message.PropTimerDeliverMs: i(now + 7)},
			wantMs: now + 3000, wantTimer: true},
		{name: "ms beats deliver", props: map[string]string{message.PropTimerDelayMs: "40", message.PropTimerDeliverMs: i(now + 7)}, wantMs: now + 40, wantTimer: true},
		{name: "garbage in the winning property is illegal even if a lower one is fine",
			props: map[string]string{message.PropTimerDelaySec: "soon", message.PropTimerDeliverMs: i(now + 7)}, wantTimer: true, wantErr: "TIMER_DELAY_SEC=\"soon\""},
		{name: "deliver now is due", props: map[string]string{message.PropTimerDeliverMs: i(now)}, wantMs: now, wantTimer: true, wantDue: true},
		{name: "deliver in the past is due", props: map[string]string{message.PropTimerDeliverMs: "5"}, wantMs: 5, wantTimer: true, wantDue: true},
		{name: "negative deliver is due", props: map[string]string{message.PropTimerDeliverMs: "-1"}, wantMs: -1, wantTimer: true, wantDue: true},
		{name: "zero delay is due", props: map[string]string{message.PropTimerDelaySec: "0"}, wantMs: now, wantTimer: true, wantDue: true},
		{name: "negative delay is due", props: map[string]string{message.PropTimerDelaySec: "-30"}, wantMs: now - 30_000, wantTimer: true, wantDue: true},
		{name: "issue 10872: Long.MAX seconds overflows, illegal not due", props: map[string]string{message.PropTimerDelaySec: i(math.MaxInt64)},
			wantTimer: true, wantErr: "overflows"},
		{name: "Long.MAX ms overflows", props: map[string]string{message.PropTimerDelayMs: i(math.MaxInt64)}, wantTimer: true, wantErr: "overflows"},
		{name: "Long.MIN seconds overflows", props: map[string]string{message.PropTimerDelaySec: i(math.MinInt64)}, wantTimer: true, wantErr: "overflows"},
		{name: "seconds just past the multiply limit", props: map[string]string{message.PropTimerDelaySec: i(math.MaxInt64/1000 + 1)},
			wantTimer: true, wantErr: "overflows"},
		{name: "seconds that multiply but overflow the add", props: map[string]string{message.PropTimerDelaySec: i(math.MaxInt64 / 1000)},
			wantTimer: true, wantErr: "overflows"},
		{name: "deliver Long.MAX is beyond the max delay", props: map[string]string{message.PropTimerDeliverMs: i(math.MaxInt64)},
			wantTimer: true, wantErr: "max delay 259200000ms"},
		{name: "exactly the max delay", props: map[string]string{message.PropTimerDelaySec: i(maxSec)}, wantMs: now + maxSec*1000, wantTimer: true},
		{name: "one ms beyond the max delay", props: map[string]string{message.PropTimerDelayMs: i(maxSec*1000 + 1)}, wantTimer: true,
			wantErr: "should not be bigger than the max delay"},
		{name: "issue 5376: 30-day max delay", maxSec: 30 * 86400, props: map[string]string{message.PropTimerDelaySec: i(30 * 86400)},
			wantMs: now + 30*86400*1000, wantTimer: true},
		{name: "90-day max delay", maxSec: 90 * 86400, props: map[string]string{message.PropTimerDelaySec: i(90 * 86400)},
			wantMs: now + 90*86400*1000, wantTimer: true},
		{name: "huge max delay saturates instead of overflowing", maxSec: math.MaxInt64, props: map[string]string{message.PropTimerDeliverMs: i(math.MaxInt64)},
			wantMs: math.MaxInt64, wantTimer: true},
		{name: "empty value", props: map[string]string{message.PropTimerDeliverMs: ""}, wantTimer: true, wantErr: "not a 64-bit"},
		{name: "spaces", props: map[string]string{message.PropTimerDelayMs: " 5"}, wantTimer: true, wantErr: "not a 64-bit"},
		{name: "fraction", props: map[string]string{message.PropTimerDelaySec: "1.5"}, wantTimer: true, wantErr: "not a 64-bit"},
		{name: "hex", props: map[string]string{message.PropTimerDelayMs: "0x10"}, wantTimer: true, wantErr: "not a 64-bit"},
		{name: "beyond int64", props: map[string]string{message.PropTimerDeliverMs: "99999999999999999999"}, wantTimer: true, wantErr: "not a 64-bit"},
		{name: "delete marker in the future", props: map[string]string{message.PropTimerDeliverMs: i(now + 1), message.PropTimerDelUniqKey: "T+U"},
			wantMs: now + 1, wantTimer: true},
		{name: "delete marker due now is illegal", props: map[string]string{message.PropTimerDeliverMs: i(now), message.PropTimerDelUniqKey: "T+U"},
			wantTimer: true, wantErr: "delete marker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.maxSec
			if max == 0 {
				max = maxSec
			}
			ms, timer, due, err := Admit(tc.props, now, max)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrIllegal mentioning %q", err, tc.wantErr)
				}
				if due {
					t.Fatal("an illegal message must never be due")
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if ms != tc.wantMs || timer != tc.wantTimer || due != tc.wantDue {
				t.Fatalf("got (%d, timer=%v, due=%v), want (%d, %v, %v)", ms, timer, due, tc.wantMs, tc.wantTimer, tc.wantDue)
			}
		})
	}
}

func TestAdmitDefaultsMaxDelay(t *testing.T) {
	_, _, _, err := Admit(map[string]string{message.PropTimerDelaySec: strconv.FormatInt(DefaultMaxDelaySec+1, 10)}, 0, 0)
	if !errors.Is(err, ErrIllegal) {
		t.Fatalf("maxDelaySec 0 must mean the 3-day default, err = %v", err)
	}
}

func TestAdmitMessageRewrites(t *testing.T) {
	const now = int64(1_000_000)
	tests := []struct {
		name          string
		topic         string
		sysFlag       int32
		props         map[string]string
		wantRewritten bool
	}{
		{name: "future timer message", topic: "T", props: map[string]string{message.PropTimerDelayMs: "5"}, wantRewritten: true},
		{name: "commit type is eligible", topic: "T", sysFlag: message.TransactionCommitType, props: map[string]string{message.PropTimerDelayMs: "5"}, wantRewritten: true},
		{name: "due now stays on its topic", topic: "T", props: map[string]string{message.PropTimerDelayMs: "0"}},
		{name: "prepared half message", topic: "T", sysFlag: message.TransactionPreparedType, props: map[string]string{message.PropTimerDelayMs: "5"}},
		{name: "rollback", topic: "T", sysFlag: message.TransactionRollbackType, props: map[string]string{message.PropTimerDelayMs: "5"}},
		{name: "roll re-put on the timer topic", topic: message.TopicWheelTimer, props: map[string]string{message.PropTimerDelayMs: "5"}},
		{name: "plain message", topic: "T", props: map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &message.Message{Topic: tc.topic, QueueID: 3, SysFlag: tc.sysFlag, Properties: tc.props}
			ms, rewritten, err := AdmitMessage(m, now, 0)
			if err != nil || rewritten != tc.wantRewritten {
				t.Fatalf("rewritten=%v err=%v", rewritten, err)
			}
			if !rewritten {
				if m.Topic != tc.topic || m.QueueID != 3 {
					t.Fatal("message changed although not rewritten")
				}
				return
			}
			if m.Topic != message.TopicWheelTimer || m.QueueID != 0 || m.Properties[message.PropRealTopic] != tc.topic || m.Properties[message.PropRealQueueID] != "3" ||
				m.Properties[message.PropTimerOutMs] != strconv.FormatInt(ms, 10) || m.Properties[message.PropTimerDelayMs] != "5" {
				t.Fatalf("rewrite: %s/%d %v", m.Topic, m.QueueID, m.Properties)
			}
		})
	}
	if _, _, err := AdmitMessage(&message.Message{Topic: "T", Properties: map[string]string{message.PropTimerDelaySec: "x"}}, now, 0); !errors.Is(err, ErrIllegal) {
		t.Fatalf("err = %v", err)
	}
}

func TestRewriteNilProperties(t *testing.T) {
	m := &message.Message{Topic: "T", QueueID: 7}
	Rewrite(m, 42)
	if m.Topic != message.TopicWheelTimer || m.Properties[message.PropTimerOutMs] != "42" || m.Properties[message.PropRealQueueID] != "7" {
		t.Fatalf("%+v", m)
	}
}

func TestIssueRecallHandle(t *testing.T) {
	rewritten := func(topic string, props map[string]string) *message.Message {
		m := &message.Message{Topic: topic, Properties: props}
		Rewrite(m, 1000)
		return m
	}
	tests := []struct {
		name   string
		m      *message.Message
		wantOK bool
	}{
		{name: "timer message", m: rewritten("T", map[string]string{message.PropUniqKey: "U1"}), wantOK: true},
		{name: "retry topic", m: rewritten("%RETRY%g", map[string]string{message.PropUniqKey: "U1"})},
		{name: "no uniq key", m: rewritten("T", map[string]string{})},
		{name: "not rewritten", m: &message.Message{Topic: "T", Properties: map[string]string{message.PropUniqKey: "U1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := IssueRecallHandle(tc.m, "b1")
			if ok != tc.wantOK {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			topic, b, ts, uk, err := DecodeRecallHandle(h)
			if err != nil || topic != "T" || b != "b1" || ts != 1001 || uk != "U1" {
				t.Fatalf("decode %q: %s %s %d %s %v", h, topic, b, ts, uk, err)
			}
		})
	}
}

// RewriteText stores what Rewrite stores: the map of the rewritten text is
// the rewritten map, with the caller's edit applied (WAIT dropped, CLUSTER
// set), and a producer's own REAL_TOPIC/REAL_QID lose to the wheel's.
func TestRewriteTextMatchesRewrite(t *testing.T) {
	for _, text := range []string{
		"",
		message.MarshalProperties(map[string]string{message.PropTimerDelaySec: "5", "TAGS": "a"}),
		message.MarshalProperties(map[string]string{message.PropTimerDeliverMs: "9", message.PropWait: "false",
			message.PropRealTopic: "Spoof", message.PropRealQueueID: "7", "CLUSTER": "other"}),
	} {
		m := &message.Message{Topic: "T", QueueID: 3, Properties: message.ParseProperties(text)}
		delete(m.Properties, message.PropWait)
		if m.Properties == nil {
			m.Properties = map[string]string{}
		}
		m.Properties["CLUSTER"] = "c"
		Rewrite(m, 1234)
		got := message.ParseProperties(RewriteText(text, "T", 3, 1234, message.PropWait, [2]string{"CLUSTER", "c"}))
		if len(got) != len(m.Properties) {
			t.Fatalf("%q: text %v, map %v", text, got, m.Properties)
		}
		for k, v := range m.Properties {
			if got[k] != v {
				t.Fatalf("%q: %s=%q in the text, %q in the map", text, k, got[k], v)
			}
		}
		if m.Topic != message.TopicWheelTimer || m.QueueID != 0 {
			t.Fatalf("Rewrite left %s:%d", m.Topic, m.QueueID)
		}
	}
}
