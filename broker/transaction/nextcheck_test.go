package transaction_test

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// NextCheck names the next pass while a half message waits for its walk,
// and nothing once every half message is walked past.
func TestTransactionNextCheck(t *testing.T) {
	e := startTxBroker(t, nil) // timeout 6 s, interval 60 s
	start := e.clk.Now()
	tx := e.Transactions()
	nextIs := func(want time.Time) func() bool {
		return func() bool { next, ok := tx.NextCheck(); return ok && next.Equal(want) }
	}
	if _, ok := tx.NextCheck(); ok {
		t.Fatal("no half message: no pass is needed")
	}
	ref := e.refOf(e.sendHalf("TxN", 0, "U-next"))
	e.WaitDispatched()
	testutil.WaitFor(t, testutil.DefaultTimeout, nextIs(start.Add(time.Minute)), "the first pass to be named")

	e.pass() // checks it and puts the copy back: the copy waits
	check := e.waitChecks(e.prod, 1)[0]
	testutil.WaitFor(t, testutil.DefaultTimeout, nextIs(start.Add(2*time.Minute)), "the second pass to be named")

	e.mustEnd(e.checkRef(check), message.TransactionCommitType, true)
	e.pass() // walks past the decided copy
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { _, ok := tx.NextCheck(); return !ok }, "no pass to be needed")
	if got := e.messages("TxN", 0); len(got) != 1 {
		t.Fatalf("committed %d messages (half %+v)", len(got), ref)
	}
}
