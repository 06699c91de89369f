package transaction_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// txShortChecks makes a check pass every 10 s with a 1 s time-out, so a
// test's passes stay within the producer connection's 120 s heartbeat
// expiry on the manual clock.
func txShortChecks(o *broker.Options) { o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 10000 }

// decidedChains is the size of the decided set.
// runtimeInfo reads one key of GET_BROKER_RUNTIME_INFO.
func (e *txEnv) runtimeInfo(key string) string {
	e.t.Helper()
	var kv remoting.KVTable
	resp := e.Invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	if err := remoting.UnmarshalBody(resp.Body, &kv); err != nil || resp.Code != remoting.Success {
		e.t.Fatalf("runtime info: code %d: %v", resp.Code, err)
	}
	return kv.Table[key]
}

func (e *txEnv) decidedChains() int {
	return e.txStats().DecidedChains
}

// TestTransactionVeryLateEndIsHarmless sends the decision again after the
// walk released the chain's decision (no op entry, no decided set entry is
// left to recognise it), with and without a restart in between.
func TestTransactionVeryLateEndIsHarmless(t *testing.T) {
	cases := []struct {
		name      string
		first     int32 // the decision that applies
		fromCheck bool  // the first decision answers a check (of the copy)
		late      int32 // the very late END_TRANSACTION
		restart   bool
		want      int // messages on the real topic
	}{
		{name: "commit twice", first: message.TransactionCommitType, late: message.TransactionCommitType, want: 1},
		{name: "commit twice, restart", first: message.TransactionCommitType, late: message.TransactionCommitType, restart: true, want: 1},
		{name: "rollback then commit", first: message.TransactionRollbackType, late: message.TransactionCommitType, want: 0},
		{name: "rollback then commit, restart", first: message.TransactionRollbackType, late: message.TransactionCommitType, restart: true, want: 0},
		{name: "check answered, commit again", first: message.TransactionCommitType, fromCheck: true, late: message.TransactionCommitType, want: 1},
		{name: "check answered, commit again, restart", first: message.TransactionCommitType, fromCheck: true, late: message.TransactionCommitType, restart: true, want: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startTxBroker(t, txShortChecks)
			ref := e.refOf(e.sendHalf("TxVL", 0, "U-vl"))
			refs := []txRef{ref}
			if c.fromCheck {
				e.pass()
				check := e.waitChecks(e.prod, 1)[0]
				refs = append(refs, e.checkRef(check))
				e.mustEnd(e.checkRef(check), c.first, true)
			} else {
				e.mustEnd(ref, c.first, false)
			}
			for range 4 {
				e.pass()
			}
			if n := e.decidedChains(); n != 0 {
				t.Fatalf("%d decided chains kept: the late END would not test the released path", n)
			}
			if c.restart {
				e.restart()
			}
			for _, r := range refs {
				for _, fromCheck := range []bool{false, true} {
					if resp := e.end(r, c.late, fromCheck, "PG"); resp.Code != remoting.Success {
						t.Fatalf("late END_TRANSACTION of %+v: code %d %q, want success", r, resp.Code, resp.Remark)
					}
				}
			}
			if n := len(e.messages("TxVL", 0)); n != c.want {
				t.Fatalf("%d messages on the real topic, want %d", n, c.want)
			}
			if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 1 {
				t.Fatalf("%d op entries, want 1", n)
			}
			before := len(e.prod.Received())
			e.pass()
			if n := len(e.prod.Received()); n != before {
				t.Fatalf("%d checks after the late END_TRANSACTION", n-before)
			}
		})
	}
}

// TestTransactionPendingDecisionAfterPasses decides a chain the walk has
// passed several times (each pass put a copy back), naming the original
// half record or an old copy, with and without a restart: it applies once.
func TestTransactionPendingDecisionAfterPasses(t *testing.T) {
	cases := []struct {
		name     string
		name1st  bool // decide on the original record, else on the first check copy
		restart  bool
		decision int32
		want     int
	}{
		{name: "original, commit", name1st: true, decision: message.TransactionCommitType, want: 1},
		{name: "original, commit, restart", name1st: true, restart: true, decision: message.TransactionCommitType, want: 1},
		{name: "old copy, commit", decision: message.TransactionCommitType, want: 1},
		{name: "old copy, commit, restart", restart: true, decision: message.TransactionCommitType, want: 1},
		{name: "old copy, rollback, restart", restart: true, decision: message.TransactionRollbackType, want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startTxBroker(t, txShortChecks)
			ref := e.refOf(e.sendHalf("TxPD", 0, "U-pd"))
			e.pass()
			first := e.checkRef(e.waitChecks(e.prod, 1)[0])
			e.pass()
			e.pass() // copies at 1, 2, 3; progress 3
			e.waitChecks(e.prod, 3)
			if half, _ := e.Clients().Offsets.Query(txSysGroup, message.TopicTransHalf, 0); half != 3 {
				t.Fatalf("half progress %d, want 3", half)
			}
			if c.restart {
				e.restart()
			}
			named := first
			if c.name1st {
				named = ref
			}
			e.mustEnd(named, c.decision, !c.name1st)
			e.mustEnd(named, message.TransactionCommitType, !c.name1st) // duplicate
			if n := len(e.messages("TxPD", 0)); n != c.want {
				t.Fatalf("%d messages on the real topic, want %d", n, c.want)
			}
			before := len(e.prod.Received())
			for range 3 {
				e.pass()
			}
			if n := len(e.prod.Received()); n != before {
				t.Fatalf("%d checks after the decision", n-before)
			}
			if n := len(e.messages("TxPD", 0)); n != c.want {
				t.Fatalf("%d messages on the real topic after passes, want %d", n, c.want)
			}
		})
	}
}

// TestTransactionEndAfterDiscard: a chain discarded after its check budget
// is finished; only RESUME_CHECK_HALF_MESSAGE brings it back.
func TestTransactionEndAfterDiscard(t *testing.T) {
	e := startTxBroker(t, func(o *broker.Options) {
		txShortChecks(o)
		o.TransactionCheckMax = 1
	})
	ref := e.refOf(e.sendHalf("TxAD", 0, "U-ad"))
	e.pass()
	check := e.checkRef(e.waitChecks(e.prod, 1)[0])
	e.pass() // discarded
	if n := len(e.messages(message.TopicTransCheckMaxTime, 0)); n != 1 {
		t.Fatalf("%d discarded messages, want 1", n)
	}
	e.restart()
	e.mustEnd(ref, message.TransactionCommitType, false)
	e.mustEnd(check, message.TransactionCommitType, true)
	if n := len(e.messages("TxAD", 0)); n != 0 {
		t.Fatalf("%d messages committed after the discard", n)
	}
	dropped := e.messages(message.TopicTransCheckMaxTime, 0)[0]
	if resp := e.Invoke(txResumeCheckHalfMessage, map[string]string{"msgId": dropped.MsgID}, nil); resp.Code != remoting.Success {
		t.Fatalf("resume: %d %q", resp.Code, resp.Remark)
	}
	// The producer's answer to the old check now applies, once.
	e.mustEnd(check, message.TransactionCommitType, true)
	e.mustEnd(ref, message.TransactionCommitType, false)
	if n := len(e.messages("TxAD", 0)); n != 1 {
		t.Fatalf("%d messages after resume and commit, want 1", n)
	}
}

func TestTransactionTimerAppliesOnCommit(t *testing.T) {
	e := startTxBroker(t, nil)
	due := e.clk.Now().Add(30 * time.Second).UnixMilli()
	ref := e.refOf(e.sendHalf("TxTimer", 1, "U-timer", message.PropTimerDeliverMs, strconv.FormatInt(due, 10)))
	if halves := e.messages(message.TopicTransHalf, 0); len(halves) != 1 || halves[0].Properties[message.PropTimerDeliverMs] == "" {
		t.Fatalf("the half message must keep TIMER_DELIVER_MS and stay on the half topic: %+v", halves)
	}
	if n := len(e.messages(message.TopicWheelTimer, 0)); n != 0 {
		t.Fatal("half message put into the timer wheel before the commit")
	}
	e.mustEnd(ref, message.TransactionCommitType, false)
	wheel := e.messages(message.TopicWheelTimer, 0)
	if len(wheel) != 1 || wheel[0].Properties["REAL_TOPIC"] != "TxTimer" || wheel[0].Properties["REAL_QID"] != "1" {
		t.Fatalf("committed timer message %+v", wheel)
	}
	if n := len(e.messages("TxTimer", 1)); n != 0 {
		t.Fatal("delivered before its time")
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.runtimeInfo("timerCongestNum") == "1" }, "enqueue into the wheel")
	e.clk.Advance(30*time.Second - time.Millisecond)
	if n := len(e.messages("TxTimer", 1)); n != 0 {
		t.Fatal("delivered before its time")
	}
	e.clk.Advance(time.Millisecond)
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return len(e.messages("TxTimer", 1)) == 1 }, "timer delivery")
	m := e.messages("TxTimer", 1)[0]
	if string(m.Body) != "body-U-timer" || m.Properties["UNIQ_KEY"] != "U-timer" || m.Properties["TRAN_MSG"] != "" {
		t.Fatalf("delivered %q %v", m.Body, m.Properties)
	}
	if m.StoreTimestamp < due {
		t.Fatalf("stored at %d, before its time %d", m.StoreTimestamp, due)
	}
	if n := len(e.messages("TxTimer", 1)); n != 1 {
		t.Fatalf("%d deliveries", n)
	}
}
