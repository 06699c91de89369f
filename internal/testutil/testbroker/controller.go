package testbroker

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
)

// StartControllerPair starts an rmq controller (one Raft node), a name
// server and two rmq brokers of cluster "c", set "bs", in controller mode
// with the real AutoSwitch HA service and the short periods of
// broker/replicas' e2e test, and returns them once one is master and the
// other follows it in the same epoch with both in the master's sync state
// set.
func StartControllerPair(t testing.TB) (master, slave *Broker) {
	t.Helper()
	ctl := StartController(t)
	ns := StartNamesrv(t)
	var bs [2]*Broker
	for i := range bs {
		bs[i] = Start(t, Options(t, func(o *broker.Options) { ControllerMember(o, ctl.Addr(), ns.Addr()) }))
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		a, _ := bs[0].ControllerState()
		b, _ := bs[1].ControllerState()
		if a.Master == b.Master || a.MasterEpoch == 0 || a.MasterEpoch != b.MasterEpoch {
			return false
		}
		if b.Master {
			a = b
		}
		return len(a.SyncStateSet) == 2
	}, "one master, one slave of its epoch, both in the sync state set")
	if st, _ := bs[0].ControllerState(); st.Master {
		return bs[0], bs[1]
	}
	return bs[1], bs[0]
}

// ControllerMember makes o a member of cluster "c", set "bs", in
// controller mode under the controller at ctlAddr, registering with the
// name server at nsAddr, with short periods (heartbeats every 200 ms, a
// broker gone after 1.5 s, metadata every 300 ms) and
// allAckInSyncStateSet.
func ControllerMember(o *broker.Options, ctlAddr, nsAddr string) {
	o.BrokerName, o.BrokerClusterName = "bs", "c"
	o.BrokerRole, o.BrokerID = broker.RoleSlave, -1
	o.EnableControllerMode, o.ControllerAddr, o.NamesrvAddr = true, ctlAddr, nsAddr
	o.BrokerHeartbeatInterval = 200
	o.SyncBrokerMetadataPeriod, o.CheckSyncStateSetPeriod, o.SyncControllerMetadataPeriod = 300, 300, 1000
	o.ControllerHeartBeatTimeoutMills = 1500
	o.HaSendHeartbeatInterval, o.HaHousekeepingInterval, o.HaMaxTimeSlaveNotCatchup = 200, 3000, 3000
	o.AllAckInSyncStateSet = true
}

// StartController starts an rmq controller of one Raft node with short
// scan periods and returns it once it leads.
func StartController(t testing.TB) *controller.Controller {
	t.Helper()
	co := controller.DefaultOptions()
	co.Group, co.SelfID, co.Peers = "g", "n0", "n0-"+testutil.FreeAddr(t)
	co.StorePath, co.ListenHost, co.ListenPort = t.TempDir(), "127.0.0.1", testutil.FreePort(t)
	co.RaftTimeout = 300 * time.Millisecond
	co.ScanNotActiveBrokerInterval, co.ScanInactiveMasterInterval = 200*time.Millisecond, 200*time.Millisecond
	co.Logger = testlog.New(t)
	ctl, err := controller.New(co)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Shutdown)
	testutil.WaitFor(t, 20*time.Second, ctl.IsLeader, "the controller to lead")
	return ctl
}
