package namesrv

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// notifyRecorder is a broker's listener that records the
// NOTIFY_MIN_BROKER_ID_CHANGE requests it gets.
type notifyRecorder struct {
	mu  sync.Mutex
	got []remoting.NotifyMinBrokerIDChangeRequestHeader
}

func (n *notifyRecorder) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.Code == remoting.NotifyMinBrokerIDChange {
		h, err := remoting.DecodeHeader[remoting.NotifyMinBrokerIDChangeRequestHeader](req)
		if err == nil {
			n.mu.Lock()
			n.got = append(n.got, h)
			n.mu.Unlock()
		}
	}
	return nil
}

func (n *notifyRecorder) take() []remoting.NotifyMinBrokerIDChangeRequestHeader {
	n.mu.Lock()
	defer n.mu.Unlock()
	g := n.got
	n.got = nil
	return g
}

func listenRecorder(t *testing.T) (*notifyRecorder, string) {
	t.Helper()
	rec := &notifyRecorder{}
	srv, err := remoting.NewServer(rec, remoting.ServerOptions{Addrs: []string{"127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return rec, srv.Addrs()[0]
}

func actingRegisterExt(name, addr string, id int64) map[string]string {
	return withExt(registerExt("C", name, addr, id), "enableActingMaster", "true", "heartbeatTimeoutMillis", "10000")
}

func memberGroup(t *testing.T, c *rawConn, name string) map[int64]string {
	t.Helper()
	r := c.invoke(remoting.NewRequest(remoting.GetBrokerMemberGroup, map[string]string{"clusterName": "C", "brokerName": name}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("901: %v", r)
	}
	b, err := remoting.DecodeGetBrokerMemberGroupResponseBody(r.Body)
	if err != nil || b.BrokerMemberGroup == nil || b.BrokerMemberGroup.BrokerName != name || b.BrokerMemberGroup.Cluster != "C" {
		t.Fatalf("901 body %s: %v", r.Body, err)
	}
	return b.BrokerMemberGroup.BrokerAddrs
}

// The whole name server side of slave-acting-master: 901 lists the
// members, 904 keeps the slave alive while the master expires, the slave is
// told (905) and is routed as a read-only master, and when the master
// registers again the slave is told again and the route is the master's.
func TestActingMasterNameServer(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, func(o *Options) {
		o.Now = clk.Now
		o.ScanNotActiveBrokerInterval = time.Hour // scans are run by the test
		o.SupportActingMaster = true
		o.NotifyMinBrokerIDChanged = true
	})
	rec, slaveAddr := listenRecorder(t)
	const masterAddr = "127.0.0.1:1"
	master, slave := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	reg := func(c *rawConn, addr string, id int64) {
		t.Helper()
		if r := c.invoke(remoting.NewRequest(remoting.RegisterBroker, actingRegisterExt("b", addr, id), registerBody(1, tc("T", 4, 6)))); r.Code != remoting.Success {
			t.Fatalf("register %d: %v", id, r)
		}
	}
	reg(master, masterAddr, 0)
	reg(slave, slaveAddr, 1)
	if g := memberGroup(t, slave, "b"); len(g) != 2 || g[0] != masterAddr || g[1] != slaveAddr {
		t.Fatalf("members: %v", g)
	}
	if g := memberGroup(t, slave, "nope"); len(g) != 0 {
		t.Fatalf("unknown group members: %v", g)
	}
	route := func() (int32, map[int64]string) {
		rd := s.Routes().TopicRoute("T")
		if rd == nil || len(rd.QueueDatas) != 1 || len(rd.BrokerDatas) != 1 {
			t.Fatalf("route: %+v", rd)
		}
		return rd.QueueDatas[0].Perm, rd.BrokerDatas[0].BrokerAddrs
	}
	if p, a := route(); p != 6 || len(a) != 2 {
		t.Fatalf("route with master: perm %d %v", p, a)
	}

	// Only the slave heartbeats (oneway, no brokerId, as BrokerOuterAPI).
	clk.Advance(8 * time.Second)
	hb := remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{"clusterName": "C", "brokerName": "b", "brokerAddr": slaveAddr}, nil)
	if r := slave.invoke(hb); r.Code != remoting.Success {
		t.Fatalf("904: %v", r)
	}
	clk.Advance(3 * time.Second) // master 11 s silent (> its 10 s), slave 3 s
	s.ScanNotActiveBroker()
	if g := memberGroup(t, slave, "b"); len(g) != 1 || g[1] != slaveAddr {
		t.Fatalf("members after expiry: %v", g)
	}
	var got []remoting.NotifyMinBrokerIDChangeRequestHeader
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { got = append(got, rec.take()...); return len(got) > 0 }, "905 to the slave")
	if h := got[0]; h.MinBrokerID == nil || *h.MinBrokerID != 1 || h.MinBrokerAddr != slaveAddr || h.OfflineBrokerAddr != masterAddr {
		t.Fatalf("905 after expiry: %+v", h)
	}
	if p, a := route(); p != 4 || len(a) != 1 || a[0] != slaveAddr {
		t.Fatalf("route without master: perm %d %v (want the slave as a read-only id 0)", p, a)
	}

	// The master comes back.
	master2 := dialRaw(t, s.Addr())
	reg(master2, masterAddr, 0)
	got = nil
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { got = append(got, rec.take()...); return len(got) > 0 }, "905 when the master is back")
	if h := got[0]; h.MinBrokerID == nil || *h.MinBrokerID != 0 || h.MinBrokerAddr != masterAddr || h.HABrokerAddr != masterAddr+"-ha" || h.OfflineBrokerAddr != "" {
		t.Fatalf("905 after return: %+v", h)
	}
	if p, a := route(); p != 6 || len(a) != 2 || a[0] != masterAddr || a[1] != slaveAddr {
		t.Fatalf("route with master back: perm %d %v", p, a)
	}
}

// Without supportActingMaster and notifyMinBrokerIdChanged (the stock
// defaults) the route lists only the slave under its own id, read-only,
// and nobody is told.
func TestActingMasterDefaultsOff(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	on := true
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerName: "b", BrokerAddr: "m", BrokerID: 0, Topics: topics(1, tc("T", 4, 6)), EnableActingMaster: &on})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerName: "b", BrokerAddr: "s", BrokerID: 1, Topics: topics(1, tc("T", 4, 6)), EnableActingMaster: &on})
	m.UnregisterBroker("C", "m", "b", 0)
	rd := m.TopicRoute("T")
	if rd == nil || rd.QueueDatas[0].Perm != 4 || rd.BrokerDatas[0].BrokerAddrs[1] != "s" || len(rd.BrokerDatas[0].BrokerAddrs) != 1 {
		t.Fatalf("route: %+v %+v", rd.QueueDatas[0], rd.BrokerDatas[0])
	}
	if c := m.TakeMinBrokerIDChanges(); len(c) != 0 {
		t.Fatalf("notifications with notifyMinBrokerIdChanged off: %+v", c)
	}
	// A 4.x slave (no enableActingMaster) of a group without master never
	// writes queue data nor loses write permission by itself.
	m2 := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m2.SetActingMaster(true, true)
	m2.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerName: "b", BrokerAddr: "s", BrokerID: 1, Topics: topics(1, tc("T", 4, 6))})
	if rd := m2.TopicRoute("T"); rd != nil {
		t.Fatalf("4.x slave wrote queue data: %+v", rd)
	}
}

// 904 with a brokerId is a controller-mode heartbeat: with a controller in
// the name server it goes there; without brokerId it renews the route.
func TestBrokerHeartbeatControllerOrRoute(t *testing.T) {
	ctl := &fakeController{}
	s := startServer(t, func(o *Options) { o.Controller = ctl })
	c := dialRaw(t, s.Addr())
	if r := c.invoke(remoting.NewRequest(remoting.RegisterBroker, actingRegisterExt("b", "127.0.0.1:1", 0), registerBody(1, tc("T", 4, 6)))); r.Code != remoting.Success {
		t.Fatalf("register: %v", r)
	}
	ext := map[string]string{"clusterName": "C", "brokerName": "b", "brokerAddr": "127.0.0.1:1"}
	if r := c.invoke(remoting.NewRequest(remoting.BrokerHeartbeat, ext, nil)); r.Code != remoting.Success || ctl.calls() != 0 {
		t.Fatalf("acting-master 904: %v, controller calls %d", r, ctl.calls())
	}
	if r := c.invoke(remoting.NewRequest(remoting.BrokerHeartbeat, withExt(ext, "brokerId", strconv.Itoa(1)), nil)); r.Code != 4242 || ctl.calls() != 1 {
		t.Fatalf("controller 904: %v, controller calls %d", r, ctl.calls())
	}
}

type fakeController struct {
	mu sync.Mutex
	n  int
}

func (f *fakeController) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	return remoting.NewResponse(req, 4242, "controller")
}
func (f *fakeController) ConnClosed(*remoting.Conn) {}
func (f *fakeController) Serves(code int32) bool    { return code == remoting.BrokerHeartbeat }
func (f *fakeController) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
