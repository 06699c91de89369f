package replicas_test

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/replicas"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// stubHA stands in for the AutoSwitch HA service (no bytes move): it
// records the role the manager gave it, proposes the sync state set the
// test asks for, and lets a SYNC_MASTER send through. It checks the
// controller side of the protocol end to end: registration, election,
// 1001, 1004, 1008 and the name server's view.
type stubHA struct {
	mu      sync.Mutex
	epoch   int32
	set     []int64
	setE    int32
	master  bool
	propose func([]int64)
	ln      net.Listener
}

func (h *stubHA) ChangeToMaster(e int32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e < h.epoch {
		return fmt.Errorf("epoch %d below %d", e, h.epoch)
	}
	h.epoch, h.master = e, true
	return nil
}

func (h *stubHA) ChangeToSlave(_ string, e int32, _ int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch, h.master = e, false
	return nil
}

func (h *stubHA) SetSyncStateSet(ids []int64, e int32) {
	h.mu.Lock()
	h.set, h.setE = ids, e
	h.mu.Unlock()
}

func (h *stubHA) SyncStateSet() ([]int64, int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.set), h.setE
}

func (h *stubHA) ConfirmOffset() int64   { return 0 }
func (h *stubHA) SetLocalBrokerID(int64) {}
func (h *stubHA) LastEpoch() int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}
func (h *stubHA) EpochEntries() []remoting.EpochEntry   { return nil }
func (h *stubHA) Start() (err error)                    { h.ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }
func (h *stubHA) Close()                                { h.ln.Close() }
func (h *stubHA) Addr() net.Addr                        { return h.ln.Addr() }
func (h *stubHA) SetMasterHAAddr(string)                {}
func (h *stubHA) WaitReplicated(_ int64, fn func(bool)) { fn(true) }
func (h *stubHA) IsSlaveOK(int64) bool                  { return true }

func startController(t *testing.T) *controller.Controller { return testbroker.StartController(t) }

type member struct {
	b    *testbroker.Broker
	ha   *stubHA
	opts broker.Options
}

func startMember(t *testing.T, ctlAddr, nsAddr, dir string, port int) *member {
	return startMemberHA(t, ctlAddr, nsAddr, dir, port, true)
}

// startMemberHA starts a controller-mode broker of set "bs": with stub,
// the stub HA service; else the real AutoSwitch one.
func startMemberHA(t *testing.T, ctlAddr, nsAddr, dir string, port int, stub bool) *member {
	t.Helper()
	m := &member{ha: &stubHA{}}
	m.opts = testbroker.Options(t, func(o *broker.Options) {
		testbroker.ControllerMember(o, ctlAddr, nsAddr)
		if dir != "" {
			o.StorePathRootDir, o.ListenPort = dir, port
		}
		if !stub {
			return
		}
		o.MinInSyncReplicas = 2
		o.ControllerHA = func(_ *store.Store, _ *broker.Options, on func([]int64)) (replicas.Service, error) {
			m.ha.propose = on
			return m.ha, nil
		}
	})
	m.b = testbroker.Start(t, m.opts)
	return m
}

func send(m *member, body string) int32 {
	return m.b.Send(brokertest.Send{Topic: "TopicTest", Body: []byte(body)}).Code
}

func role(m *member) replicas.Role {
	r, _ := m.b.ReplicasRole()
	return r
}

// members is a broker set; a stopped member's place is nil.
type members []*member

// split returns the live master (nil when none) and the live slaves.
func (ms members) split() (master *member, slaves []*member) {
	for _, m := range ms {
		if m == nil {
			continue
		}
		if role(m).Master {
			master = m
		} else {
			slaves = append(slaves, m)
		}
	}
	return master, slaves
}

// stop stops m, leaves its place empty, and returns its store directory
// and port for a restart.
func (ms members) stop(m *member) (dir string, port int) {
	m.b.Stop()
	for i := range ms {
		if ms[i] == m {
			ms[i] = nil
		}
	}
	return m.opts.StorePathRootDir, m.opts.ListenPort
}

// Three rmq brokers of one broker set under an rmq controller: one master,
// two slaves; the sync state set the master proposes is accepted; sends go
// to the master only; the master stops, a slave becomes master in a higher
// epoch, and the old master comes back as a slave of that epoch.
func TestThreeBrokersUnderTheRmqController(t *testing.T) {
	ctl := startController(t)
	ns := testbroker.StartNamesrv(t)
	var ms members
	for range 3 {
		ms = append(ms, startMember(t, ctl.Addr(), ns.Addr(), "", 0))
	}
	masterOf := ms.split
	testutil.WaitFor(t, 20*time.Second, func() bool {
		master, slaves := masterOf()
		if master == nil || len(slaves) != 2 {
			return false
		}
		e := role(master).MasterEpoch
		for _, s := range slaves {
			if r := role(s); r.MasterEpoch != e || r.MasterAddr != master.b.Broker.Addr() {
				return false
			}
		}
		return true
	}, "one master and two slaves of its epoch")
	master, slaves := masterOf()
	epoch1 := role(master).MasterEpoch
	ids := []int64{role(master).MasterID}
	for _, s := range slaves {
		ids = append(ids, role(s).ControllerID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{1, 2, 3}) {
		t.Fatalf("controller ids %v, want 1..3", ids)
	}
	// The name server routes the set with the master at id 0 and the
	// slaves at their controller ids.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		g := ns.Routes().MemberGroup("c", "bs")
		return g != nil && len(g.BrokerAddrs) == 3 && g.BrokerAddrs[0] == master.b.Broker.Addr()
	}, "the name server to route the set")

	// minInSyncReplicas=2 and a sync state set of the master alone: a
	// send that waits is refused as stock (IN_SYNC_REPLICAS_NOT_ENOUGH);
	// one that does not wait (WAIT=false) is stored.
	if resp := master.b.Send(brokertest.Send{Topic: "TopicTest", Body: []byte("early")}); resp.Code != remoting.SystemError ||
		resp.Remark != "in-sync replicas not enough" {
		t.Fatalf("send below minInSyncReplicas: code %d %q", resp.Code, resp.Remark)
	}
	if resp := master.b.Send(brokertest.Send{Topic: "TopicTest", Body: []byte("nowait"), Props: brokertest.Props("WAIT", "false")}); resp.Code != remoting.Success {
		t.Fatalf("WAIT=false send below minInSyncReplicas: code %d %q", resp.Code, resp.Remark)
	}
	// The HA service proposes all three: the controller takes it.
	master.ha.propose([]int64{1, 2, 3})
	testutil.WaitFor(t, 10*time.Second, func() bool {
		set, _ := master.ha.SyncStateSet()
		return len(set) == 3
	}, "the sync state set of three")

	if code := send(master, "hello"); code != remoting.Success {
		t.Fatalf("send to the master: code %d", code)
	}
	if code := send(slaves[0], "hello"); code == remoting.Success {
		t.Fatal("a slave took a send")
	}

	// The master goes: a slave takes over in a higher epoch.
	start := time.Now()
	dir, port := ms.stop(master)
	testutil.WaitFor(t, 20*time.Second, func() bool {
		m, _ := masterOf()
		return m != nil && role(m).MasterEpoch > epoch1
	}, "a new master")
	t.Logf("stop -> new master: %v", time.Since(start))
	newMaster, rest := masterOf()
	newMaster.ha.propose([]int64{role(newMaster).ControllerID, role(rest[0]).ControllerID})
	testutil.WaitFor(t, 10*time.Second, func() bool {
		set, _ := newMaster.ha.SyncStateSet()
		return len(set) == 2
	}, "the new master's sync state set of two")
	if code := send(newMaster, "after"); code != remoting.Success {
		t.Fatalf("send to the new master: code %d", code)
	}

	// The old master restarts on its store: a slave of the new epoch.
	back := startMember(t, ctl.Addr(), ns.Addr(), dir, port)
	testutil.WaitFor(t, 20*time.Second, func() bool {
		r := role(back)
		return !r.Master && r.MasterEpoch == role(newMaster).MasterEpoch && r.MasterAddr == newMaster.b.Broker.Addr()
	}, "the old master to rejoin as slave")
}

// The same set with the real AutoSwitch HA service: the slaves replicate
// and join the sync state set, SYNC_MASTER sends are acknowledged by all
// of it (allAckInSyncStateSet), the master stops, a slave takes over in a
// higher epoch with every acknowledged message, and the old master comes
// back as a slave that catches up with the new master.
func TestThreeBrokersReplicateAndFailOver(t *testing.T) {
	ctl := startController(t)
	ns := testbroker.StartNamesrv(t)
	var ms members
	for range 3 {
		ms = append(ms, startMemberHA(t, ctl.Addr(), ns.Addr(), "", 0, false))
	}
	live := ms.split
	testutil.WaitFor(t, 30*time.Second, func() bool {
		m, s := live()
		return m != nil && len(s) == 2 && len(role(m).SyncStateSet) == 3
	}, "a master with a sync state set of three")
	master, _ := live()
	epoch1 := role(master).MasterEpoch
	// haStatus (907) as AutoSwitchHAService answers it, and the epoch
	// table (1007) over the wire.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		resp := master.b.Invoke(remoting.GetBrokerHaStatus, nil, nil)
		var info remoting.HARuntimeInfo
		return resp.Code == remoting.Success && json.Unmarshal(resp.Body, &info) == nil &&
			info.Master && info.InSyncSlaveNums == 2 && len(info.HAConnectionInfo) == 2
	}, "haStatus: master with two in-sync slaves")
	resp := master.b.Invoke(remoting.GetBrokerEpochCache, nil, nil)
	var cache remoting.EpochEntryCache
	if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &cache) != nil || len(cache.EpochList) != 1 ||
		cache.EpochList[0].Epoch != epoch1 || cache.BrokerID != 0 || cache.BrokerName != "bs" {
		t.Fatalf("epoch cache: %d %s", resp.Code, resp.Body)
	}
	const n = 50
	var acked int
	for i := range n {
		if code := send(master, fmt.Sprintf("m%d", i)); code != remoting.Success {
			t.Fatalf("send %d: code %d", i, code)
		}
		acked++
	}
	end := master.b.Store().MaxPhyOffset()
	_, slaves := live()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		for _, s := range slaves {
			if s.b.Store().MaxPhyOffset() < end {
				return false
			}
		}
		return true
	}, "the slaves to hold every acknowledged message")

	start := time.Now()
	dir, port := ms.stop(master)
	testutil.WaitFor(t, 30*time.Second, func() bool {
		m, _ := live()
		return m != nil && role(m).MasterEpoch > epoch1
	}, "a new master")
	t.Logf("stop -> new master: %v", time.Since(start))
	newMaster, _ := live()
	if got := newMaster.b.Store().MaxPhyOffset(); got < end {
		t.Fatalf("new master holds %d bytes, %d were acknowledged", got, end)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return len(role(newMaster).SyncStateSet) >= 2
	}, "the remaining slave in the new master's sync state set")
	if code := send(newMaster, "after"); code != remoting.Success {
		t.Fatalf("send to the new master: code %d", code)
	}
	// Before it rejoins, the old master's store gets messages nobody else
	// has (as a crash leaves a master's unreplicated tail): started alone,
	// outside controller mode, with no name server.
	alone := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) {
		o.BrokerName, o.BrokerClusterName = "bs", "c"
		o.StorePathRootDir, o.ListenPort = dir, port
	}))
	for i := range 5 {
		if code := alone.Send(brokertest.Send{Topic: "TopicTest", Body: []byte(fmt.Sprintf("lost%d", i))}).Code; code != remoting.Success {
			t.Fatalf("tail send %d: code %d", i, code)
		}
	}
	tail := alone.Store().MaxPhyOffset()
	alone.Stop()
	if tail <= end {
		t.Fatalf("the tail did not grow the old master's store: %d <= %d", tail, end)
	}
	back := startMemberHA(t, ctl.Addr(), ns.Addr(), dir, port, false)
	testutil.WaitFor(t, 30*time.Second, func() bool {
		r := role(back)
		return !r.Master && r.MasterEpoch == role(newMaster).MasterEpoch &&
			back.b.Store().MaxPhyOffset() == newMaster.b.Store().MaxPhyOffset()
	}, "the old master to rejoin as slave, cut its tail and catch up")
	// Its commitlog is now the new master's byte for byte from the cut.
	a, b := make([]byte, 256), make([]byte, 256)
	na, _ := back.b.Store().ReadCommitLog(end, a)
	nb, _ := newMaster.b.Store().ReadCommitLog(end, b)
	if na == 0 || na != nb || string(a[:na]) != string(b[:nb]) {
		t.Fatalf("after the cut at %d the old master holds other bytes than the new master (%d vs %d)", end, na, nb)
	}
	t.Logf("sent %d acknowledged; new master end %d", acked, newMaster.b.Store().MaxPhyOffset())
}
