package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// TestAdminControllerCommands runs getControllerMetaData, getSyncStateSet
// and electMaster against a one-node rmq controller holding a broker set
// of two, and checks mqadmin's output lines.
func TestAdminControllerCommands(t *testing.T) {
	addr, raftAddr, cli := startControllerGroup(t, 2)
	call := func(code int32, f map[string]string, body []byte) *remoting.Command {
		t.Helper()
		r, err := cli.InvokeTimeout(addr, remoting.NewRequest(code, f, body), 5*time.Second)
		if err != nil || r.Code != remoting.Success {
			t.Fatalf("code %d: %v %v", code, r, err)
		}
		return r
	}
	call(remoting.ControllerElectMaster, (&remoting.ElectMasterRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: 1}).Fields(), nil)
	one, epoch := int64(1), int32(1)
	call(remoting.ControllerAlterSyncStateSet, (&remoting.AlterSyncStateSetRequestHeader{BrokerName: "a", MasterBrokerID: &one, MasterEpoch: &epoch}).Fields(),
		(&remoting.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode())

	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"admin"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	want := fmt.Sprintf("\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t%s\n#Peer:\tn0:%s\n", addr, raftAddr)
	if out := run("getControllerMetaData", "-a", addr); out != want {
		t.Fatalf("getControllerMetaData:\n%q\nwant\n%q", out, want)
	}
	want = "\n#brokerName\ta\n#MasterBrokerId\t1\n#MasterAddr\t127.0.0.1:40001\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t2\n" +
		"\nInSyncReplica:\tReplicaIdentity{brokerName='a', brokerId=1, brokerAddress='127.0.0.1:40001', alive=true}\n" +
		"\nInSyncReplica:\tReplicaIdentity{brokerName='a', brokerId=2, brokerAddress='127.0.0.1:40002', alive=true}\n"
	if out := run("getSyncStateSet", "-a", addr, "-b", "a"); out != want {
		t.Fatalf("getSyncStateSet:\n%q\nwant\n%q", out, want)
	}
	want = "\n#ClusterName\tc1\n#BrokerName\ta\n#BrokerMasterAddr\t127.0.0.1:40002\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n" +
		"\t#Broker\t1\t127.0.0.1:40001\n\t#Broker\t2\t127.0.0.1:40002\n"
	if out := run("electMaster", "-a", addr, "-c", "c1", "-bn", "a", "-b", "2"); out != want {
		t.Fatalf("electMaster:\n%q\nwant\n%q", out, want)
	}
	// Designating the master again: the controller's 2011 is an error.
	code, _, errOut := runCLI(t, "admin", "electMaster", "-a", addr, "-c", "c1", "-bn", "a", "-b", "2")
	if code == 0 || !strings.Contains(errOut, "2011") {
		t.Fatalf("electMaster of the master: exit %d %s", code, errOut)
	}
	if out := run("getSyncStateSet", "-a", addr, "-b", "a", "--json"); !strings.Contains(out, `"masterBrokerId": 2`) {
		t.Fatalf("getSyncStateSet --json:\n%s", out)
	}
}

// startControllerGroup starts a one-node rmq controller (group group1,
// node n0) with brokers 1..n of broker set "a" in cluster c1 (at
// 127.0.0.1:40001, 40002, …) applied, registered and heartbeating, and
// returns the controller's address, its raft peer address and the client
// that registered the brokers (open until the test ends: the controller
// counts a broker alive while the connection of its heartbeats is).
func startControllerGroup(t *testing.T, n int64) (addr, raftAddr string, cli *remoting.Client) {
	t.Helper()
	raftAddr = testutil.FreeAddr(t)
	o := controller.DefaultOptions()
	o.Group, o.Peers, o.SelfID = "group1", "n0-"+raftAddr, "n0"
	o.ListenHost, o.ListenPort = "127.0.0.1", testutil.FreePort(t)
	o.RaftTimeout = 300 * time.Millisecond
	o.NotifyBrokerRoleChanged = false
	o.Logger = testlog.New(t)
	ctl, err := controller.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Shutdown)
	addr = ctl.Addr()
	waitControllerLeader(t, addr)

	cli = remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(cli.Close)
	for id := int64(1); id <= n; id++ {
		baddr := fmt.Sprintf("127.0.0.1:%d", 40000+id)
		for _, req := range []*remoting.Command{
			remoting.NewRequest(remoting.ControllerApplyBrokerID, (&remoting.ApplyBrokerIDRequestHeader{ClusterName: "c1", BrokerName: "a", AppliedBrokerID: &id, RegisterCheckCode: baddr + ";1"}).Fields(), nil),
			remoting.NewRequest(remoting.ControllerRegisterBroker, (&remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: &id, BrokerAddress: baddr}).Fields(), nil),
			remoting.NewRequest(remoting.BrokerHeartbeat, (&remoting.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerAddr: baddr, BrokerID: &id}).Fields(), nil),
		} {
			if r, err := cli.InvokeTimeout(addr, req, 5*time.Second); err != nil || r.Code != remoting.Success {
				t.Fatalf("code %d: %v %v", req.Code, r, err)
			}
		}
	}
	return addr, raftAddr, cli
}

// controllerJSONCases are the subcommands TestAdminControllerJSON covers
// for TestAdminJSONEverySubcommand.
var controllerJSONCases = []string{"getControllerMetaData", "getSyncStateSet", "electMaster", "getBrokerEpoch"}

// epochPeer answers as a name server listing one broker (itself) and as
// that broker in controller mode (GET_BROKER_EPOCH_CACHE).
type epochPeer struct{ addr string }

func (p *epochPeer) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	switch req.Code {
	case remoting.GetBrokerClusterInfo:
		resp.Body = []byte(fmt.Sprintf(`{"brokerAddrTable":{"broker-e":{"brokerAddrs":{0:%q},"brokerName":"broker-e","cluster":"EC"}},"clusterAddrTable":{"EC":["broker-e"]}}`, p.addr))
	case remoting.GetBrokerEpochCache:
		resp.Body = []byte(`{"brokerId":1,"brokerName":"broker-e","clusterName":"EC","epochList":[{"endOffset":9223372036854775807,"epoch":1,"startOffset":0}],"maxOffset":42}`)
	default:
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, "")
	}
	return resp
}

// TestAdminControllerJSON: the controller subcommands' --json output is
// JSON with what names the answer.
func TestAdminControllerJSON(t *testing.T) {
	addr, _, _ := startControllerGroup(t, 1)
	peer := &epochPeer{}
	srv, err := remoting.NewServer(peer, remoting.ServerOptions{Addrs: []string{testutil.FreeAddr(t)}, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	peer.addr = srv.Addrs()[0]

	for _, c := range []struct {
		args     []string
		contains []string
	}{
		{[]string{"getControllerMetaData", "-a", addr}, []string{`"controllerLeaderAddress": "` + addr, `"group": "group1"`}},
		{[]string{"electMaster", "-a", addr, "-c", "c1", "-bn", "a", "-b", "1"}, []string{`"masterBrokerId": 1`, `"masterEpoch": 1`}},
		{[]string{"getSyncStateSet", "-a", addr, "-b", "a"}, []string{`"masterBrokerId": 1`, `"brokerAddress": "127.0.0.1:40001"`}},
		{[]string{"getBrokerEpoch", "-n", peer.addr, "-c", "EC"}, []string{`"maxOffset": 42`, `"endOffset": 42`, peer.addr}},
	} {
		code, out, errOut := runCLI(t, append(append([]string{"admin"}, c.args...), "--json")...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d %s", c.args, code, errOut)
		}
		vs, err := jsonValues(out)
		if err != nil || len(vs) == 0 {
			t.Fatalf("%v: not JSON: %v\n%s", c.args, err, out)
		}
		for _, w := range c.contains {
			if !strings.Contains(out, w) {
				t.Errorf("%v: --json output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}
