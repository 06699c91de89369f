package broker

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

// fakeNamesrv records the requests a broker sends to a name server and
// answers REGISTER_BROKER with an optional order-topic table.
type fakeNamesrv struct {
	addr string
	mu   sync.Mutex
	reqs []*remoting.Command
	// orderTable is returned as the REGISTER_BROKER body when set.
	orderTable map[string]string
}

func startFakeNamesrv(t *testing.T) *fakeNamesrv {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ns := &fakeNamesrv{addr: addr}
	brokertest.Serve(t, addr, ns)
	return ns
}

func (ns *fakeNamesrv) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.reqs = append(ns.reqs, req)
	resp := remoting.NewResponse(req, remoting.Success, "")
	if req.Code == remoting.RegisterBroker && ns.orderTable != nil {
		resp.Body = remoting.MarshalBody(&remoting.KVTable{Table: ns.orderTable})
	}
	return resp
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
	tb := startBroker(t, func(o *Options) { o.BrokerPermission = remoting.PermRead })
	var body remoting.RegisterBrokerBody
	if err := remoting.UnmarshalBody(tb.registerBody(tb.runtime()), &body); err != nil {
		t.Fatal(err)
	}
	for name, tc := range body.TopicConfigSerializeWrapper.TopicConfigTable {
		if tc.Perm != remoting.PermRead {
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

	// A kick is served by the loop goroutine, so once its registration
	// arrives the loop has armed its timer at start+period (the manual clock
	// has not moved).
	tb.registerAsync()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(ns.requests(remoting.RegisterBroker)) >= 2 }, "the kicked registration")

	// Just before the period: another kick goes through, the period has not.
	clk.Advance(period - time.Millisecond)
	tb.registerAsync()
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
