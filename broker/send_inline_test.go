package broker

import (
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// ServeInline takes only single sends to an existing topic that no put hook
// acts on, or only the timer hook moving it into the wheel, or only the
// delay hook moving it to a delay level, and leaves every other send to the
// pool untouched (no topic created, nothing stored).
func TestServeInlineTakesOnlyPlainSends(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "Inl", body: []byte("create")})
	tb.waitDispatched()
	req := func(a sendArgs) *remoting.Command {
		if a.code == 0 {
			a.code = remoting.SendMessageV2
		}
		if a.body == nil {
			a.body = []byte("b")
		}
		return remoting.NewRequest(a.code, a.ext(), a.body)
	}
	conn := &remoting.Conn{}

	for _, a := range []sendArgs{
		{topic: "Inl", props: coreProps("TAGS", "a", "WAIT", "true")},
		{code: remoting.SendMessage, topic: "Inl", props: coreProps("KEYS", "k")},
		// a timer message only the timer hook acts on (timerSend)
		{topic: "Inl", props: coreProps("TIMER_DELAY_SEC", "5")},
		// a delay-level message only the delay hook acts on (delaySend)
		{topic: "Inl", props: coreProps("DELAY", "2")},
	} {
		before := tb.store.MaxPhyOffset()
		resp, ok := tb.ServeInline(conn, req(a))
		if !ok || resp == nil || resp.Code != remoting.Success {
			t.Fatalf("%+v: handled %v, reply %v; want a SUCCESS reply served inline", a, ok, resp)
		}
		if tb.store.MaxPhyOffset() <= before {
			t.Fatalf("%+v: nothing stored", a)
		}
	}

	for name, a := range map[string]sendArgs{
		"topic to create":  {topic: "InlNew"},
		"delay refused":    {topic: "Inl", props: coreProps("DELAY", "two")},
		"timer refused":    {topic: "Inl", props: coreProps("TIMER_DELAY_SEC", "soon")},
		"timer and delay":  {topic: "Inl", props: coreProps("TIMER_DELAY_SEC", "5", "DELAY", "2")},
		"transaction half": {topic: "Inl", props: coreProps("TRAN_MSG", "true")},
		"retry topic":      {topic: "%RETRY%G", props: coreProps("TAGS", "a")},
		"batch":            {code: remoting.SendBatchMessage, topic: "Inl", batch: true},
		"malformed header": {topic: "Inl", drop: "queueId"},
		"reply message":    {code: remoting.SendReplyMessageV2, topic: "Inl"},
	} {
		before := tb.store.MaxPhyOffset()
		if resp, ok := tb.ServeInline(conn, req(a)); ok || resp != nil {
			t.Fatalf("%s: handled %v, reply %v; want it left to the pool", name, ok, resp)
		}
		if tb.store.MaxPhyOffset() != before {
			t.Fatalf("%s: stored something", name)
		}
	}
	if tb.topics.Get("InlNew") != nil {
		t.Fatal("a send left to the pool created its topic")
	}

	sync := startBroker(t, func(o *Options) { o.FlushDiskType = "SYNC_FLUSH" })
	sync.mustSend(sendArgs{topic: "Inl", body: []byte("create")})
	oneway := req(sendArgs{topic: "Inl"})
	oneway.Flag |= remoting.FlagOneway
	if _, ok := sync.ServeInline(conn, oneway); ok {
		t.Fatal("a oneway send under SYNC_FLUSH (the store waits for its flush) was served inline")
	}
}
