package broker

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// recordingChecker takes the checks of a group with no remoting producer.
type recordingChecker struct {
	mu     sync.Mutex
	checks []transaction.Check
}

func (r *recordingChecker) Check(c transaction.Check) bool {
	r.mu.Lock()
	r.checks = append(r.checks, c)
	r.mu.Unlock()
	return true
}

func (r *recordingChecker) take() []transaction.Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.checks
	r.checks = nil
	return got
}

// A half message whose SEND answer waits for the slave (a SYNC_MASTER
// whose slave has not acked yet, as while a slave reconnects after the
// master's restart) is not checked before the producer has its SEND_OK:
// the producer has not run its local transaction, and its ROLLBACK for a
// transaction it does not know would decide the chain, so the COMMIT it
// sends once SEND_OK arrives would store nothing: an acknowledged message
// lost (soak-ha with a Java slave lost 14 this way). Once answered, the
// half is checked no sooner than transactionTimeOut after the answer.
func TestSyncMasterHalfNotCheckedBeforeItsAnswer(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := startBroker(t, func(o *Options) {
		o.BrokerRole = "SYNC_MASTER"
		o.Clock = clk
		o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 1000
	})
	f := dialHA(t, m.HAAddr())
	f.report(m.Store().MaxPhyOffset())
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		st, _ := m.HAMasterStats()
		return st.Connections == 1 && len(st.Slaves) == 1 && st.Slaves[0].AckOffset >= 0
	}, "the fake slave")
	chk := &recordingChecker{}
	m.Transactions().SetChecker(chk)
	passes := func(n int) {
		t.Helper()
		for range n {
			before := m.Transactions().Stats().Passes
			clk.Advance(time.Second)
			testutil.WaitFor(t, coreTestTimeout, func() bool { return m.Transactions().Stats().Passes > before }, "a check pass")
		}
	}
	// The producer: ROLLBACK for a transaction it has not begun (no SEND_OK
	// yet), as the soak's listener and many applications answer.
	rollbackChecks := func() int {
		t.Helper()
		got := chk.take()
		for _, c := range got {
			if err := m.Transactions().End(c.Group, c.TranStateTableOffset, c.CommitLogOffset, false, true, "TXH"); err != nil {
				t.Fatalf("rollback of the check: %v", err)
			}
		}
		return len(got)
	}

	before := m.Store().MaxPhyOffset()
	answer := make(chan *remoting.Command, 1)
	go func() {
		answer <- m.send(sendArgs{topic: "HaTxHeld", body: []byte("half"), sysFlag: int32(message.TransactionPreparedType),
			props: coreProps("TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", "TXH")})
	}()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return m.Store().MaxPhyOffset() > before }, "the half put")
	m.waitDispatched()
	passes(2) // the half is 2 s old, past transactionTimeOut; its answer still waits
	// Answered as the producer would (ROLLBACK); the loss shows below.
	if n := rollbackChecks(); n != 0 {
		t.Errorf("%d checks of a half message whose send is not answered yet", n)
	}
	select {
	case r := <-answer:
		t.Fatalf("half answered (code %d) before the slave's ack", r.Code)
	default:
	}

	f.report(m.Store().MaxPhyOffset())
	var half *remoting.Command
	select {
	case half = <-answer:
	case <-time.After(coreTestTimeout):
		t.Fatal("no half answer after the slave's ack")
	}
	if half.Code != remoting.Success {
		t.Fatalf("half: code %d %q", half.Code, half.Remark)
	}
	_, phy, err := message.DecodeMessageID(half.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	// SEND_OK: the producer runs its transaction and commits.
	q, err := strconv.ParseInt(half.ExtFields["queueOffset"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Transactions().End("PG", q, phy, true, false, "TXH"); err != nil {
		t.Fatalf("commit: %v", err)
	}
	m.waitDispatched()
	if n := m.Store().MaxOffsetInQueue("HaTxHeld", 0); n != 1 {
		t.Fatalf("%d committed messages on the real topic, want 1 (the commit of an acknowledged half was dropped)", n)
	}
	passes(2)
	if n := rollbackChecks(); n != 0 {
		t.Fatalf("%d checks of a committed half", n)
	}
}
