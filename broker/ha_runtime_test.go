package broker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

func runtimeTable(t *testing.T, tb *testBroker) map[string]string {
	t.Helper()
	resp := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	return kv.Table
}

// Both sides of a pair report their role and replication state in
// GET_BROKER_RUNTIME_INFO: the master its slave's ack and lag, the slave
// its master and connection.
func TestRuntimeInfoReplicationKeys(t *testing.T) {
	m, s := haPair(t, "SYNC_MASTER", nil)
	for i := 0; i < 5; i++ {
		if r := rawSend(m, "HaInfo", "", i); r.Code != remoting.Success {
			t.Fatalf("send %d: %d %q", i, r.Code, r.Remark)
		}
	}
	end := strconv.FormatInt(m.Store().MaxPhyOffset(), 10)
	var mt map[string]string
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		mt = runtimeTable(t, m)
		return mt["haPush2SlaveMaxOffset"] == end
	}, "the master's table to show the slave's ack")
	if mt["brokerRole"] != "SYNC_MASTER" || mt["brokerActive"] != "true" || mt["brokerId"] != "0" || mt["haConnectionCount"] != "1" || mt["haSlaveFallBehindMuch"] != "0" {
		t.Fatalf("master table: %v", mt)
	}
	var acks, diffs int
	for k, v := range mt {
		switch {
		case strings.HasPrefix(k, "haSlaveAckOffset_"):
			acks++
			if v != end {
				t.Fatalf("%s = %s, want %s", k, v, end)
			}
		case strings.HasPrefix(k, "haSlaveDiff_"):
			diffs++
			if v != "0" {
				t.Fatalf("%s = %s, want 0", k, v)
			}
		}
	}
	if acks != 1 || diffs != 1 {
		t.Fatalf("per-slave keys: %d acks, %d diffs in %v", acks, diffs, mt)
	}
	if _, ok := mt["haMasterAddress"]; ok {
		t.Fatalf("a master reports slave keys: %v", mt)
	}
	st := runtimeTable(t, s)
	if st["brokerRole"] != "SLAVE" || st["brokerActive"] != "false" || st["brokerId"] != "1" || st["haMasterAddress"] != m.HAAddr() ||
		st["haMasterConnected"] != "true" || st["commitLogMaxOffset"] != end {
		t.Fatalf("slave table: %v (master HA %s, end %s)", st, m.HAAddr(), end)
	}
	if _, ok := st["haConnectionCount"]; ok {
		t.Fatalf("a slave reports master keys: %v", st)
	}
}

func TestSlaveLag(t *testing.T) {
	for _, c := range []struct{ max, ack, want int64 }{{100, -1, 100}, {100, 0, 100}, {100, 40, 60}, {100, 100, 0}, {100, 140, 0}} {
		if got := SlaveLag(c.max, c.ack); got != c.want {
			t.Errorf("SlaveLag(%d, %d) = %d, want %d", c.max, c.ack, got, c.want)
		}
	}
}
