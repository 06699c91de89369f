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
	raftAddr := testutil.FreeAddr(t)
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
	addr := ctl.Addr()
	waitControllerLeader(t, addr)

	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	call := func(code int32, f map[string]string, body []byte) *remoting.Command {
		t.Helper()
		r, err := cli.InvokeTimeout(addr, remoting.NewRequest(code, f, body), 5*time.Second)
		if err != nil || r.Code != remoting.Success {
			t.Fatalf("code %d: %v %v", code, r, err)
		}
		return r
	}
	for id := int64(1); id <= 2; id++ {
		baddr := fmt.Sprintf("127.0.0.1:%d", 40000+id)
		call(remoting.ControllerApplyBrokerID, (&remoting.ApplyBrokerIDRequestHeader{ClusterName: "c1", BrokerName: "a", AppliedBrokerID: &id, RegisterCheckCode: baddr + ";1"}).Fields(), nil)
		call(remoting.ControllerRegisterBroker, (&remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: &id, BrokerAddress: baddr}).Fields(), nil)
		call(remoting.BrokerHeartbeat, (&remoting.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerAddr: baddr, BrokerID: &id}).Fields(), nil)
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
