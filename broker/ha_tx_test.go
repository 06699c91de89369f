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
// Both front ends: SEND_MESSAGE and the gRPC endpoint's Put.
func TestSyncMasterHalfNotCheckedBeforeItsAnswer(t *testing.T) {
	for _, grpc := range []bool{false, true} {
		t.Run("grpc="+strconv.FormatBool(grpc), func(t *testing.T) { halfNotCheckedBeforeItsAnswer(t, grpc) })
	}
}

// halfAnswer is a half send's outcome: its offsets and whether it is SEND_OK.
type halfAnswer struct {
	q, phy int64
	ok     bool
	desc   string
}

func halfNotCheckedBeforeItsAnswer(t *testing.T, grpc bool) {
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

	base := int64(0)
	if grpc {
		// Put does not create topics: a plain send (not waiting) does.
		if r := m.send(sendArgs{topic: "HaTxHeld", body: []byte("plain"), props: coreProps("WAIT", "false")}); r.Code != remoting.Success {
			t.Fatalf("plain send: code %d", r.Code)
		}
		base = 1
	}
	before := m.Store().MaxPhyOffset()
	answer := make(chan halfAnswer, 1)
	go func() {
		if grpc {
			r, err := m.Put(PutRequest{Topic: "HaTxHeld", QueueID: 0, Body: []byte("half"), SysFlag: int32(message.TransactionPreparedType),
				Properties: map[string]string{"TRAN_MSG": "true", "PGROUP": "PG", "UNIQ_KEY": "TXH"}, BornTimestamp: clk.Now().UnixMilli()})
			if err != nil {
				answer <- halfAnswer{desc: err.Error()}
				return
			}
			answer <- halfAnswer{q: r.QueueOffset, phy: r.PhysicalOffset, ok: r.code == remoting.Success, desc: strconv.Itoa(int(r.code))}
			return
		}
		r := m.send(sendArgs{topic: "HaTxHeld", body: []byte("half"), sysFlag: int32(message.TransactionPreparedType),
			props: coreProps("TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", "TXH")})
		a := halfAnswer{ok: r.Code == remoting.Success, desc: strconv.Itoa(int(r.Code)) + " " + r.Remark}
		_, a.phy, _ = message.DecodeMessageID(r.ExtFields["msgId"])
		a.q, _ = strconv.ParseInt(r.ExtFields["queueOffset"], 10, 64)
		answer <- a
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
		t.Fatalf("half answered (%s) before the slave's ack", r.desc)
	default:
	}

	f.report(m.Store().MaxPhyOffset())
	var half halfAnswer
	select {
	case half = <-answer:
	case <-time.After(coreTestTimeout):
		t.Fatal("no half answer after the slave's ack")
	}
	if !half.ok {
		t.Fatalf("half: %s", half.desc)
	}
	// SEND_OK: the producer runs its transaction and commits.
	q, phy := half.q, half.phy
	if err := m.Transactions().End("PG", q, phy, true, false, "TXH"); err != nil {
		t.Fatalf("commit: %v", err)
	}
	m.waitDispatched()
	if n := m.Store().MaxOffsetInQueue("HaTxHeld", 0) - base; n != 1 {
		t.Fatalf("%d committed messages on the real topic, want 1 (the commit of an acknowledged half was dropped)", n)
	}
	passes(2)
	if n := rollbackChecks(); n != 0 {
		t.Fatalf("%d checks of a committed half", n)
	}
}
