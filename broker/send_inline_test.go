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

// ServeInline takes a pull of an existing group that the store answers from
// memory: a consumer that has caught up (the offset is the queue's end), or
// one behind the end that takes every message of pages in the page cache
// (just written here). A filtered pull behind the end, a pull of a new
// group, or one that does not parse is left to the pool untouched; so is a
// read of pages not cached (store's TestReadResident).
func TestServeInlineTakesPullsServedFromMemory(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "PInl", body: []byte("one")})
	tb.waitDispatched()
	tb.pull(pullArgs{group: "PG", topic: "PInl", sysFlag: pullFlagSubscription}) // creates PG
	conn := &remoting.Conn{}
	req := func(a pullArgs) *remoting.Command { return remoting.NewRequest(remoting.PullMessage, a.ext(), nil) }

	resp, ok := tb.ServeInline(conn, req(pullArgs{group: "PG", topic: "PInl", offset: 1, sysFlag: pullFlagSubscription}))
	if !ok || resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("caught-up pull: handled %v, reply %v; want PULL_NOT_FOUND served inline", ok, resp)
	}
	lite := req(pullArgs{group: "PG", topic: "PInl", offset: 1, sysFlag: pullFlagSubscription | pullFlagCommitOffset, commitOffset: 1})
	lite.Code = remoting.LitePullMessage
	if resp, ok := tb.ServeInline(conn, lite); !ok || resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("caught-up lite pull: handled %v, reply %v; want PULL_NOT_FOUND served inline", ok, resp)
	}
	if off, ok := tb.clients.Offsets.Query("PG", "PInl", 0); !ok || off != 1 {
		t.Fatalf("inline pull committed %d %t, want 1", off, ok)
	}
	resp, ok = tb.ServeInline(conn, req(pullArgs{group: "PG", topic: "PInl", offset: 1,
		sysFlag: pullFlagSubscription | pullFlagSuspend, suspendMillis: 15000}))
	if !ok || resp != nil || tb.pullHold.held() != 1 {
		t.Fatalf("caught-up long poll: handled %v, reply %v, %d held; want it parked inline", ok, resp, tb.pullHold.held())
	}

	resp, ok = tb.ServeInline(conn, req(pullArgs{group: "PG", topic: "PInl", offset: 0, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"}))
	if !ok || resp == nil || resp.Code != remoting.Success {
		t.Fatalf("pull behind the end of cached pages: handled %v, reply %v; want FOUND served inline", ok, resp)
	}
	if ms := coreRecords(t, resp.Body); len(ms) != 1 || string(ms[0].Body) != "one" {
		t.Fatalf("pull behind the end served inline returned %d messages", len(ms))
	}

	for name, a := range map[string]pullArgs{
		"behind the end, by tag": {group: "PG", topic: "PInl", offset: 0, sysFlag: pullFlagSubscription, subscription: "TagA"},
		"behind the end, by SQL": {group: "PG", topic: "PInl", offset: 0, sysFlag: pullFlagSubscription, subscription: "a > 1", exprType: "SQL92"},
		"past the end":           {group: "PG", topic: "PInl", offset: 5, sysFlag: pullFlagSubscription},
		"group to create":        {group: "PNew", topic: "PInl", offset: 1, sysFlag: pullFlagSubscription},
	} {
		if resp, ok := tb.ServeInline(conn, req(a)); ok || resp != nil {
			t.Fatalf("%s: handled %v, reply %v; want it left to the pool", name, ok, resp)
		}
	}
	bad := req(pullArgs{group: "PG", topic: "PInl", offset: 1})
	delete(bad.ExtFields, "queueOffset")
	if resp, ok := tb.ServeInline(conn, bad); ok || resp != nil {
		t.Fatalf("malformed header: handled %v, reply %v; want it left to the pool", ok, resp)
	}
	if tb.clients.SubGroups.Find("PNew") != nil {
		t.Fatal("a pull left to the pool created its group")
	}
}
