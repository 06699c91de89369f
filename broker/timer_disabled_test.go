package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// With timerWheelEnable=false (anchors: upstream #6722) no timer store runs:
// timer sends get the 5.x SYSTEM_ERROR and remark, a DELAY level still wins,
// plain sends, recall and the runtime info answer without failing, and the
// broker stops cleanly.
func TestTimerWheelDisabled(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.TimerWheelEnable = false })
	if tb.timers != nil {
		t.Fatal("a timer store runs with timerWheelEnable=false")
	}
	if _, err := os.Stat(filepath.Join(tb.opts.StorePathRootDir, "timerlog")); !os.IsNotExist(err) {
		t.Fatalf("timer log directory exists (stat err %v)", err)
	}
	tb.mustSend(sendArgs{topic: "Off", body: []byte("plain")})

	for _, k := range []string{message.PropTimerDelaySec, message.PropTimerDelayMs, message.PropTimerDeliverMs} {
		resp := tb.send(sendArgs{topic: "Off", body: []byte("t"), props: coreProps(k, "5000")})
		if resp.Code != remoting.SystemError || resp.Remark != "accurate timer message is not enabled, timerWheelEnable is false" {
			t.Fatalf("%s send: %d %q, want SYSTEM_ERROR with the 5.x remark", k, resp.Code, resp.Remark)
		}
	}
	batch := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "Off", batch: true,
		body: coreBatchBody(message.BatchEntry{Body: []byte("b1"), Properties: map[string]string{message.PropTimerDelaySec: "5"}},
			message.BatchEntry{Body: []byte("b2"), Properties: map[string]string{message.PropTimerDelaySec: "5"}})})
	if batch.Code != remoting.SystemError {
		t.Fatalf("timer batch: %d %q, want SYSTEM_ERROR", batch.Code, batch.Remark)
	}
	if got := len(tb.messagesOn("Off", 0)); got != 1 {
		t.Fatalf("%d messages on Off/0, want only the plain one", got)
	}

	// A DELAY level wins over timer properties, as with the wheel on.
	tb.mustSend(sendArgs{topic: "Off", body: []byte("d"), props: coreProps("DELAY", "2", message.PropTimerDelaySec, "5")})
	tb.waitDispatched()
	if n := tb.store.MaxOffsetInQueue(message.TopicSchedule, 1); n != 1 {
		t.Fatalf("schedule level 2 holds %d messages, want 1", n)
	}

	if r := tb.invoke(remoting.RecallMessage, map[string]string{"topic": "Off", "recallHandle": "djEgT2ZmIGJyb2tlci1hIDEgVQ==", "producerGroup": "PG"}, nil); r.Code != remoting.SystemError {
		t.Fatalf("recall: %d %q, want SYSTEM_ERROR", r.Code, r.Remark)
	}
	resp := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(resp.Body, &kv); resp.Code != remoting.Success || err != nil {
		t.Fatalf("runtime info: %d %v", resp.Code, err)
	}
	if kv.Table["timerWheelEnable"] != "false" || kv.Table["timerCongestNum"] != "" {
		t.Fatalf("runtime info timer keys: timerWheelEnable=%q timerCongestNum=%q", kv.Table["timerWheelEnable"], kv.Table["timerCongestNum"])
	}
	tb.restart() // stops and starts again without a timer store
}
