package broker_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
)

// The name server's route over a master's death and restart in controller
// mode, as the stock proxy reads it (ClusterTopicRouteService.getBrokerAddr
// takes brokerAddrs[0] of the route of the topic named after the broker
// group). A 5.3.3 broker registers only once the controller gave it a role
// (it starts isolated) and then under the id the controller gave it
// (ReplicasManager.changeToSlave sets brokerId to its controller id and
// registers at once; changeToMaster sets 0 and registers at once). So
// after the switch the route names the new master under 0 and never again
// the old one, and the restarted old master appears only under its
// controller id, answering a send as a 5.3.3 slave does
// (HookUtils.checkBeforePutMessage: SERVICE_NOT_AVAILABLE).
//
// This pins what the failover soak's "the stock proxy keeps sending to the
// restarted old master" (issue 45) is not: every route the name server
// serves after the switch is right ({0: old, 2: new} -> {2: new} ->
// {0: new} -> {0: new, 1: old}), and the new master takes writes once
// routed. The stock proxy's own route cache (a Caffeine refreshAfterWrite
// of topicRouteServiceCacheRefreshSeconds, 20 s) goes on naming the old
// master until its next reload, on Java 5.3.3 brokers as on rmq ones: in
// the kept soak logs every SDK failure window ends 6-19 s after the kill,
// 20 s after the previous window ended, with Java brokers as with rmq.
func TestControllerRestartedMasterNeverRoutedAsMaster(t *testing.T) {
	ctl := testbroker.StartController(t)
	ns := testbroker.StartNamesrv(t)
	member := func(o *broker.Options) { testbroker.ControllerMember(o, ctl.Addr(), ns.Addr()) }
	bs := []*testbroker.Broker{testbroker.Start(t, testbroker.Options(t, member)), testbroker.Start(t, testbroker.Options(t, member))}
	master := waitMasterOf(t, bs, "")
	old := bs[0]
	if master == bs[1].Broker.Addr() {
		old = bs[1]
	}
	oldAddr := old.Broker.Addr()
	// The slave must be in the sync state set to be elected.
	testutil.WaitFor(t, 30*time.Second, func() bool {
		st, _ := old.ControllerState()
		return st.Master && len(st.SyncStateSet) == 2
	}, "both brokers in the sync state set")
	waitRouteMaster(t, ns, master)

	// Watch every route of the group's own topic from before the kill.
	w := watchRoutes(t, ns, "bs")
	old.Stop()
	newMaster := waitMasterOf(t, bs, oldAddr)
	waitRouteMaster(t, ns, newMaster)
	switched := w.mark(t, newMaster)
	// Once routed, the new master takes writes: a reloaded route ends a
	// client's refusals.
	for _, b := range bs {
		if b.Broker.Addr() == newMaster {
			if resp := b.Client.Send(brokertest.Send{Topic: "bs", Body: []byte("x")}); resp.Code != remoting.Success {
				t.Fatalf("send to the new master once routed: code %d %q", resp.Code, resp.Remark)
			}
		}
	}

	restarted := testbroker.Start(t, old.Opts)
	testutil.WaitFor(t, 30*time.Second, func() bool {
		st, _ := restarted.ControllerState()
		if st.Master || st.BrokerID <= 0 || st.MasterEpoch == 0 {
			return false
		}
		rd := ns.Routes().TopicRoute("bs")
		return rd != nil && len(rd.BrokerDatas) == 1 && rd.BrokerDatas[0].BrokerAddrs[st.BrokerID] == oldAddr
	}, "the restarted old master to be a slave routed under its controller id")
	st, _ := restarted.ControllerState()
	time.Sleep(300 * time.Millisecond) // a few more registrations of both
	routes := w.stop()
	t.Logf("routes of the group's topic (brokerAddrs) from the kill on; the switch at %d: %v", switched, routes)

	for i, r := range routes[switched:] {
		if r[0] != newMaster {
			t.Fatalf("route %d after the switch names master %q, want the new master %s (routes since the switch: %v)", i, r[0], newMaster, routes[switched:])
		}
		for id, addr := range r {
			if addr == oldAddr && id != st.BrokerID {
				t.Fatalf("route %d after the switch has the old master %s under id %d, want only its controller id %d: %v", i, oldAddr, id, st.BrokerID, routes[switched:])
			}
		}
	}
	// A send that reaches it anyway (a client's stale route) is refused as
	// by a 5.3.3 slave.
	resp := restarted.Client.Send(brokertest.Send{Topic: "bs", Body: []byte("x")})
	if resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send to the restarted old master (slave): code %d %q, want SERVICE_NOT_AVAILABLE (%d)", resp.Code, resp.Remark, remoting.ServiceNotAvailable)
	}
}

// waitMasterOf waits until a broker of bs other than not is the controller's
// master and returns its address.
func waitMasterOf(t *testing.T, bs []*testbroker.Broker, not string) string {
	t.Helper()
	var addr string
	testutil.WaitFor(t, 30*time.Second, func() bool {
		for _, b := range bs {
			if b.Broker.Addr() == not {
				continue
			}
			if st, _ := b.ControllerState(); st.Master {
				addr = b.Broker.Addr()
				return true
			}
		}
		return false
	}, "a master")
	return addr
}

func waitRouteMaster(t *testing.T, ns *namesrv.Server, want string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() bool {
		rd := ns.Routes().TopicRoute("bs")
		return rd != nil && len(rd.BrokerDatas) == 1 && rd.BrokerDatas[0].BrokerAddrs[0] == want
	}, fmt.Sprintf("the route to name master %s", want))
}

// routeWatch records each distinct brokerAddrs of a topic's route, polled
// every 2 ms.
type routeWatch struct {
	mu     sync.Mutex
	routes []map[int64]string
	done   chan struct{}
	wg     sync.WaitGroup
}

func watchRoutes(t *testing.T, ns *namesrv.Server, topic string) *routeWatch {
	w := &routeWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			cur := map[int64]string{}
			if rd := ns.Routes().TopicRoute(topic); rd != nil {
				for _, bd := range rd.BrokerDatas {
					maps.Copy(cur, bd.BrokerAddrs)
				}
			}
			w.mu.Lock()
			if n := len(w.routes); n == 0 || !maps.Equal(w.routes[n-1], cur) {
				w.routes = append(w.routes, cur)
			}
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// mark waits until the latest route recorded names master and returns its
// index.
func (w *routeWatch) mark(t *testing.T, master string) int {
	t.Helper()
	i := -1
	testutil.WaitFor(t, 5*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.routes); n > 0 && w.routes[n-1][0] == master {
			i = n - 1
		}
		return i >= 0
	}, "the watch to see the new master")
	return i
}

func (w *routeWatch) stop() []map[int64]string {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.routes)
}
