package broker

import (
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// FuzzTextModeMatchesMapMode is what keeps the send pipeline's two route
// modes (send.go) equal: for any properties text and sysFlag the text
// mode takes (plainProperties: no hook, or only the delay or the timer
// hook, decided on the text), it stores what the map mode stores after the
// put hooks: the same topic, queue, sysFlag and properties, and the hooks
// refuse nothing it takes. A hook the text mode does not know of makes it
// decline (TestPlainProperties), so a new hook cannot slip past this.
func FuzzTextModeMatchesMapMode(f *testing.F) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	tb := startBroker(f, func(o *Options) { o.Clock = clk })
	now := clk.Now().UnixMilli()
	future := strconv.FormatInt(now+60_000, 10)
	for _, seed := range []struct {
		raw     string
		sysFlag int32
	}{
		{"TAGS\x01a\x02WAIT\x01false", 0},
		{"DELAY\x013", 0},
		{"DELAY\x0199\x02REAL_TOPIC\x01x", 0},
		{"DELAY\x010", 0},
		{"DELAY\x01-1", 0},
		{"DELAY\x013", message.TransactionPreparedType},
		{"TIMER_DELIVER_MS\x01" + future, 0},
		{"TIMER_DELAY_SEC\x0110\x02REAL_QID\x019", 0},
		{"TIMER_DELAY_MS\x01-5", 0},
		{"TIMER_DELIVER_MS\x01" + future, message.TransactionPreparedType},
		{"TIMER_DELIVER_MS\x01" + future + "\x02DELAY\x012", 0},
		{"TRAN_MSG\x01true", message.TransactionPreparedType},
		{"CLUSTER\x01other", message.TransactionCommitType},
	} {
		f.Add(seed.raw, seed.sysFlag)
	}
	f.Fuzz(func(t *testing.T, raw string, sysFlag int32) {
		const topic, queueID = "FuzzModes", int32(1)
		sh := &remoting.SendMessageRequestHeader{Topic: topic, QueueID: queueID, Properties: raw, SysFlag: sysFlag}
		p, ok := tb.plainProperties(sh)
		if !ok {
			return // the map mode alone serves it
		}
		text, gotTopic, gotQueue := p.text, topic, queueID
		switch {
		case p.wheel:
			text, gotTopic, gotQueue = tb.wheelText(sh, queueID, p.deliverMs), message.TopicWheelTimer, 0
		case p.level > 0:
			text, gotTopic, gotQueue = tb.delayText(sh, queueID, p.level, p.clamped), message.TopicSchedule, int32(p.level-1)
		}

		// The map mode, as send builds it: CLUSTER set, WAIT dropped, then
		// the put hooks.
		m := &message.Message{Topic: topic, QueueID: queueID, SysFlag: sysFlag, Properties: message.ParseProperties(raw)}
		if m.Properties == nil {
			m.Properties = map[string]string{}
		}
		m.Properties[message.PropCluster] = tb.opts.BrokerClusterName
		delete(m.Properties, message.PropWait)
		for _, h := range tb.putHooks {
			if err := h(m); err != nil {
				t.Fatalf("%q sysFlag %d: the text mode takes what a hook refuses: %v", raw, sysFlag, err)
			}
		}
		if gotTopic != m.Topic || gotQueue != m.QueueID || sysFlag != m.SysFlag {
			t.Fatalf("%q sysFlag %d: text mode %s:%d flag %d, map mode %s:%d flag %d", raw, sysFlag, gotTopic, gotQueue, sysFlag, m.Topic, m.QueueID, m.SysFlag)
		}
		if got := message.ParseProperties(text); !maps.Equal(got, m.Properties) && (len(got) != 0 || len(m.Properties) != 0) {
			t.Fatalf("%q sysFlag %d: text mode stores %v, map mode %v", raw, sysFlag, got, m.Properties)
		}
	})
}
