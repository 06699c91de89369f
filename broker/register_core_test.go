package broker

import (
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// fakeNamesrv records the requests a broker sends to a name server and
// answers REGISTER_BROKER with an optional order-topic table.
type fakeNamesrv struct {
	addr string
	mu   sync.Mutex
	reqs []*remoting.Command
	// orderTable is returned as the REGISTER_BROKER body when set.
	orderTable map[string]string
	// conns are the connections requests came over; refuse is how many
	// more REGISTER_BROKERs to answer with SYSTEM_ERROR.
	conns  []*remoting.Conn
	refuse int
}

func startFakeNamesrv(t *testing.T) *fakeNamesrv {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ns := &fakeNamesrv{addr: addr}
	brokertest.Serve(t, addr, ns)
	return ns
}

func (ns *fakeNamesrv) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.reqs = append(ns.reqs, req)
	if !slices.Contains(ns.conns, c) {
		ns.conns = append(ns.conns, c)
	}
	if req.Code == remoting.RegisterBroker && ns.refuse > 0 {
		ns.refuse--
		return remoting.NewResponse(req, remoting.SystemError, "refused by the test")
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	if req.Code == remoting.RegisterBroker && ns.orderTable != nil {
		resp.Body = remoting.MarshalBody(&remoting.KVTable{Table: ns.orderTable})
	}
	return resp
}

// dropConns closes every connection the name server was sent requests over,
// as a name server that restarts does.
func (ns *fakeNamesrv) dropConns() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for _, c := range ns.conns {
		c.Close()
	}
	ns.conns = nil
}

func (ns *fakeNamesrv) setRefuse(n int) {
	ns.mu.Lock()
	ns.refuse = n
	ns.mu.Unlock()
}

// registrations returns the topics and data version of each REGISTER_BROKER
// body, in order.
func (ns *fakeNamesrv) registrations(t *testing.T) []remoting.TopicConfigSerializeWrapper {
	t.Helper()
	var out []remoting.TopicConfigSerializeWrapper
	for _, r := range ns.requests(remoting.RegisterBroker) {
		var body remoting.RegisterBrokerBody
		if err := remoting.UnmarshalBody(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.TopicConfigSerializeWrapper)
	}
	return out
}

func (ns *fakeNamesrv) setOrderTable(t map[string]string) {
	ns.mu.Lock()
	ns.orderTable = t
	ns.mu.Unlock()
}

// requests returns the received requests with the given code.
func (ns *fakeNamesrv) requests(code int32) []*remoting.Command {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []*remoting.Command
	for _, r := range ns.reqs {
		if r.Code == code {
			out = append(out, r)
		}
	}
	return out
}

func TestRegisterWithNameServers(t *testing.T) {
	ns1, ns2 := startFakeNamesrv(t), startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) {
		o.NamesrvAddr = ns1.addr + ";" + ns2.addr
		o.BrokerName = "broker-x"
		o.BrokerID = 0
	})
	port := tb.opts.ListenPort

	for _, ns := range []*fakeNamesrv{ns1, ns2} {
		regs := ns.requests(remoting.RegisterBroker)
		if len(regs) != 1 {
			t.Fatalf("name server %s got %d registrations at start, want 1", ns.addr, len(regs))
		}
		r := regs[0]
		want := map[string]string{
			"brokerName": "broker-x", "brokerAddr": fmt.Sprintf("127.0.0.1:%d", port), "clusterName": "DefaultCluster",
			"haServerAddr": fmt.Sprintf("127.0.0.1:%d", port+1), "brokerId": "0", "compressed": "false",
			"bodyCrc32": strconv.FormatInt(int64(crc32.ChecksumIEEE(r.Body)&0x7FFFFFFF), 10),
		}
		for k, v := range want {
			if r.ExtFields[k] != v {
				t.Errorf("header %s = %q, want %q", k, r.ExtFields[k], v)
			}
		}
		var body remoting.RegisterBrokerBody
		if err := remoting.UnmarshalBody(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if tc := body.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"]; tc == nil || tc.Perm != 7 {
			t.Errorf("TBW102 not registered with inherit perm: %+v", tc)
		}
		if body.FilterServerList == nil {
			t.Error("filterServerList missing")
		}
	}

	// A topic created by a send is registered at once (coalesced kicks).
	for _, ns := range []*fakeNamesrv{ns1, ns2} {
		ns.setOrderTable(map[string]string{"NewTopic": "broker-x:4"})
	}
	tb.mustSend(sendArgs{topic: "NewTopic", body: []byte("x")})
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		for _, r := range ns1.requests(remoting.RegisterBroker) {
			var body remoting.RegisterBrokerBody
			if remoting.UnmarshalBody(r.Body, &body) == nil && body.TopicConfigSerializeWrapper.TopicConfigTable["NewTopic"] != nil {
				return true
			}
		}
		return false
	}, "the new topic to be registered")
	// Registrations triggered by a change leave the order flags alone; the
	// periodic one applies the name server's table.
	if tb.Topics().IsOrderTopic("NewTopic") {
		t.Error("order flag applied by a change-triggered registration")
	}
	tb.registerAll(true)
	if !tb.Topics().IsOrderTopic("NewTopic") {
		t.Error("order flag from the name server not applied")
	}

	if err := tb.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*fakeNamesrv{ns1, ns2} {
		un := ns.requests(remoting.UnregisterBroker)
		if len(un) != 1 {
			t.Fatalf("%d unregistrations, want 1", len(un))
		}
		if un[0].ExtFields["brokerAddr"] != tb.Addr() || un[0].ExtFields["brokerName"] != "broker-x" ||
			un[0].ExtFields["clusterName"] != "DefaultCluster" || un[0].ExtFields["brokerId"] != "0" {
			t.Errorf("unregister header %v", un[0].ExtFields)
		}
	}
}

func TestRegisterBodyMasksPermission(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.BrokerPermission = topicgroup.PermRead })
	var body remoting.RegisterBrokerBody
	if err := remoting.UnmarshalBody(tb.registerBody(tb.runtime(), tb.topics.Snapshot()), &body); err != nil {
		t.Fatal(err)
	}
	for name, tc := range body.TopicConfigSerializeWrapper.TopicConfigTable {
		if tc.Perm != topicgroup.PermRead {
			t.Errorf("%s registered with perm %d, want the broker's 4", name, tc.Perm)
		}
	}
}

func TestRegisterNameServerPeriodOption(t *testing.T) {
	if got := DefaultOptions().RegisterNameServerPeriod; got != 30000 {
		t.Errorf("default registerNameServerPeriod = %d ms, want 30000", got)
	}
	tests := []struct {
		name string
		set  int
		want int
	}{
		{name: "below 10 s is raised", set: 5000, want: 10000},
		{name: "lower bound kept", set: 10000, want: 10000},
		{name: "default kept", set: 30000, want: 30000},
		{name: "upper bound kept", set: 60000, want: 60000},
		{name: "above 60 s is lowered", set: 90000, want: 60000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.RegisterNameServerPeriod = tt.set
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if o.RegisterNameServerPeriod != tt.want {
				t.Errorf("registerNameServerPeriod %d became %d, want %d", tt.set, o.RegisterNameServerPeriod, tt.want)
			}
		})
	}
}

// TestRegisterPeriodic drives the registration loop on a manual clock: only
// the periodic registration applies the name server's order-topic table
// (registerAll(true)), so the order flag of TBW102 tells a period's
// registration apart from a kicked one.
func TestRegisterPeriodic(t *testing.T) {
	ns := startFakeNamesrv(t)
	clk := clock.NewManual(coreEpoch)
	tb := startBroker(t, func(o *Options) {
		o.NamesrvAddr = ns.addr
		o.BrokerName = "broker-x"
		o.Clock = clk
	})
	period := time.Duration(tb.opts.RegisterNameServerPeriod) * time.Millisecond
	if period != 30*time.Second {
		t.Fatalf("period %v, want the 30 s default", period)
	}
	if n := len(ns.requests(remoting.RegisterBroker)); n != 1 {
		t.Fatalf("%d registrations at start, want 1", n)
	}
	ns.setOrderTable(map[string]string{"TBW102": "broker-x:8"})
	const orderTopic = "TBW102"

	// A kick (a topic change) is served by the loop goroutine, so once its
	// registration arrives the loop has armed its timer at start+period (the
	// manual clock has not moved).
	tb.Topics().Update(&topicgroup.TopicConfig{TopicName: "Kick1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 2 }, "the kicked registration")

	// Just before the period: another kick goes through, the period has not.
	clk.Advance(period - time.Millisecond)
	tb.Topics().Update(&topicgroup.TopicConfig{TopicName: "Kick2", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 3 }, "the second kicked registration")
	if tb.Topics().IsOrderTopic(orderTopic) {
		t.Fatal("order table applied before one period passed")
	}

	// At the period, with no other trigger, the loop registers by itself.
	before := len(ns.requests(remoting.RegisterBroker))
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.Topics().IsOrderTopic(orderTopic) }, "the periodic registration")
	if n := len(ns.requests(remoting.RegisterBroker)); n <= before {
		t.Errorf("%d registrations after the period, want more than %d", n, before)
	}

	// The timer is re-armed: one more period clears the flag again.
	ns.setOrderTable(map[string]string{})
	clk.Advance(period)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !tb.Topics().IsOrderTopic(orderTopic) }, "the next periodic registration")
}

func plainTopic(name string) *topicgroup.TopicConfig {
	return &topicgroup.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
}

// TestRegisterIncrementSendsOnlyChangedTopics: after the full registration
// at start, topic changes are registered as increments holding only the
// changed topics (registerIncrementBrokerData), each with the data version
// that includes them.
func TestRegisterIncrementSendsOnlyChangedTopics(t *testing.T) {
	ns := startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.addr })
	regs := ns.registrations(t)
	if len(regs) != 1 || regs[0].TopicConfigTable["TBW102"] == nil {
		t.Fatalf("%d registrations at start (first holds TBW102: %v), want one full one", len(regs), len(regs) > 0)
	}
	const n = 50
	want := make(map[string]bool)
	for i := range n {
		name := fmt.Sprintf("Inc%02d", i)
		want[name] = true
		tb.Topics().Update(plainTopic(name))
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		seen := 0
		for _, w := range ns.registrations(t)[1:] {
			for name := range w.TopicConfigTable {
				if want[name] {
					seen++
				}
			}
		}
		return seen >= n
	}, "every created topic to be registered")
	regs = ns.registrations(t)
	seen := make(map[string]int)
	for i, w := range regs[1:] {
		for name := range w.TopicConfigTable {
			if !want[name] {
				t.Errorf("increment %d registers %s, which did not change", i+1, name)
			}
			seen[name]++
		}
	}
	for name, k := range seen {
		if k != 1 {
			t.Errorf("%s registered %d times, want once", name, k)
		}
	}
	if got, want := regs[len(regs)-1].DataVersion, tb.Topics().DataVersion(); got != want {
		t.Errorf("last increment's data version %+v, want the table's %+v", got, want)
	}
	if len(regs)-1 > n {
		t.Errorf("%d increments for %d changes", len(regs)-1, n)
	}
}

// TestRegisterFullAfterNameServerConnectionChanged: a name server drops a
// broker's routes when its connection closes (as one that restarts loses
// them), so the first registration over a new connection must carry every
// topic, not only the changed one.
func TestRegisterFullAfterNameServerConnectionChanged(t *testing.T) {
	ns := startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.addr })
	tb.Topics().Update(plainTopic("Before"))
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 2 }, "the increment of Before")

	ns.dropConns()
	// Let the broker's client connect again before the change, so that the
	// increment itself goes through (over the new connection).
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		_, err := tb.nsCli.InvokeTimeout(ns.addr, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "x", "key": "y"}, nil), time.Second)
		return err == nil
	}, "a new connection to the name server")
	before := len(ns.requests(remoting.RegisterBroker))
	tb.Topics().Update(plainTopic("After"))
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		for _, w := range ns.registrations(t)[before:] {
			if w.TopicConfigTable["After"] != nil && w.TopicConfigTable["Before"] != nil && w.TopicConfigTable["TBW102"] != nil {
				return true
			}
		}
		return false
	}, "a full registration over the new connection")
}

// TestRegisterIncrementRefusedIsRetriedInFull: a name server that refuses an
// increment gets every topic at once, not at the next period.
func TestRegisterIncrementRefusedIsRetriedInFull(t *testing.T) {
	ns := startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.addr })
	ns.setRefuse(1)
	tb.Topics().Update(plainTopic("Refused"))
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 3 }, "the refused increment and its retry")
	regs := ns.registrations(t)
	if w := regs[1]; len(w.TopicConfigTable) != 1 || w.TopicConfigTable["Refused"] == nil {
		t.Errorf("refused increment holds %d topics, want only Refused", len(w.TopicConfigTable))
	}
	if w := regs[2]; w.TopicConfigTable["Refused"] == nil || w.TopicConfigTable["TBW102"] == nil {
		t.Errorf("retry holds %d topics, want all of them", len(w.TopicConfigTable))
	}

	// Refused twice: the topic is sent again with the next change, and the
	// name server, which holds no full registration, gets a full one.
	ns.setRefuse(2)
	tb.Topics().Update(plainTopic("Twice"))
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 5 }, "the refused increment and retry")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !tb.registeredAll.Load() }, "the broker to count itself unregistered")
	tb.Topics().Update(plainTopic("Next"))
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 6 }, "the next registration")
	regs = ns.registrations(t)
	if w := regs[5]; w.TopicConfigTable["Twice"] == nil || w.TopicConfigTable["Next"] == nil || w.TopicConfigTable["TBW102"] == nil {
		t.Errorf("registration after the refusals holds %d topics, want all of them", len(w.TopicConfigTable))
	}
	testutil.WaitFor(t, coreTestTimeout, tb.registeredAll.Load, "registered again")
}
