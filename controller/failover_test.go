package controller

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// fakeBroker records the NOTIFY_BROKER_ROLE_CHANGED it gets.
type fakeBroker struct {
	mu    sync.Mutex
	got   []remoting.ElectMasterResponseHeader
	srv   *remoting.Server
	addrs string
}

func (f *fakeBroker) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.Code == remoting.NotifyBrokerRoleChanged {
		h, _ := remoting.DecodeHeader[remoting.ElectMasterResponseHeader](req)
		f.mu.Lock()
		f.got = append(f.got, h)
		f.mu.Unlock()
	}
	return nil
}

func newFakeBroker(t *testing.T) *fakeBroker {
	f := &fakeBroker{}
	var err error
	f.srv, err = remoting.NewServer(f, remoting.ServerOptions{Addrs: []string{testutil.FreeAddr(t)}, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Stop)
	f.addrs = f.srv.Addrs()[0]
	return f
}

func (cl *cluster) replicaInfo(brokerName string) remoting.ControllerReplyHeader {
	cl.t.Helper()
	return mustHeader(cl.t, cl.lcall(remoting.ControllerGetReplicaInfo, (&remoting.BrokerNameRequestHeader{BrokerName: brokerName}).Fields(), nil))
}

// TestInactiveMasterIsReplaced: the master's heartbeats stop; once its
// timeout passes on the controller's clock, the scan elects the in-sync
// slave with the next epoch and tells it so.
func TestInactiveMasterIsReplaced(t *testing.T) {
	cl := newCluster(t, 3)
	slave := newFakeBroker(t)
	cl.addrs = map[int64]string{2: slave.addrs}
	cl.register("a")
	cl.register("a")
	cl.heartbeat("a", 1, 1, 100)
	cl.heartbeat("a", 2, 1, 100)
	if r := electReq(cl, "a", 1, false); r.Code != remoting.Success {
		t.Fatalf("elect: %d %q", r.Code, r.Remark)
	}
	hdr := remoting.AlterSyncStateSetRequestHeader{BrokerName: "a", MasterBrokerID: ptr(int64(1)), MasterEpoch: ptr(int32(1))}
	mustHeader(t, cl.lcall(remoting.ControllerAlterSyncStateSet, hdr.Fields(), (&remoting.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode()))

	cl.clk.Advance(6 * time.Second)
	cl.heartbeat("a", 2, 1, 100)
	cl.clk.Advance(5 * time.Second) // broker 1 silent for 11 s > 10 s
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl.leader().ScanNotActiveBroker()
		h := cl.replicaInfo("a")
		if h.MasterBrokerID != nil && *h.MasterBrokerID == 2 {
			if *h.MasterEpoch != 2 || h.MasterAddress != slave.addrs {
				t.Fatalf("new master: %+v", h)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("master not replaced: %+v", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		slave.mu.Lock()
		got := slices0(slave.got)
		slave.mu.Unlock()
		// The first election (epoch 1, master 1) was told to broker 2 as
		// well; wait for the one of epoch 2.
		if i := slices.IndexFunc(got, func(h remoting.ElectMasterResponseHeader) bool { return *h.MasterEpoch == 2 }); i >= 0 {
			if *got[i].MasterBrokerID != 2 || got[i].MasterAddress != slave.addrs {
				t.Fatalf("notify: %+v", got[i])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no NOTIFY_BROKER_ROLE_CHANGED reached the new master")
		}
	}
	// The old master comes back: it is registered, not master.
	cl.heartbeat("a", 1, 1, 100)
	rb := remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: ptr(int64(1)), BrokerAddress: cl.baddr(1)}
	if h := mustHeader(t, cl.lcall(remoting.ControllerRegisterBroker, rb.Fields(), nil)); *h.MasterBrokerID != 2 || *h.MasterEpoch != 2 {
		t.Fatalf("old master re-registers: %+v", h)
	}
}

func slices0[T any](s []T) []T { return append([]T(nil), s...) }

// epochMasters replays a node's Raft log and returns, per broker set,
// the master each master epoch had; it fails on an epoch given twice.
func epochMasters(t *testing.T, logs raft.LogStore) map[string]map[int32]int64 {
	t.Helper()
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	st := newState()
	out := map[string]map[int32]int64{}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatalf("log %d: %v", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		evs, err := decodeEvents(l.Data)
		if err != nil {
			t.Fatalf("log %d: %v", i, err)
		}
		for _, e := range evs {
			st.apply(e)
			if e.Type == evElectMaster && e.Elected {
				s := st.Syncs[e.BrokerName]
				if out[e.BrokerName] == nil {
					out[e.BrokerName] = map[int32]int64{}
				}
				if m, dup := out[e.BrokerName][s.MasterEpoch]; dup {
					t.Fatalf("epoch %d of %s has two masters: %d and %d", s.MasterEpoch, e.BrokerName, m, e.BrokerID)
				}
				out[e.BrokerName][s.MasterEpoch] = e.BrokerID
			}
		}
	}
	return out
}

// TestKillControllerDuringElections: elections run without pause while
// the leading controller is killed and restarted; the group keeps
// serving, every election a client saw succeed is in every node's log
// with the same master, and no epoch has two masters.
func TestKillControllerDuringElections(t *testing.T) {
	cl := newCluster(t, 3)
	for i := range cl.opts {
		cl.opts[i].EnableElectUncleanMaster = true
		cl.nodes[i].opts.EnableElectUncleanMaster = true
	}
	for range 3 {
		cl.register("a")
	}
	heartbeatAll := func() {
		for id := int64(1); id <= 3; id++ {
			cl.heartbeat("a", id, 1, 100)
		}
	}
	heartbeatAll()
	if r := electReq(cl, "a", 1, false); r.Code != remoting.Success {
		t.Fatalf("elect: %d %q", r.Code, r.Remark)
	}

	type seen struct {
		epoch  int32
		master int64
	}
	var (
		mu       sync.Mutex
		answered []seen
		done     atomic.Bool
		wg       sync.WaitGroup
		served   atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			target := int64(i%3 + 1)
			var lead *Controller
			for _, c := range cl.nodesSnapshot() {
				if c != nil && c.IsLeader() {
					lead = c
				}
			}
			if lead == nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			resp, err := cl.client.InvokeTimeout(lead.Addr(), remoting.NewRequest(remoting.ControllerElectMaster,
				(&remoting.ElectMasterRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: target, DesignateElect: true}).Fields(), nil), 10*time.Second)
			if err != nil || resp.Code != remoting.Success {
				continue
			}
			h, err := remoting.DecodeHeader[remoting.ElectMasterResponseHeader](resp)
			if err != nil {
				t.Errorf("elect answer: %v", err)
				return
			}
			served.Add(1)
			mu.Lock()
			answered = append(answered, seen{*h.MasterEpoch, *h.MasterBrokerID})
			mu.Unlock()
		}
	}()

	for round := range 2 {
		before := served.Load()
		waitServed(t, &served, before+3)
		i := cl.indexOf(cl.leader())
		cl.killLocked(i)
		waitServed(t, &served, served.Load()+3) // the two others go on
		cl.startLocked(i)
		heartbeatAll()
		t.Logf("round %d: killed and restarted n%d; %d elections answered", round, i, served.Load())
	}
	done.Store(true)
	wg.Wait()
	waitEqualStates(t, cl)

	var ref map[string]map[int32]int64
	for i, c := range cl.nodesSnapshot() {
		m := epochMasters(t, c.logs)
		if ref == nil {
			ref = m
			continue
		}
		for epoch, master := range m["a"] {
			if r, ok := ref["a"][epoch]; ok && r != master {
				t.Fatalf("n%d: epoch %d master %d, another node's log says %d", i, epoch, master, r)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range answered {
		if m, ok := ref["a"][s.epoch]; !ok || m != s.master {
			t.Fatalf("a client was told master %d at epoch %d; the log says %d (present %v)", s.master, s.epoch, m, ok)
		}
	}
	if len(answered) < 10 {
		t.Fatalf("only %d elections answered", len(answered))
	}
}

func waitServed(t *testing.T, served *atomic.Int64, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for served.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("elections stalled at %d (want %d)", served.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSnapshotRestore: a node restarted from a snapshot of its store has
// the state of the group.
func TestSnapshotRestore(t *testing.T) {
	cl := newCluster(t, 3)
	cl.register("a")
	cl.register("b")
	cl.heartbeat("a", 1, 0, 0)
	if r := electReq(cl, "a", 1, false); r.Code != remoting.Success {
		t.Fatalf("elect: %d", r.Code)
	}
	waitEqualStates(t, cl)
	for i, c := range cl.nodesSnapshot() {
		if err := c.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot n%d: %v", i, err)
		}
	}
	cl.register("c")
	for i := range cl.nodes {
		cl.killLocked(i)
	}
	for i := range cl.nodes {
		cl.startLocked(i)
	}
	cl.leader()
	waitEqualStates(t, cl)
	var names []string
	cl.leader().view(func(st *state) {
		for n := range st.Replicas {
			names = append(names, n)
		}
		if s := st.Syncs["a"]; s.Master == nil || *s.Master != 1 || s.MasterEpoch != 1 {
			t.Errorf("restored set a: %+v", s)
		}
	})
	if len(names) != 3 {
		t.Fatalf("restored sets %v", names)
	}
}

// TestFSMSnapshotRoundTrip: Snapshot then Restore gives the same state.
func TestFSMSnapshotRoundTrip(t *testing.T) {
	c := &Controller{st: newState(), log: testlog.New(t)}
	c.st.apply(event{Type: evApplyBrokerID, Cluster: "c", BrokerName: "a", BrokerID: 1, Addr: "x:1", CheckCode: "x:1;1"})
	c.st.apply(event{Type: evElectMaster, BrokerName: "a", BrokerID: 1, Elected: true})
	c.st.apply(event{Type: evMember, Member: "n0", Addr: "h:1"})
	snap, err := (*fsm)(c).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	d := &Controller{st: newState(), log: testlog.New(t)}
	if err := (*fsm)(d).Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(c.st)
	b, _ := json.Marshal(d.st)
	if !bytes.Equal(a, b) {
		t.Fatalf("restored %s, want %s", b, a)
	}
	if err := (*fsm)(d).Restore(nopCloser{bytes.NewReader([]byte("{"))}); err == nil {
		t.Fatal("a broken snapshot restored")
	}
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
