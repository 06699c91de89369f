package transaction_test

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// TestTransactionEndCounts: END_TRANSACTION counts commits and rollbacks by
// real topic, and a commit's age in seconds since the half message was born
// (EndTransactionProcessor); a repeated END of a decided message counts
// nothing, a refused one neither.
func TestTransactionEndCounts(t *testing.T) {
	e := startTxBroker(t, nil)
	a := e.refOf(e.sendHalf("TxM", 0, "U-m1"))
	b := e.refOf(e.sendHalf("TxM", 0, "U-m2"))
	c := e.refOf(e.sendHalf("TxN", 0, "U-m3"))
	e.clk.Advance(70 * time.Second) // a commit 70 s after the birth: bucket (60 s, 600 s]
	e.mustEnd(a, message.TransactionCommitType, false)
	e.mustEnd(a, message.TransactionCommitType, false) // already decided
	e.mustEnd(b, message.TransactionRollbackType, false)
	e.mustEnd(c, message.TransactionCommitType, false)
	if resp := e.end(txRef{queueOffset: 99, phyOffset: 1 << 40}, message.TransactionCommitType, false, "PG"); resp.Code == remoting.Success {
		t.Fatal("END_TRANSACTION of an unknown message succeeded")
	}
	got := map[string][3]int64{}
	e.Transactions().Ends(func(topic string, c *transaction.EndCounts) {
		s := c.Latency.Snapshot()
		if s.Count != uint64(c.Commits.Load()) {
			t.Errorf("%s: %d latencies for %d commits", topic, s.Count, c.Commits.Load())
		}
		if s.Count > 0 && (s.Sum != 70*int64(s.Count) || s.Cumulative[0] != 0 || s.Cumulative[1] != 0 || s.Cumulative[2] != s.Count) {
			t.Errorf("%s: latency %+v, want every commit at 70 s", topic, s)
		}
		got[topic] = [3]int64{c.Commits.Load(), c.Rollbacks.Load(), int64(s.Count)}
	})
	want := map[string][3]int64{"TxM": {1, 1, 1}, "TxN": {1, 0, 1}}
	if len(got) != len(want) || got["TxM"] != want["TxM"] || got["TxN"] != want["TxN"] {
		t.Errorf("ends %v, want %v", got, want)
	}
}
