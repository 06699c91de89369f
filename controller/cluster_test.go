package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// cluster is an in-process controller group: n nodes on loopback TCP
// (Raft transport and remoting), each with its own Bolt store, and one
// manual clock for the broker heartbeats and scans.
type cluster struct {
	t       *testing.T
	clk     *clock.Manual
	opts    []Options
	nodesMu sync.Mutex // guards nodes against a test's concurrent readers
	nodes   []*Controller
	client  *remoting.Client
	addrs   map[int64]string // broker addresses other than brokerAddr's
	// hbClients are the brokers' own connections (one per broker, as in
	// a real group: a closed one makes that broker inactive).
	hbClients map[int64]*remoting.Client
}

func (cl *cluster) baddr(id int64) string {
	if a, ok := cl.addrs[id]; ok {
		return a
	}
	return brokerAddr(id)
}

func (cl *cluster) nodesSnapshot() []*Controller {
	cl.nodesMu.Lock()
	defer cl.nodesMu.Unlock()
	return append([]*Controller(nil), cl.nodes...)
}

func (cl *cluster) indexOf(c *Controller) int {
	for i, n := range cl.nodesSnapshot() {
		if n == c {
			return i
		}
	}
	return -1
}

func (cl *cluster) killLocked(i int) {
	cl.nodesMu.Lock()
	c := cl.nodes[i]
	cl.nodes[i] = nil
	cl.nodesMu.Unlock()
	c.Shutdown()
}

func (cl *cluster) startLocked(i int) { cl.start(i) }

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	cl := &cluster{t: t, clk: clock.NewManual(time.Unix(1_700_000_000, 0)), client: remoting.NewClient(remoting.ClientOptions{}), hbClients: map[int64]*remoting.Client{}}
	t.Cleanup(cl.client.Close)
	var peers []string
	for i := range n {
		peers = append(peers, fmt.Sprintf("n%d-%s", i, testutil.FreeAddr(t)))
	}
	dir := t.TempDir()
	for i := range n {
		o := DefaultOptions()
		o.Group = "group1"
		o.Peers = strings.Join(peers, ";")
		o.SelfID = fmt.Sprintf("n%d", i)
		o.StorePath = fmt.Sprintf("%s/n%d", dir, i)
		o.ListenHost = "127.0.0.1"
		o.ListenPort = testutil.FreePort(t)
		o.RaftTimeout = 500 * time.Millisecond
		o.Clock = cl.clk
		o.Logger = testlog.New(t)
		cl.opts = append(cl.opts, o)
		cl.nodes = append(cl.nodes, nil)
	}
	for i := range n {
		cl.start(i)
	}
	t.Cleanup(func() {
		for _, c := range cl.nodesSnapshot() {
			if c != nil {
				c.Shutdown()
			}
		}
	})
	return cl
}

func (cl *cluster) start(i int) {
	cl.t.Helper()
	c, err := New(cl.opts[i])
	if err != nil {
		cl.t.Fatalf("New n%d: %v", i, err)
	}
	if err := c.Start(); err != nil {
		cl.t.Fatalf("Start n%d: %v", i, err)
	}
	cl.nodesMu.Lock()
	cl.nodes[i] = c
	cl.nodesMu.Unlock()
}

// leader waits for a node that serves as leader, and for every running
// node to know its remoting address.
func (cl *cluster) leader() *Controller {
	cl.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var leaders []*Controller
		for _, c := range cl.nodesSnapshot() {
			if c != nil && c.IsLeader() {
				leaders = append(leaders, c)
			}
		}
		if len(leaders) == 1 {
			known := true
			for _, c := range cl.nodesSnapshot() {
				if c != nil {
					if _, addr, _ := c.leaderInfo(); addr != leaders[0].Addr() {
						known = false
					}
				}
			}
			if known {
				return leaders[0]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cl.t.Fatalf("no single leader within 20s")
	return nil
}

func (cl *cluster) call(addr string, code int32, fields map[string]string, body []byte) *remoting.Command {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.client.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
	if err != nil {
		cl.t.Fatalf("code %d to %s: %v", code, addr, err)
	}
	return resp
}

// lcall sends to the leader, following it when leadership moved (a busy
// machine can make a leader miss its lease).
func (cl *cluster) lcall(code int32, fields map[string]string, body []byte) *remoting.Command {
	cl.t.Helper()
	for range 20 {
		r := cl.call(cl.leader().Addr(), code, fields, body)
		if r.Code != remoting.ControllerNotLeader {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl.t.Fatalf("code %d: no leader answered", code)
	return nil
}

// heartbeat sends a broker's heartbeat to every running node, as a stock
// broker does to every controller it knows.
func (cl *cluster) heartbeat(brokerName string, id int64, epoch int32, maxOffset int64) {
	cl.t.Helper()
	for _, c := range cl.nodesSnapshot() {
		if c == nil {
			continue
		}
		h := remoting.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerName: brokerName, BrokerAddr: cl.baddr(id),
			BrokerID: ptr(id), Epoch: ptr(epoch), MaxOffset: ptr(maxOffset), HeartbeatTimeoutMills: ptr(int64(10_000))}
		hc := cl.hbClients[id]
		if hc == nil {
			hc = remoting.NewClient(remoting.ClientOptions{})
			cl.hbClients[id] = hc
			cl.t.Cleanup(hc.Close)
		}
		r, err := hc.InvokeTimeout(c.Addr(), remoting.NewRequest(remoting.BrokerHeartbeat, h.Fields(), nil), 10*time.Second)
		if err != nil || r.Code != remoting.Success {
			cl.t.Fatalf("heartbeat: %v %v", r, err)
		}
	}
}

func brokerAddr(id int64) string { return fmt.Sprintf("127.0.0.1:%d", 30000+id) }

// register runs the 5.1.1+ registration of a broker: next id, apply it,
// register; it returns the id.
func (cl *cluster) register(brokerName string) int64 {
	cl.t.Helper()
	r := cl.lcall(remoting.ControllerGetNextBrokerID, (&remoting.BrokerSetRequestHeader{ClusterName: "c1", BrokerName: brokerName}).Fields(), nil)
	h := mustHeader(cl.t, r)
	id := *h.NextBrokerID
	ap := remoting.ApplyBrokerIDRequestHeader{ClusterName: "c1", BrokerName: brokerName, AppliedBrokerID: ptr(id),
		RegisterCheckCode: cl.baddr(id) + ";1700000000000"}
	mustHeader(cl.t, cl.lcall(remoting.ControllerApplyBrokerID, ap.Fields(), nil))
	rb := remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c1", BrokerName: brokerName, BrokerID: ptr(id), BrokerAddress: cl.baddr(id)}
	mustHeader(cl.t, cl.lcall(remoting.ControllerRegisterBroker, rb.Fields(), nil))
	return id
}

func mustHeader(t *testing.T, r *remoting.Command) remoting.ControllerReplyHeader {
	t.Helper()
	if r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	h, err := remoting.DecodeHeader[remoting.ControllerReplyHeader](r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func electReq(cl *cluster, brokerName string, id int64, designate bool) *remoting.Command {
	return cl.lcall(remoting.ControllerElectMaster,
		(&remoting.ElectMasterRequestHeader{ClusterName: "c1", BrokerName: brokerName, BrokerID: id, DesignateElect: designate}).Fields(), nil)
}

func TestRegisterElectAlter(t *testing.T) {
	cl := newCluster(t, 3)
	lead := cl.leader()
	var follower *Controller
	for _, c := range cl.nodes {
		if c != lead {
			follower = c
		}
	}

	// A follower refuses writes and reads as stock, and names the leader.
	r := cl.call(follower.Addr(), remoting.ControllerGetNextBrokerID, (&remoting.BrokerSetRequestHeader{ClusterName: "c1", BrokerName: "a"}).Fields(), nil)
	if r.Code != remoting.ControllerNotLeader || r.Remark != "The controller is not in leader state" {
		t.Fatalf("follower answered %d %q", r.Code, r.Remark)
	}
	md, err := remoting.DecodeHeader[remoting.GetMetaDataResponseHeader](cl.call(follower.Addr(), remoting.ControllerGetMetadataInfo, nil, nil))
	if err != nil || md.IsLeader || md.ControllerLeaderAddress != lead.Addr() || md.ControllerLeaderID != lead.ID() || md.Group != "group1" {
		t.Fatalf("follower metadata %+v %v (leader %s at %s)", md, err, lead.ID(), lead.Addr())
	}

	id1 := cl.register("a")
	if id1 != 1 {
		t.Fatalf("first id %d", id1)
	}
	cl.heartbeat("a", 1, 0, 0)
	r = electReq(cl, "a", 1, false)
	eh, _ := remoting.DecodeHeader[remoting.ElectMasterResponseHeader](r)
	if r.Code != remoting.Success || *eh.MasterBrokerID != 1 || *eh.MasterEpoch != 1 || *eh.SyncStateSetEpoch != 1 || eh.MasterAddress != brokerAddr(1) {
		t.Fatalf("first election: %d %q %+v", r.Code, r.Remark, eh)
	}
	if got := string(r.Body); got != `{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:30001"},"brokerName":"a","cluster":"c1"},"syncStateSet":[1]}` {
		t.Fatalf("elect body %s", got)
	}
	// Asking again keeps the master: 2011 with the current master.
	r = electReq(cl, "a", 1, false)
	if r.Code != remoting.ControllerMasterStillExist {
		t.Fatalf("second election %d %q", r.Code, r.Remark)
	}

	id2 := cl.register("a")
	if id2 != 2 {
		t.Fatalf("second id %d", id2)
	}
	cl.heartbeat("a", 2, 0, 0)
	rb := remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: ptr(id2), BrokerAddress: brokerAddr(2)}
	h := mustHeader(t, cl.lcall(remoting.ControllerRegisterBroker, rb.Fields(), nil))
	if h.MasterBrokerID == nil || *h.MasterBrokerID != 1 || *h.MasterEpoch != 1 {
		t.Fatalf("register of the slave: %+v", h)
	}

	alter := func(master int64, masterEpoch int32, ids []int64, ssEpoch int32) *remoting.Command {
		hdr := remoting.AlterSyncStateSetRequestHeader{BrokerName: "a", MasterBrokerID: ptr(master), MasterEpoch: ptr(masterEpoch)}
		return cl.lcall(remoting.ControllerAlterSyncStateSet, hdr.Fields(),
			(&remoting.SyncStateSet{SyncStateSet: ids, SyncStateSetEpoch: ssEpoch}).Encode())
	}
	for _, c := range []struct {
		master int64
		epoch  int32
		ids    []int64
		ss     int32
		code   int32
	}{
		{1, 1, []int64{1}, 1, remoting.ControllerAlterSyncStateSetFailed}, // unchanged
		{2, 1, []int64{1, 2}, 1, remoting.ControllerInvalidMaster},
		{1, 0, []int64{1, 2}, 1, remoting.ControllerFencedMasterEpoch},
		{1, 1, []int64{1, 2}, 0, remoting.ControllerFencedSyncStateSetEpoch},
		{1, 1, []int64{1, 9}, 1, remoting.ControllerInvalidReplicas},
		{1, 1, []int64{2}, 1, remoting.ControllerAlterSyncStateSetFailed}, // master left out
	} {
		if r := alter(c.master, c.epoch, c.ids, c.ss); r.Code != c.code {
			t.Errorf("alter %+v: %d %q", c, r.Code, r.Remark)
		}
	}
	r = alter(1, 1, []int64{1, 2}, 1)
	ah := mustHeader(t, r)
	if *ah.NewSyncStateSetEpoch != 2 || string(r.Body) != `{"syncStateSet":[1,2],"syncStateSetEpoch":2}` {
		t.Fatalf("alter: %+v %s", ah, r.Body)
	}

	// Every node applied the same state.
	waitEqualStates(t, cl)
	r = cl.lcall(remoting.ControllerGetSyncStateData, nil, remoting.EncodeBrokerNames([]string{"a", "nope"}))
	info, err := remoting.DecodeBrokerReplicasInfo(r.Body)
	if r.Code != remoting.Success || err != nil {
		t.Fatalf("sync state data %d %v", r.Code, err)
	}
	a := info.ReplicasInfoTable["a"]
	if len(info.ReplicasInfoTable) != 1 || *a.MasterBrokerID != 1 || a.MasterEpoch != 1 || a.SyncStateSetEpoch != 2 || len(a.InSyncReplicas) != 2 || !a.InSyncReplicas[1].Alive {
		t.Fatalf("sync state data %s", r.Body)
	}
	r = cl.lcall(remoting.ControllerGetReplicaInfo, (&remoting.BrokerNameRequestHeader{BrokerName: "a"}).Fields(), nil)
	if rh := mustHeader(t, r); *rh.MasterBrokerID != 1 || *rh.MasterEpoch != 1 || rh.MasterAddress != brokerAddr(1) {
		t.Fatalf("replica info %+v", rh)
	}
	if r := cl.lcall(remoting.ControllerGetReplicaInfo, (&remoting.BrokerNameRequestHeader{BrokerName: "x"}).Fields(), nil); r.Code != remoting.ControllerBrokerMetadataNotExist {
		t.Fatalf("unknown set: %d", r.Code)
	}
}

// waitEqualStates waits until every running node holds the leader's state.
func waitEqualStates(t *testing.T, cl *cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var want, diff string
		for _, c := range cl.nodesSnapshot() {
			if c == nil {
				continue
			}
			var s string
			c.view(func(st *state) {
				b, _ := json.Marshal([]any{st.Replicas, st.Syncs})
				s = string(b)
			})
			if want == "" {
				want = s
			} else if s != want {
				diff = s
			}
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("states differ:\n%s\n%s", want, diff)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
