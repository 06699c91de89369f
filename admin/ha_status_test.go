package admin

import (
	"bytes"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
)

// PrintHAStatus writes HAStatusSubCommand.printStatus's text: a master
// with an in-sync and a fallen-behind slave, and a slave without a master
// address (Java prints null).
func TestPrintHAStatus(t *testing.T) {
	var b bytes.Buffer
	PrintHAStatus(&b, BrokerHAStatus{Addr: "10.0.0.1:10911", Info: &remoting.HARuntimeInfo{
		Master: true, MasterCommitLogMaxOffset: 300000000, InSyncSlaveNums: 1,
		HAConnectionInfo: []remoting.HAConnectionRuntimeInfo{
			{Addr: "10.0.0.2:40001", SlaveAckOffset: 300000000, Diff: 0, InSync: true, TransferredByteInSecond: 1536, TransferFromWhere: 300000000},
			{Addr: "10.0.0.3:40002", SlaveAckOffset: -1, Diff: 300000001, InSync: false, TransferFromWhere: -1},
		}}})
	want := "\n#MasterAddr\t10.0.0.1:10911\n#MasterCommitLogMaxOffset\t300000000\n#SlaveNum\t2\n#InSyncSlaveNum\t1\n" +
		"#SlaveAddr                        #SlaveAckOffset             #Diff #TransferSpeed(KB/s)          #Status #TransferFromWhere\n" +
		"10.0.0.2:40001                    300000000                       0             1.50               OK        300000000\n" +
		"10.0.0.3:40002                    -1                      300000001             0.00      Fall Behind               -1\n"
	if b.String() != want {
		t.Fatalf("master:\n%q\nwant\n%q", b.String(), want)
	}

	ms := time.Date(2026, 3, 4, 5, 6, 7, 89e6, time.Local).UnixMilli()
	b.Reset()
	PrintHAStatus(&b, BrokerHAStatus{Addr: "10.0.0.2:10911", Info: &remoting.HARuntimeInfo{
		HAClientRuntimeInfo: remoting.HAClientRuntimeInfo{MaxOffset: 42, TransferredByteInSecond: 2048, LastReadTimestamp: ms, LastWriteTimestamp: ms}}})
	want = "\n#MasterAddr\tnull\n#CommitLogMaxOffset\t42\n#TransferSpeed(KB/s)\t2.00\n" +
		"#LastReadTime\t2026-03-04 05:06:07,089\n#LastWriteTime\t2026-03-04 05:06:07,089\n#MasterFlushOffset\t0\n"
	if b.String() != want {
		t.Fatalf("slave:\n%q\nwant\n%q", b.String(), want)
	}
}
