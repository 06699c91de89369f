package admin

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// clusterList over two groups: "a" an rmq pair (its tables name the role),
// "b" a Java-like pair (no brokerRole key) whose slave does not answer.
// Lag is the master's commitLogMaxOffset minus the slave's, on the slave
// and, as the largest of its slaves', on the master.
func TestClusterListReplication(t *testing.T) {
	ns, am, as, bm := startPeer(t), startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetBrokerClusterInfo, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerAddrTable":{"a":{"brokerAddrs":{0:%q,1:%q},"brokerName":"a","cluster":"C"},"b":{"brokerAddrs":{0:%q,1:"127.0.0.1:1"},"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b","a"]}}`,
		am.addr, as.addr, bm.addr)))
	table := func(kv map[string]string) []byte { return remoting.MarshalBody(&remoting.KVTable{Table: kv}) }
	am.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, table(map[string]string{"commitLogMaxOffset": "5000", "brokerRole": "SYNC_MASTER"}))
	as.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, table(map[string]string{"commitLogMaxOffset": "4200", "brokerRole": "SLAVE"}))
	bm.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, table(map[string]string{"commitLogMaxOffset": "77"}))
	a := newTestAdmin(t, ns.addr)
	l, err := a.ClusterList(testCtx(t))
	if err == nil || l == nil {
		t.Fatalf("the dead slave must be named: %v, %v", l, err)
	}
	type row struct {
		name string
		id   int64
		role string
		lag  int64
	}
	var got []row
	for _, b := range l.Brokers {
		got = append(got, row{b.BrokerName, b.BrokerID, b.Role, b.LagBytes})
	}
	want := []row{{"a", 0, "SYNC_MASTER", 800}, {"a", 1, "SLAVE", 800}, {"b", 0, RoleMaster, -1}, {"b", 1, RoleSlave, -1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	var out bytes.Buffer
	l.PrintReplication(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "#Role") || !strings.HasSuffix(lines[2], " 800") ||
		!strings.Contains(lines[2], "SLAVE") || !strings.HasSuffix(lines[4], " -") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func TestReplicationSlaveAheadAndGarbage(t *testing.T) {
	ms := []BrokerMember{{Cluster: "C", BrokerName: "x", BrokerID: 0}, {Cluster: "C", BrokerName: "x", BrokerID: 2}, {Cluster: "C", BrokerName: "x", BrokerID: 3}}
	tables := []map[string]string{{"commitLogMaxOffset": "10"}, {"commitLogMaxOffset": "30"}, {"commitLogMaxOffset": "ten"}}
	got := Replication(ms, tables)
	// A slave ahead (a restarted master with a shorter log) lags 0; an
	// unparsable offset is unknown and leaves the master's figure alone.
	if got[0] != (ReplicaState{RoleMaster, 0}) || got[1] != (ReplicaState{RoleSlave, 0}) || got[2] != (ReplicaState{RoleSlave, -1}) {
		t.Fatalf("%v", got)
	}
}
