package schedule

import (
	"errors"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/message"
)

func TestRewriteClampsAndKeepsDestination(t *testing.T) {
	l, _ := ParseLevels(DefaultLevels)
	m := &message.Message{Topic: "Orders", QueueID: 3, Properties: map[string]string{"DELAY": "40", "TAGS": "a"}}
	ok, err := l.Rewrite(m)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if m.Topic != message.TopicSchedule || m.QueueID != 17 {
		t.Fatalf("topic/queue = %s/%d", m.Topic, m.QueueID)
	}
	if m.Properties["DELAY"] != "18" || m.Properties["REAL_TOPIC"] != "Orders" || m.Properties["REAL_QID"] != "3" || m.Properties["TAGS"] != "a" {
		t.Fatalf("props = %v", m.Properties)
	}
}

func TestRewriteLeavesOthersAlone(t *testing.T) {
	l, _ := ParseLevels(DefaultLevels)
	for _, tc := range []struct {
		name    string
		sysFlag int32
		props   map[string]string
	}{
		{name: "no delay", props: map[string]string{}},
		{name: "zero", props: map[string]string{"DELAY": "0"}},
		{name: "negative", props: map[string]string{"DELAY": "-1"}},
		{name: "prepared", sysFlag: 0x4, props: map[string]string{"DELAY": "2"}},
		{name: "rollback", sysFlag: 0xC, props: map[string]string{"DELAY": "2"}},
	} {
		m := &message.Message{Topic: "T", SysFlag: tc.sysFlag, Properties: tc.props}
		ok, err := l.Rewrite(m)
		if ok || err != nil || m.Topic != "T" {
			t.Errorf("%s: ok=%v err=%v topic=%s", tc.name, ok, err, m.Topic)
		}
	}
	m := &message.Message{Topic: "T", SysFlag: 0x8, Properties: map[string]string{"DELAY": "1"}}
	if ok, _ := l.Rewrite(m); !ok {
		t.Error("commit-type messages are eligible")
	}
	if _, err := l.Rewrite(&message.Message{Topic: "T", Properties: map[string]string{"DELAY": "x"}}); !errors.Is(err, ErrBadDelayLevel) {
		t.Errorf("err = %v", err)
	}
}

func TestTagsCodeIsDeliverTime(t *testing.T) {
	l, _ := ParseLevels(DefaultLevels)
	props := message.Props("KEYS\x01k\x02DELAY\x013\x02TAGS\x01t")
	if c, ok := l.TagsCode(message.TopicSchedule, props, 1000); !ok || c != 11000 {
		t.Fatalf("c=%d ok=%v", c, ok)
	}
	if c, ok := l.TagsCode(message.TopicSchedule, message.Props("DELAY\x0199"), 1000); !ok || c != 1000+2*3600*1000 {
		t.Fatalf("level above the highest: c=%d ok=%v, want clamped to 2h", c, ok)
	}
	if c, ok := l.TagsCode(message.TopicSchedule, message.Props("TAGS\x01t"), 1000); !ok || c != 1000 {
		t.Fatalf("no DELAY: c=%d ok=%v, want the store time", c, ok)
	}
	if _, ok := l.TagsCode("Other", props, 1000); ok {
		t.Fatal("other topics are not schedule codes")
	}
}

// TextLevel decides as Rewrite does: the level it moves the message to,
// whether it rewrote DELAY, and its refusals.
func TestTextLevelDecidesAsRewrite(t *testing.T) {
	l, _ := ParseLevels(DefaultLevels)
	for _, delay := range []string{"", "0", "-1", "1", "2", "18", "19", "40", "+3", "x", "1.5"} {
		for _, sysFlag := range []int32{0, message.TransactionPreparedType, message.TransactionCommitType, message.TransactionRollbackType} {
			props := map[string]string{"TAGS": "a"}
			text := "TAGS\x01a"
			if delay != "" {
				props[message.PropDelay] = delay
				text += "\x02DELAY\x01" + delay
			}
			m := &message.Message{Topic: "T", QueueID: 1, SysFlag: sysFlag, Properties: props}
			moved, rerr := l.Rewrite(m)
			level, clamped, terr := l.TextLevel(message.Props(text), sysFlag)
			if (rerr == nil) != (terr == nil) || moved != (level > 0) {
				t.Fatalf("DELAY %q sysFlag %#x: Rewrite %v, %v; TextLevel %d, %v", delay, sysFlag, moved, rerr, level, terr)
			}
			if !moved {
				continue
			}
			if m.QueueID != int32(level-1) || clamped != (m.Properties[message.PropDelay] != delay) {
				t.Fatalf("DELAY %q: Rewrite queue %d DELAY %q; TextLevel %d clamped %v", delay, m.QueueID, m.Properties[message.PropDelay], level, clamped)
			}
			if clamped && m.Properties[message.PropDelay] != strconv.Itoa(level) {
				t.Fatalf("DELAY %q: Rewrite set DELAY %q, TextLevel says %d", delay, m.Properties[message.PropDelay], level)
			}
		}
	}
}
