package metrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// startCtlPair starts an rmq controller, a name server and two rmq brokers
// of set "bs" in controller mode with the real AutoSwitch HA service (the
// options broker/replicas' e2e test uses), and returns the brokers once one
// is master and the other follows it with both in the sync state set.
func startCtlPair(t *testing.T) (master, slave *testbroker.Broker) {
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
	ns := testbroker.StartNamesrv(t)
	var bs []*testbroker.Broker
	for range 2 {
		bs = append(bs, testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) {
			o.BrokerName, o.BrokerClusterName = "bs", "c"
			o.BrokerRole, o.BrokerID = broker.RoleSlave, -1
			o.EnableControllerMode, o.ControllerAddr, o.NamesrvAddr = true, ctl.Addr(), ns.Addr()
			o.BrokerHeartbeatInterval = 200
			o.SyncBrokerMetadataPeriod, o.CheckSyncStateSetPeriod, o.SyncControllerMetadataPeriod = 300, 300, 1000
			o.ControllerHeartBeatTimeoutMills = 1500
			o.HaSendHeartbeatInterval, o.HaHousekeepingInterval, o.HaMaxTimeSlaveNotCatchup = 200, 3000, 3000
			o.AllAckInSyncStateSet = true
		})))
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		a, _ := bs[0].ControllerState()
		b, _ := bs[1].ControllerState()
		if a.Master == b.Master || a.MasterEpoch == 0 || a.MasterEpoch != b.MasterEpoch {
			return false
		}
		if b.Master {
			a, b = b, a
		}
		return len(a.SyncStateSet) == 2
	}, "one master, one slave of its epoch, both in the sync state set")
	if st, _ := bs[0].ControllerState(); st.Master {
		return bs[0], bs[1]
	}
	return bs[1], bs[0]
}

// A controller-mode pair serves its role, epochs, sync state set and
// confirm offset as rmq_ha_* series and in its runtime table, the classic
// series it does not run staying away (TestReplicationSeries checks that a
// classic pair serves none of the controller-mode ones: its counts).
func TestControllerModeSeries(t *testing.T) {
	m, s := startCtlPair(t)
	if r := m.Client.Send(brokertest.Send{Topic: "CtlMetrics", Body: []byte("0123456789")}); r.Code != remoting.Success {
		t.Fatalf("send: %d %q", r.Code, r.Remark)
	}
	end := float64(m.Store().MaxPhyOffset())
	ms, _ := m.ControllerState()
	epoch := float64(ms.MasterEpoch)
	mreg, sreg := Registry(m.Broker, nil), Registry(s.Broker, nil)
	var mg, sg map[string]float64
	testutil.WaitFor(t, 10*time.Second, func() bool {
		mg, sg = haGauges(t, mreg), haGauges(t, sreg)
		return mg[nameHAConfirmOffset] == end && sg[nameHAConfirmOffset] == end
	}, "both to confirm the send")
	for name, want := range map[string][2]float64{
		nameHAMaster:      {1, 0},
		nameHAMasterEpoch: {epoch, epoch},
	} {
		if mg[name] != want[0] || sg[name] != want[1] {
			t.Errorf("%s: master %v slave %v, want %v", name, mg[name], sg[name], want)
		}
	}
	// The set is the master's: a slave serves none.
	if mg[nameHASyncStateSet] != 2 || mg[nameHASyncStateEpoch] < 1 || len(mg) != 5 || len(sg) != 3 {
		t.Errorf("series: master %v, slave %v", mg, sg)
	}

	// The runtime table: the role the controller gave (not the configured
	// SLAVE), the ids, the set and the confirm offset.
	ss, _ := s.ControllerState()
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(m.Client.Invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv); err != nil {
		t.Fatal(err)
	}
	set := ms.SyncStateSetText()
	for k, want := range map[string]string{"brokerRole": "SYNC_MASTER", "brokerId": "0", "brokerActive": "true",
		"haMasterEpoch": strconv.Itoa(int(epoch)), "haMasterBrokerId": strconv.FormatInt(ms.MasterID, 10),
		"haSyncStateSet": set, "haConfirmOffset": strconv.Itoa(int(end)),
		"haSyncStateSetEpoch": strconv.Itoa(int(mg[nameHASyncStateEpoch]))} {
		if kv.Table[k] != want {
			t.Errorf("master runtime info %s = %q, want %q", k, kv.Table[k], want)
		}
	}
	if set != "1,2" || ms.MasterID < 1 || ss.BrokerID == 0 {
		t.Errorf("master state %+v, slave %+v", ms, ss)
	}
	kv = remoting.KVTable{} // UnmarshalBody adds to a map it is given
	if err := remoting.UnmarshalBody(s.Client.Invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"brokerRole": "SLAVE", "brokerId": strconv.FormatInt(ss.BrokerID, 10),
		"brokerActive": "false", "haMasterEpoch": strconv.Itoa(int(epoch)), "haConfirmOffset": strconv.Itoa(int(end)),
		"haMasterBrokerId": strconv.FormatInt(ms.MasterID, 10)} {
		if kv.Table[k] != want {
			t.Errorf("slave runtime info %s = %q, want %q", k, kv.Table[k], want)
		}
	}
	if _, ok := kv.Table["haSyncStateSet"]; ok {
		t.Errorf("slave runtime info has haSyncStateSet %q", kv.Table["haSyncStateSet"])
	}
}
