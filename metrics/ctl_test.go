package metrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// A controller-mode pair serves its role, epochs, sync state set and
// confirm offset as rmq_ha_* series and in its runtime table, the classic
// series it does not run staying away (TestReplicationSeries checks that a
// classic pair serves none of the controller-mode ones: its counts).
func TestControllerModeSeries(t *testing.T) {
	m, s := testbroker.StartControllerPair(t)
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
