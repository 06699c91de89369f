package broker

import (
	"fmt"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

func haStatus(t *testing.T, tb *testBroker) (remoting.HARuntimeInfo, []byte) {
	t.Helper()
	resp := tb.invoke(remoting.GetBrokerHaStatus, nil, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_HA_STATUS: %d %q", resp.Code, resp.Remark)
	}
	var info remoting.HARuntimeInfo
	if err := remoting.UnmarshalBody(resp.Body, &info); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	return info, resp.Body
}

// GET_BROKER_HA_STATUS on both sides of a pair: the values, and the bytes
// as 5.3.3's fastjson writes HARuntimeInfo (keys alphabetical, the
// master's client part without masterAddr, the slave's empty connection
// list).
func TestBrokerHAStatus(t *testing.T) {
	m, s := haPair(t, "SYNC_MASTER", nil)
	for i := 0; i < 5; i++ {
		if r := rawSend(m, "HaStatus", "", i); r.Code != remoting.Success {
			t.Fatalf("send %d: %d %q", i, r.Code, r.Remark)
		}
	}
	end := m.Store().MaxPhyOffset()
	var mi remoting.HARuntimeInfo
	var mraw []byte
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		mi, mraw = haStatus(t, m)
		return len(mi.HAConnectionInfo) == 1 && mi.HAConnectionInfo[0].SlaveAckOffset == end
	}, "the master's status to show the slave's ack")
	st, _ := m.HAMasterStats()
	c := mi.HAConnectionInfo[0]
	if !mi.Master || mi.MasterCommitLogMaxOffset != end || mi.InSyncSlaveNums != 1 ||
		c.Addr != st.Slaves[0].Addr || c.Diff != 0 || !c.InSync || c.TransferFromWhere != end || c.TransferredByteInSecond < 0 {
		t.Fatalf("master status: %s (end %d, slave %s)", mraw, end, st.Slaves[0].Addr)
	}
	want := fmt.Sprintf(`{"haClientRuntimeInfo":{"lastReadTimestamp":0,"lastWriteTimestamp":0,"masterFlushOffset":0,"maxOffset":0,"transferredByteInSecond":0},`+
		`"haConnectionInfo":[{"addr":%q,"diff":0,"inSync":true,"slaveAckOffset":%d,"transferFromWhere":%d,"transferredByteInSecond":%d}],`+
		`"inSyncSlaveNums":1,"master":true,"masterCommitLogMaxOffset":%d}`, c.Addr, end, end, c.TransferredByteInSecond, end)
	if string(mraw) != want {
		t.Fatalf("master body:\n got %s\nwant %s", mraw, want)
	}

	si, sraw := haStatus(t, s)
	cl := si.HAClientRuntimeInfo
	if si.Master || cl.MasterAddr != m.HAAddr() || cl.MaxOffset != end || cl.LastReadTimestamp <= 0 || cl.LastWriteTimestamp <= 0 {
		t.Fatalf("slave status: %s (master HA %s, end %d)", sraw, m.HAAddr(), end)
	}
	want = fmt.Sprintf(`{"haClientRuntimeInfo":{"lastReadTimestamp":%d,"lastWriteTimestamp":%d,"masterAddr":%q,"masterFlushOffset":0,"maxOffset":%d,"transferredByteInSecond":%d},`+
		`"haConnectionInfo":[],"inSyncSlaveNums":0,"master":false,"masterCommitLogMaxOffset":0}`,
		cl.LastReadTimestamp, cl.LastWriteTimestamp, m.HAAddr(), end, cl.TransferredByteInSecond)
	if string(sraw) != want {
		t.Fatalf("slave body:\n got %s\nwant %s", sraw, want)
	}
}
