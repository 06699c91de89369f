package grpcapi

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/namesrv"
)

// pair is two brokers of one cluster, on 127.0.0.1 and 127.0.0.2, with
// their gRPC endpoints on one port (as the stock proxy's routes assume),
// registered with one name server that runs on a manual clock and expires
// brokers only when the test scans.
type pair struct {
	ns    *namesrv.Server
	nsClk *clock.Manual
	clkA  *clock.Manual // broker A's clock (its route cache); B runs on the wall clock
	a, b  *testServer
	port  int
}

func startPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{nsClk: clock.NewManual(time.Now()), clkA: clock.NewManual(time.Now())}
	o := namesrv.DefaultOptions()
	o.ListenHost = "127.0.0.1"
	o.ListenPort = testutil.FreePort(t)
	o.Logger = testlog.New(t)
	o.Now = p.nsClk.Now
	o.ScanNotActiveBrokerInterval = time.Hour
	ns, err := namesrv.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	p.ns = ns
	start := func(name, ip string, clk clock.Clock) *testbroker.Broker {
		bo := testbroker.Options(t, func(bo *broker.Options) {
			bo.BrokerName, bo.BrokerClusterName = name, "PairCluster"
			bo.ListenHost, bo.BrokerIP1, bo.BrokerIP2 = ip, ip, ip
			bo.NamesrvAddr = ns.Addr()
			if clk != nil {
				bo.Clock = clk
			}
		})
		return testbroker.Start(t, bo)
	}
	ta, tb := start("pair-a", "127.0.0.1", p.clkA), start("pair-b", "127.0.0.2", nil)
	// Both endpoints share one port (the route names host:port). It is
	// picked once the brokers hold theirs, and picked again when another
	// process or package took it in between (a clean-clone make test saw
	// "address already in use" once).
	for try := 0; ; try++ {
		p.port = freePortOnBoth(t)
		sa, errA := startGRPC(ta, p.port)
		if errA == nil {
			sb, errB := startGRPC(tb, p.port)
			if errB == nil {
				t.Cleanup(sa.Stop)
				t.Cleanup(sb.Stop)
				p.a = &testServer{b: ta.Broker, srv: sa}
				p.b = &testServer{b: tb.Broker, srv: sb}
				break
			}
			sa.Stop()
			errA = errB
		}
		if try == 4 {
			t.Fatal(errA)
		}
	}
	return p
}

// startGRPC starts a gRPC endpoint for tb on port.
func startGRPC(tb *testbroker.Broker, port int) (*Server, error) {
	o := DefaultOptions()
	o.Port = port
	o.Logger = tb.Broker.Options().Logger
	srv := New(tb.Broker, o)
	if err := srv.Start(); err != nil {
		return nil, err
	}
	return srv, nil
}

// freePortOnBoth is a port free on 127.0.0.1 and 127.0.0.2.
func freePortOnBoth(t *testing.T) int {
	t.Helper()
	for range 50 {
		port := testutil.FreePort(t)
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no port free on 127.0.0.1 and 127.0.0.2")
	return 0
}

// createOnBoth creates topic with n queues on both brokers and waits until
// the name server routes it to both.
func (p *pair) createOnBoth(t *testing.T, topic string, n int32) {
	t.Helper()
	p.a.createTopic(topic, n)
	p.b.createTopic(topic, n)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		rd := p.ns.Routes().TopicRoute(topic)
		return rd != nil && len(rd.QueueDatas) == 2
	}, "both brokers to register "+topic)
}

// queuesByEndpoint counts the route's queues per broker name and endpoint.
func queuesByEndpoint(mqs []*v2.MessageQueue) map[string]int {
	out := map[string]int{}
	for _, mq := range mqs {
		a := mq.GetBroker().GetEndpoints().GetAddresses()[0]
		out[mq.GetBroker().GetName()+"@"+net.JoinHostPort(a.GetHost(), strconv.Itoa(int(a.GetPort())))]++
	}
	return out
}

func TestClusterRouteListsEveryBroker(t *testing.T) {
	p := startPair(t)
	p.createOnBoth(t, "PairTopic", 4)
	port := strconv.Itoa(p.port)
	want := map[string]int{"pair-a@127.0.0.1:" + port: 4, "pair-b@127.0.0.2:" + port: 4}
	for _, ts := range []*testServer{p.a, p.b} {
		c := dial(t, ts, false)
		route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "PairTopic"}})
		if err != nil || route.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryRoute via %s: %v %v", ts.endpoint(), route.GetStatus(), err)
		}
		if got := queuesByEndpoint(route.MessageQueues); !equalCounts(got, want) {
			t.Fatalf("route via %s = %v, want %v", ts.endpoint(), got, want)
		}
		as, err := c.QueryAssignment(callCtx(t), &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: "PairTopic"}, Group: &v2.Resource{Name: "PairGroup"}})
		if err != nil || as.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryAssignment via %s: %v %v", ts.endpoint(), as.GetStatus(), err)
		}
		var brokers []string
		for _, a := range as.Assignments {
			if a.GetMessageQueue().GetId() != -1 {
				t.Fatalf("assignment %v: id %d, want -1", a, a.GetMessageQueue().GetId())
			}
			brokers = append(brokers, a.GetMessageQueue().GetBroker().GetName())
		}
		slices.Sort(brokers)
		if !slices.Equal(brokers, []string{"pair-a", "pair-b"}) {
			t.Fatalf("assignments via %s on %v, want both brokers", ts.endpoint(), brokers)
		}
	}
	// A topic only broker B has is routed by A's endpoint to B.
	p.b.createTopic("OnlyOnB", 2)
	testutil.WaitFor(t, 10*time.Second, func() bool { return p.ns.Routes().TopicRoute("OnlyOnB") != nil }, "B to register OnlyOnB")
	route, err := dial(t, p.a, false).QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "OnlyOnB"}})
	if err != nil || route.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("QueryRoute OnlyOnB: %v %v", route.GetStatus(), err)
	}
	if got := queuesByEndpoint(route.MessageQueues); !equalCounts(got, map[string]int{"pair-b@127.0.0.2:" + port: 2}) {
		t.Fatalf("route of OnlyOnB via A = %v", got)
	}
	// Neither broker nor the name server knows it: TOPIC_NOT_FOUND.
	route, err = dial(t, p.a, false).QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Nowhere"}})
	if err != nil || route.GetStatus().GetCode() != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("QueryRoute Nowhere: %v %v", route.GetStatus(), err)
	}
}

// A broker the name server expires leaves the routes once the cache
// reloads (20 s of the endpoint's clock), and sends through the remaining
// broker go on.
func TestClusterRouteShrinksAfterExpiry(t *testing.T) {
	p := startPair(t)
	p.createOnBoth(t, "Shrink", 2)
	c := dial(t, p.a, false)
	query := func() map[string]int {
		t.Helper()
		route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Shrink"}})
		if err != nil || route.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryRoute: %v %v", route.GetStatus(), err)
		}
		return queuesByEndpoint(route.MessageQueues)
	}
	port := strconv.Itoa(p.port)
	both := map[string]int{"pair-a@127.0.0.1:" + port: 2, "pair-b@127.0.0.2:" + port: 2}
	if got := query(); !equalCounts(got, both) {
		t.Fatalf("route = %v, want %v", got, both)
	}

	// Past the expiry on the name server's clock, A registers again (a new
	// topic) and B does not: the scan drops B.
	p.nsClk.Advance(namesrv.DefaultBrokerChannelExpiredTime + time.Second)
	p.a.createTopic("Fresh", 1)
	testutil.WaitFor(t, 10*time.Second, func() bool { return p.ns.Routes().TopicRoute("Fresh") != nil }, "A to register again")
	p.ns.ScanNotActiveBroker()
	if rd := p.ns.Routes().TopicRoute("Shrink"); rd == nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "pair-a" {
		t.Fatalf("name server route after the scan = %+v, want pair-a only", rd)
	}

	// The endpoint's cached route holds until it is 20 s old.
	if got := query(); !equalCounts(got, both) {
		t.Fatalf("cached route = %v, want %v", got, both)
	}
	p.clkA.Advance(routeRefresh)
	onlyA := map[string]int{"pair-a@127.0.0.1:" + port: 2}
	if got := query(); !equalCounts(got, onlyA) {
		t.Fatalf("route after the reload = %v, want %v", got, onlyA)
	}
	resp, err := c.SendMessage(callCtx(t), sendReq("Shrink", []byte("after"), "0B0000000000000000000000A1"))
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("send after the shrink: %v %v", resp.GetStatus(), err)
	}
	p.a.waitCount(t, "Shrink", 2, 1)
}

// A name server that cannot be reached before any route was cached leaves
// the endpoint answering its own queues; once cached, a failed reload
// keeps the old route (TopicRouteService.reload).
func TestClusterRouteNamesrvDown(t *testing.T) {
	p := startPair(t)
	p.createOnBoth(t, "Down", 1)
	c := dial(t, p.a, false)
	query := func(topic string) map[string]int {
		t.Helper()
		route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
		if err != nil || route.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryRoute %s: %v %v", topic, route.GetStatus(), err)
		}
		return queuesByEndpoint(route.MessageQueues)
	}
	port := strconv.Itoa(p.port)
	if got := query("Down"); len(got) != 2 {
		t.Fatalf("route = %v, want both brokers", got)
	}
	p.a.createTopic("LocalOnly", 1)
	// Registered before the name server goes: a registration in flight at
	// its shutdown would wait for its deadline.
	testutil.WaitFor(t, 10*time.Second, func() bool { return p.ns.Routes().TopicRoute("LocalOnly") != nil }, "A to register LocalOnly")
	p.ns.Shutdown()
	p.clkA.Advance(routeRefresh)
	if got := query("Down"); len(got) != 2 {
		t.Fatalf("route after a failed reload = %v, want the cached one", got)
	}
	if got := query("LocalOnly"); !equalCounts(got, map[string]int{"pair-a@127.0.0.1:" + port: 1}) {
		t.Fatalf("route without a name server = %v, want A's own queue", got)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A receipt handle another broker issued (its extraInfo names that broker)
// that reaches this endpoint acts on nothing here: the ack is OK and changes
// nothing, a change of invisible time and a move to the DLQ answer as for a
// message not in flight, and the local message at the same queue offset is
// still in flight with its own handle.
func TestForeignReceiptHandle(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	c := cs.seed(t, "Foreign", 1, 1, "tagA")
	r := receiveRaw(t, c, callCtx(t), recvReq("ForeignGroup", "Foreign", 30*time.Second))
	if r.status.GetCode() != v2.Code_OK || len(r.msgs) != 1 {
		t.Fatalf("receive: %v, %d messages", r.status, len(r.msgs))
	}
	sp := r.msgs[0].GetSystemProperties()
	f := strings.Split(sp.GetReceiptHandle(), " ")
	f[5] = "other-broker"
	foreign := strings.Join(f, " ")
	group, topic := &v2.Resource{Name: "ForeignGroup"}, &v2.Resource{Name: "Foreign"}

	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: group, Topic: topic,
		Entries: []*v2.AckMessageEntry{{MessageId: sp.GetMessageId(), ReceiptHandle: foreign}}})
	if err != nil || ack.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("ack of a foreign handle: %v %v", ack.GetStatus(), err)
	}
	if n := cs.b.Pop().Stats().InFlight; n != 1 {
		t.Fatalf("%d in flight after the foreign ack, want 1", n)
	}
	ci, err := c.ChangeInvisibleDuration(callCtx(t), &v2.ChangeInvisibleDurationRequest{Group: group, Topic: topic,
		ReceiptHandle: foreign, MessageId: sp.GetMessageId(), InvisibleDuration: durationpb.New(time.Minute)})
	if err != nil || ci.GetStatus().GetCode() != v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("change invisible of a foreign handle: %v %v", ci.GetStatus(), err)
	}
	fwd, err := c.ForwardMessageToDeadLetterQueue(callCtx(t), &v2.ForwardMessageToDeadLetterQueueRequest{Group: group, Topic: topic,
		ReceiptHandle: foreign, MessageId: sp.GetMessageId(), DeliveryAttempt: 1, MaxDeliveryAttempts: 16})
	if err != nil || fwd.GetStatus().GetCode() == v2.Code_OK {
		t.Fatalf("DLQ move of a foreign handle: %v %v", fwd.GetStatus(), err)
	}
	ack, err = c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: group, Topic: topic, Entries: ackEntries(r.msgs)})
	if err != nil || ack.GetStatus().GetCode() != v2.Code_OK || cs.b.Pop().Stats().InFlight != 0 {
		t.Fatalf("ack of the own handle: %v %v, in flight %d", ack.GetStatus(), err, cs.b.Pop().Stats().InFlight)
	}
}
