package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// rmq admin haStatus against an in-process SYNC_MASTER and its SLAVE:
// the master's connection row, the slave's client figures, -c (masters
// only, as fetchMasterAddrByClusterName) and --json.
func TestAdminHAStatus(t *testing.T) {
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	m := tc.Broker.Broker
	s := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) { o.BrokerRole, o.BrokerID = "SLAVE", 1 })).Broker
	s.SetHAMasterAddress(m.HAAddr())
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		st, _ := m.HAMasterStats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset == m.Store().MaxPhyOffset()
	}, "the slave to connect and ack")
	st, _ := m.HAMasterStats()
	end := m.Store().MaxPhyOffset()

	code, out, errOut := runCLI(t, "admin", "haStatus", "-b", m.Addr())
	if code != 0 {
		t.Fatalf("haStatus -b master: exit %d: %s", code, errOut)
	}
	head := fmt.Sprintf("\n#MasterAddr\t%s\n#MasterCommitLogMaxOffset\t%d\n#SlaveNum\t1\n#InSyncSlaveNum\t1\n", m.Addr(), end)
	row := fmt.Sprintf("%-32s  %-16d %16d ", st.Slaves[0].Addr, end, 0)
	if !strings.HasPrefix(out, head) || !strings.Contains(out, "#TransferSpeed(KB/s)") || !strings.Contains(out, "\n"+row) ||
		!strings.Contains(out, fmt.Sprintf("%16s %16d\n", "OK", end)) {
		t.Fatalf("master output:\n%s", out)
	}

	code, out, errOut = runCLI(t, "admin", "haStatus", "-b", s.Addr())
	if code != 0 {
		t.Fatalf("haStatus -b slave: exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, fmt.Sprintf("\n#MasterAddr\t%s\n#CommitLogMaxOffset\t%d\n#TransferSpeed(KB/s)\t", m.HAAddr(), end)) ||
		!strings.Contains(out, "\n#LastReadTime\t") || !strings.HasSuffix(out, "#MasterFlushOffset\t0\n") {
		t.Fatalf("slave output:\n%s", out)
	}

	// -c reads the masters of the cluster: the slave never registered,
	// the master is the one.
	code, out, errOut = runCLI(t, "admin", "haStatus", "-n", tc.NamesrvAddr(), "-c", "DefaultCluster", "--json")
	if code != 0 {
		t.Fatalf("haStatus -c --json: exit %d: %s", code, errOut)
	}
	var got []struct {
		BrokerAddr    string                 `json:"brokerAddr"`
		HARuntimeInfo remoting.HARuntimeInfo `json:"haRuntimeInfo"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got) != 1 || got[0].BrokerAddr != m.Addr() || !got[0].HARuntimeInfo.Master || len(got[0].HARuntimeInfo.HAConnectionInfo) != 1 ||
		got[0].HARuntimeInfo.HAConnectionInfo[0].SlaveAckOffset != end {
		t.Fatalf("json: %s", out)
	}

	// Neither -b nor -c is a usage error, as the other broker commands.
	if code, _, errOut = runCLI(t, "admin", "haStatus"); code == 0 || !strings.Contains(errOut, "-b") {
		t.Fatalf("no target: exit %d: %s", code, errOut)
	}
}
