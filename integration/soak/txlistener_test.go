package soak

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestTxListenerNeverRollsBackAnAcknowledgedID: a check-back can reach the
// producer before its local transaction ran (the half is older than
// transactionTimeOut while its SEND_OK is still on the way); answering
// ROLLBACK then dropped a half the producer went on to commit and
// acknowledge. An id being sent is answered UNKNOWN, an id whose local
// transaction said COMMIT always COMMIT, and only an id neither done nor
// being sent (a failed send) ROLLBACK. Runs without the soak's env.
func TestTxListenerNeverRollsBackAnAcknowledgedID(t *testing.T) {
	l := newTxListener()
	check := func(id string) primitive.LocalTransactionState {
		m := &primitive.MessageExt{Message: primitive.Message{Topic: "t"}}
		m.WithProperty(idProp, id)
		return l.CheckLocalTransaction(m)
	}
	exec := func(id string) {
		m := primitive.NewMessage("t", nil)
		m.WithProperty(idProp, id)
		if s := l.ExecuteLocalTransaction(m); s != primitive.CommitMessageState {
			t.Fatalf("execute %s: %v", id, s)
		}
	}
	want := func(id string, s primitive.LocalTransactionState) {
		t.Helper()
		if got := check(id); got != s {
			t.Fatalf("check %s: %v, want %v", id, got, s)
		}
	}

	end := l.begin("txn-1")
	want("txn-1", primitive.UnkonwnState) // half stored, SEND_OK not back yet
	exec("txn-1")
	want("txn-1", primitive.CommitMessageState)
	end()
	want("txn-1", primitive.CommitMessageState)

	// A send that failed after the broker stored the half: never executed.
	l.begin("txn-2")()
	want("txn-2", primitive.RollbackMessageState)
	want("txn-3", primitive.RollbackMessageState)

	// Two sends of one id in flight: pending until both ended.
	e1, e2 := l.begin("txn-4"), l.begin("txn-4")
	e1()
	want("txn-4", primitive.UnkonwnState)
	e2()
	want("txn-4", primitive.RollbackMessageState)
}
