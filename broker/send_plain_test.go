package broker

import (
	"maps"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// TestPlainProperties checks the map-free send path: it stores what the map
// path would (as read back by a parser), strips WAIT, appends CLUSTER, and
// declines every message a put hook or retry routing must see.
func TestPlainProperties(t *testing.T) {
	b := &Broker{opts: Options{BrokerClusterName: "C1"}}
	b.putHooks = append(b.putHooks, nil, nil, nil)
	b.keyedHooks = 3
	mapPath := func(raw string) map[string]string {
		m := message.ParseProperties(raw)
		delete(m, message.PropWait)
		m[message.PropCluster] = "C1"
		return m
	}
	tests := []struct {
		name     string
		topic    string
		raw      string
		wantOK   bool
		wantSkip bool
	}{
		{name: "java form", topic: "T", raw: "TAGS\x01a\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01U1\x02WAIT\x01true", wantOK: true},
		{name: "go form with trailing separator", topic: "T", raw: "UNIQ_KEY\x01U1\x02WAIT\x01true\x02", wantOK: true},
		{name: "empty", topic: "T", raw: "", wantOK: true},
		{name: "WAIT false skips the flush wait", topic: "T", raw: "WAIT\x01false\x02TAGS\x01a", wantOK: true, wantSkip: true},
		{name: "WAIT FALSE", topic: "T", raw: "WAIT\x01FALSE", wantOK: true, wantSkip: true},
		{name: "last WAIT wins", topic: "T", raw: "WAIT\x01false\x02WAIT\x01true", wantOK: true},
		{name: "producer CLUSTER loses to ours", topic: "T", raw: "CLUSTER\x01other\x02TAGS\x01a", wantOK: true},
		{name: "malformed pairs dropped", topic: "T", raw: "junk\x02\x01x\x02A\x01\x02B\x01v\x01w", wantOK: true},
		{name: "delay level", topic: "T", raw: "TAGS\x01a\x02DELAY\x013"},
		{name: "transaction", topic: "T", raw: "TRAN_MSG\x01true"},
		{name: "timer deliver time", topic: "T", raw: "TIMER_DELIVER_MS\x011"},
		{name: "timer delay", topic: "T", raw: "TIMER_DELAY_SEC\x0110"},
		{name: "timer delete marker", topic: "T", raw: "TIMER_DEL_UNIQKEY\x01x"},
		{name: "retry topic", topic: "%RETRY%g", raw: "TAGS\x01a"},
		{name: "schedule topic", topic: "SCHEDULE_TOPIC_XXXX", raw: "TAGS\x01a"},
		{name: "timer topic", topic: "rmq_sys_wheel_timer", raw: "TAGS\x01a"},
		{name: "half topic", topic: "RMQ_SYS_TRANS_HALF_TOPIC", raw: "TAGS\x01a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: tc.topic, Properties: tc.raw})
			props, skip := p.text, p.skipWait
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if skip != tc.wantSkip {
				t.Errorf("skipWait = %v, want %v", skip, tc.wantSkip)
			}
			if got, want := message.ParseProperties(props), mapPath(tc.raw); !maps.Equal(got, want) {
				t.Errorf("stored %q reads as %v, the map path stores %v", props, got, want)
			}
		})
	}
	// Another hook disables the path.
	b.putHooks = append(b.putHooks, nil)
	if _, ok := b.plainProperties(&remoting.SendMessageRequestHeader{Topic: "T"}); ok {
		t.Fatal("plain path taken with a hook it does not know")
	}
}
