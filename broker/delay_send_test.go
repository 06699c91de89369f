package broker

import (
	"maps"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// TestDelaySendTextMatchesTheHook: a delay-level send taken by the text path
// (delaySend, delayText) stores what the map path and the put hooks would
// have stored (the same topic, queue and properties as a map), and every
// send the hooks treat otherwise (a timer property, a transaction, a
// refusal, DELAY=0, a prepared record, a system or retry topic) is left to
// the map path.
func TestDelaySendTextMatchesTheHook(t *testing.T) {
	tb, _ := startDelayBroker(t)
	b := tb.Broker
	for _, props := range []string{
		coreProps("DELAY", "2", message.PropUniqKey, "U1", "TAGS", "a"),
		coreProps("DELAY", "1", message.PropWait, "false"),
		coreProps("DELAY", "3", message.PropWait, "true", "KEYS", "k1 k2"),
		// above the highest level: clamped, DELAY rewritten
		coreProps("DELAY", "40", "TAGS", "t"),
		// kept as the producer wrote it when not clamped
		coreProps("DELAY", "+2"),
		// the producer's own bookkeeping and cluster lose to the broker's
		coreProps("DELAY", "2", message.PropRealTopic, "Elsewhere", message.PropRealQueueID, "9", message.PropCluster, "other"),
		// a repeated DELAY: the last one counts, as in the map
		coreProps("DELAY", "1", "TAGS", "a", "DELAY", "30"),
		coreProps("DELAY", "4") + "\x02broken\x01pair",
	} {
		sh := &remoting.SendMessageRequestHeader{Topic: "TextD", Properties: props}
		p, ok := b.plainProperties(sh)
		if !ok || p.level == 0 || p.wheel {
			t.Fatalf("%q: not taken by the delay text path (ok %v, level %d, wheel %v)", props, ok, p.level, p.wheel)
		}
		got := message.ParseProperties(b.delayText(sh, 2, p.level, p.clamped))

		m := hookPath(t, b, sh, 2)
		if m.Topic != message.TopicSchedule || m.QueueID != int32(p.level-1) {
			t.Fatalf("%q: the hooks stored it on %s/%d, the text path on level %d", props, m.Topic, m.QueueID, p.level)
		}
		if !maps.Equal(got, m.Properties) {
			t.Fatalf("%q:\ntext path %v\nhook path %v", props, got, m.Properties)
		}
		if want := message.Props(props).Get(message.PropWait) == "false"; p.skipWait != want {
			t.Fatalf("%q: skipWait %v, want %v", props, p.skipWait, want)
		}
	}
	for _, tc := range []struct{ name, topic, props string }{
		{"timer property", "TextD", coreProps("DELAY", "1", message.PropTimerDelaySec, "60")},
		{"transaction", "TextD", coreProps("DELAY", "1", message.PropTranMsg, "true")},
		{"refused", "TextD", coreProps("DELAY", "soon")},
		{"level 0", "TextD", coreProps("DELAY", "0")},
		{"negative", "TextD", coreProps("DELAY", "-3")},
		{"retry topic", message.RetryTopicPrefix + "G", coreProps("DELAY", "2")},
		{"schedule topic", message.TopicSchedule, coreProps("DELAY", "2")},
		{"half topic", message.TopicTransHalf, coreProps("DELAY", "2")},
	} {
		if _, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: tc.topic, Properties: tc.props}); ok {
			t.Errorf("%s: taken by the text path", tc.name)
		}
	}
	for _, flag := range []int32{message.TransactionPreparedType, message.TransactionRollbackType} {
		if _, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: "TextD", Properties: coreProps("DELAY", "2"), SysFlag: flag}); ok {
			t.Errorf("transaction record (sysFlag %#x): taken by the text path", flag)
		}
	}
	if p, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: "TextD", Properties: coreProps("DELAY", "2"), SysFlag: message.TransactionCommitType}); !ok || p.level != 2 {
		t.Errorf("a commit-typed record is delayed as Rewrite delays it: ok %v level %d", ok, p.level)
	}
}

// hookPath is what the map path stores for the single send sh on queue
// queueID: its properties as a map, less WAIT, plus CLUSTER, run through the
// put hooks.
func hookPath(t *testing.T, b *Broker, sh *remoting.SendMessageRequestHeader, queueID int32) *message.Message {
	t.Helper()
	m := &message.Message{Topic: sh.Topic, QueueID: queueID, Properties: message.ParseProperties(sh.Properties)}
	m.Properties[message.PropCluster] = b.opts.BrokerClusterName
	delete(m.Properties, message.PropWait)
	for _, h := range b.putHooks {
		if err := h(m); err != nil {
			t.Fatalf("%q: hook: %v", sh.Properties, err)
		}
	}
	return m
}
