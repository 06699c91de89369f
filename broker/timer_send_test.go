package broker

import (
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// TestTimerSendTextMatchesTheHook: a timer send taken by the text path
// (timerSend, wheelText) stores what the map path and the put hooks would
// have stored (the same topic, queue and properties as a map), and every
// send the hooks treat otherwise (a delay level, a transaction, a refusal,
// a time already due, a system or retry topic) is left to the map path.
func TestTimerSendTextMatchesTheHook(t *testing.T) {
	tb, clk := startDelayBroker(t)
	b := tb.Broker
	due := strconv.FormatInt(clk.Now().Add(90*time.Second).UnixMilli(), 10)
	for _, props := range []string{
		coreProps(message.PropTimerDeliverMs, due, message.PropUniqKey, "U1", "TAGS", "a"),
		coreProps(message.PropTimerDelaySec, "30", message.PropWait, "false"),
		coreProps(message.PropTimerDelayMs, "1500", message.PropWait, "true", "KEYS", "k1 k2"),
		// the producer's own bookkeeping and cluster lose to the broker's
		coreProps(message.PropTimerDelaySec, "5", message.PropRealTopic, "Elsewhere", message.PropRealQueueID, "9", message.PropCluster, "other"),
		// all three timer properties: TIMER_DELAY_SEC decides
		coreProps(message.PropTimerDeliverMs, due, message.PropTimerDelayMs, "200", message.PropTimerDelaySec, "7"),
		coreProps(message.PropTimerDelaySec, "3") + "\x02broken\x01pair",
	} {
		sh := &remoting.SendMessageRequestHeader{Topic: "TextT", Properties: props}
		p, ok := b.plainProperties(sh)
		if !ok || !p.wheel {
			t.Fatalf("%q: not taken by the text path (ok %v, wheel %v)", props, ok, p.wheel)
		}
		got := message.ParseProperties(b.wheelText(sh, 2, p.deliverMs))

		m := hookPath(t, b, sh, 2)
		if m.Topic != message.TopicWheelTimer || m.QueueID != 0 {
			t.Fatalf("%q: the hooks stored it on %s/%d", props, m.Topic, m.QueueID)
		}
		if !maps.Equal(got, m.Properties) {
			t.Fatalf("%q:\ntext path %v\nhook path %v", props, got, m.Properties)
		}
		if want := message.Props(props).Get(message.PropWait) == "false"; p.skipWait != want {
			t.Fatalf("%q: skipWait %v, want %v", props, p.skipWait, want)
		}
	}
	for _, tc := range []struct{ name, topic, props string }{
		{"delay level", "TextT", coreProps("DELAY", "1", message.PropTimerDelaySec, "60")},
		{"transaction", "TextT", coreProps(message.PropTranMsg, "true", message.PropTimerDelaySec, "60")},
		{"refused", "TextT", coreProps(message.PropTimerDelaySec, "soon")},
		{"due now", "TextT", coreProps(message.PropTimerDeliverMs, "1000")},
		{"re-put", "TextT", coreProps(message.PropTimerOutMs, due, message.PropTimerDelaySec, "60")},
		{"retry topic", message.RetryTopicPrefix + "G", coreProps(message.PropTimerDelaySec, "60")},
		{"timer topic", message.TopicWheelTimer, coreProps(message.PropTimerDelaySec, "60")},
	} {
		if _, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: tc.topic, Properties: tc.props}); ok {
			t.Errorf("%s: taken by the text path", tc.name)
		}
	}
	if _, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: "TextT", Properties: coreProps(message.PropTimerDelaySec, "60"),
		SysFlag: message.TransactionPreparedType}); ok {
		t.Error("prepared transaction record: taken by the text path")
	}
}
