package grpcapi

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// startTxServer is a consume server whose transaction checks run on its
// manual clock: the first check after 6 s, then every 60 s.
func startTxServer(t *testing.T) *consumeServer {
	t.Helper()
	return startConsumeServer(t, func(o *broker.Options) {
		o.TransactionTimeOut = 6000
		o.TransactionCheckInterval = 60000
		o.TransactionCheckMax = 15
	}, nil)
}

// txProducer opens a Telemetry stream as client id and sends its producer
// Settings for topic; cancel drops the stream.
func (cs *consumeServer) txProducer(t *testing.T, c v2.MessagingServiceClient, id, topic string) (v2.MessagingService_TelemetryClient, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	tel, err := c.Telemetry(metadata.AppendToOutgoingContext(ctx, mdClientID, id))
	if err != nil {
		t.Fatal(err)
	}
	pt := v2.ClientType_PRODUCER
	if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &pt, PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: topic}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := tel.Recv(); err != nil || got.GetSettings() == nil {
		t.Fatalf("settings answer: %v %v", got, err)
	}
	return tel, cancel
}

// checkPass advances the clock by one check interval and waits for the
// transaction service's pass.
func (cs *consumeServer) checkPass(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Store().DispatchBehind() == 0 }, "the half queue dispatched")
	n := cs.b.Transactions().Stats().Passes
	cs.clk.Advance(time.Minute)
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Transactions().Stats().Passes > n }, "a check pass")
}

// recvCheck reads the next command of tel, which must be a check-back.
func recvCheck(t *testing.T, tel v2.MessagingService_TelemetryClient) *v2.RecoverOrphanedTransactionCommand {
	t.Helper()
	cmd, err := tel.Recv()
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	rec := cmd.GetRecoverOrphanedTransactionCommand()
	if rec == nil {
		t.Fatalf("telemetry command %v, want a check-back", cmd)
	}
	return rec
}

// TestRawTelemetryDroppedMidTransaction: a producer that drops its
// Telemetry stream (cancelled, or its connection closed) after a check-back
// arrived and before answering it. Another client of the group gets the
// next check-back and commits: the message is stored once, the half message
// is resolved once (no check after), a second EndTransaction of the same
// transaction is refused with INVALID_TRANSACTION_ID as the proxy refuses it
// (TransactionProcessor.endTransaction: "cannot found transaction data") and
// stores nothing, and the endpoint keeps serving.
func TestRawTelemetryDroppedMidTransaction(t *testing.T) {
	for _, closeConn := range []bool{false, true} {
		name := map[bool]string{false: "stream cancelled", true: "connection closed"}[closeConn]
		t.Run(name, func(t *testing.T) { droppedMidTransaction(t, closeConn) })
	}
}

func droppedMidTransaction(t *testing.T, closeConn bool) {
	cs := startTxServer(t)
	cs.createTypedTopic("TxDrop", 1, "MIXED")
	c := dial(t, cs.testServer, false)

	connA := dialConn(t, cs.testServer, true)
	cA := v2.NewMessagingServiceClient(connA)
	telA, cancelA := cs.txProducer(t, cA, "tx-client-a", "TxDrop")
	half := sendReq("TxDrop", []byte("tx body"), "ID-tx-drop")
	half.Messages[0].SystemProperties.MessageType = v2.MessageType_TRANSACTION
	resp, err := cA.SendMessage(callCtx(t), half)
	if err != nil || resp.Status.Code != v2.Code_OK || resp.Entries[0].TransactionId == "" {
		t.Fatalf("transactional send: %v %v", resp, err)
	}
	txID := resp.Entries[0].TransactionId

	cs.checkPass(t)
	if rec := recvCheck(t, telA); rec.GetTransactionId() != txID || rec.GetMessage().GetTopic().GetName() != "TxDrop" ||
		string(rec.GetMessage().GetBody()) != "tx body" {
		t.Fatalf("first check-back %v", rec)
	}
	// A goes away without answering.
	if closeConn {
		connA.Close()
	} else {
		cancelA()
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.srv.clients.get("tx-client-a") == nil }, "client a's session to end")
	if n := sum(cs.queueCounts("TxDrop", 1)); n != 0 {
		t.Fatalf("%d messages on TxDrop before any decision", n)
	}

	// B, a new client of the group, answers the next check-back.
	telB, _ := cs.txProducer(t, c, "tx-client-b", "TxDrop")
	cs.checkPass(t)
	rec := recvCheck(t, telB)
	if rec.GetTransactionId() != txID {
		t.Fatalf("second check-back %v", rec)
	}
	end := &v2.EndTransactionRequest{
		Topic: &v2.Resource{Name: "TxDrop"}, MessageId: rec.GetMessage().GetSystemProperties().GetMessageId(), TransactionId: txID,
		Resolution: v2.TransactionResolution_COMMIT, Source: v2.TransactionSource_SOURCE_SERVER_CHECK,
	}
	if r, err := c.EndTransaction(callCtx(t), end); err != nil || r.Status.Code != v2.Code_OK {
		t.Fatalf("commit from the check-back: %v %v", r, err)
	}
	cs.waitCount(t, "TxDrop", 1, 1)

	// Ended already: refused, nothing stored, from either source.
	for _, src := range []v2.TransactionSource{v2.TransactionSource_SOURCE_SERVER_CHECK, v2.TransactionSource_SOURCE_CLIENT} {
		end.Source = src
		if r, err := c.EndTransaction(callCtx(t), end); err != nil || r.Status.Code != v2.Code_INVALID_TRANSACTION_ID {
			t.Fatalf("second commit (%v): %v %v", src, r, err)
		}
	}
	// Resolved once: the next pass checks nothing.
	checks := cs.b.Transactions().Stats().Checks
	cs.checkPass(t)
	if n := cs.b.Transactions().Stats().Checks; n != checks {
		t.Fatalf("%d checks after the commit, want none", n-checks)
	}
	if n := sum(cs.queueCounts("TxDrop", 1)); n != 1 {
		t.Fatalf("%d messages on TxDrop, want 1", n)
	}
	if n := cs.b.Store().MaxOffsetInQueue(message.TopicTransOpHalf, 0); n != 1 {
		t.Fatalf("%d op records, want the commit's only", n)
	}

	// A consumer gets it once, as a NORMAL message: the commit clears
	// TRAN_MSG (EndTransactionProcessor) and GrpcConverter types by it.
	r := receiveRaw(t, c, callCtx(t), recvReq("TxDropGroup", "TxDrop", 30*time.Second))
	if len(r.msgs) != 1 || string(r.msgs[0].GetBody()) != "tx body" || r.msgs[0].GetSystemProperties().GetMessageId() != "ID-tx-drop" ||
		r.msgs[0].GetSystemProperties().GetMessageType() != v2.MessageType_NORMAL {
		t.Fatalf("receive: %v %v", r.status, r.msgs)
	}
	if again := receiveRaw(t, c, callCtx(t), recvReq("TxDropGroup", "TxDrop", 30*time.Second)); again.status.GetCode() != v2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("second receive: %v %v", again.status, again.msgs)
	}
	// Still serving: a plain send.
	if resp, err := c.SendMessage(callCtx(t), sendReq("TxDrop", []byte("after"), "ID-after")); err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("send after the dropped stream: %v %v", resp, err)
	}
}

// TestRawEndTransactionAfterDataExpired: the endpoint keeps what it needs to
// end a transaction for transactionDataExpireMillis (30 s) after the send or
// check-back that gave it, as the proxy does; a later EndTransaction gets
// INVALID_TRANSACTION_ID, stores nothing, and the next check-back settles
// the transaction.
func TestRawEndTransactionAfterDataExpired(t *testing.T) {
	cs := startTxServer(t)
	cs.createTypedTopic("TxExpire", 1, "TRANSACTION")
	c := dial(t, cs.testServer, false)
	tel, _ := cs.txProducer(t, c, "tx-client-e", "TxExpire")
	sendHalf := func(id string) string {
		half := sendReq("TxExpire", []byte(id), id)
		half.Messages[0].SystemProperties.MessageType = v2.MessageType_TRANSACTION
		resp, err := c.SendMessage(callCtx(t), half)
		if err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("transactional send: %v %v", resp, err)
		}
		return resp.Entries[0].TransactionId
	}
	endReq := func(id, txID string, src v2.TransactionSource) *v2.EndTransactionRequest {
		return &v2.EndTransactionRequest{Topic: &v2.Resource{Name: "TxExpire"}, MessageId: id, TransactionId: txID,
			Resolution: v2.TransactionResolution_COMMIT, Source: src}
	}
	late, onTime := sendHalf("ID-late"), sendHalf("ID-on-time")
	cs.clk.Advance(txDataExpire)
	if r, err := c.EndTransaction(callCtx(t), endReq("ID-on-time", onTime, v2.TransactionSource_SOURCE_CLIENT)); err != nil || r.Status.Code != v2.Code_OK {
		t.Fatalf("commit at 30 s: %v %v", r, err)
	}
	cs.waitCount(t, "TxExpire", 1, 1)
	cs.clk.Advance(time.Millisecond)
	if r, err := c.EndTransaction(callCtx(t), endReq("ID-late", late, v2.TransactionSource_SOURCE_CLIENT)); err != nil || r.Status.Code != v2.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("commit after 30 s: %v %v", r, err)
	}
	cs.checkPass(t)
	rec := recvCheck(t, tel)
	if rec.GetTransactionId() != late {
		t.Fatalf("check-back %v, want %s only", rec, late)
	}
	if n := sum(cs.queueCounts("TxExpire", 1)); n != 1 {
		t.Fatalf("%d messages after the refused commit, want 1", n)
	}
	if r, err := c.EndTransaction(callCtx(t), endReq("ID-late", late, v2.TransactionSource_SOURCE_SERVER_CHECK)); err != nil || r.Status.Code != v2.Code_OK {
		t.Fatalf("commit from the check-back: %v %v", r, err)
	}
	cs.waitCount(t, "TxExpire", 1, 2)
}

// TestRawTransactionFirstCheck: a half message sent without an orphaned
// transaction recovery duration (the 5.x SDKs send none) is first checked
// transactionTimeOut after it was born, as the proxy stores no
// CHECK_IMMUNITY_TIME_IN_SECONDS for it (SendMessageActivity
// .buildMessageProperty); one with a duration is checked after that.
func TestRawTransactionFirstCheck(t *testing.T) {
	cs := startConsumeServer(t, func(o *broker.Options) {
		o.TransactionTimeOut = 120000
		o.TransactionCheckInterval = 60000
	}, nil)
	cs.createTypedTopic("TxFirst", 1, "TRANSACTION")
	c := dial(t, cs.testServer, false)
	tel, _ := cs.txProducer(t, c, "tx-client-f", "TxFirst")
	for _, id := range []string{"ID-recover-30s", "ID-no-duration"} {
		half := sendReq("TxFirst", []byte(id), id)
		half.Messages[0].SystemProperties.MessageType = v2.MessageType_TRANSACTION
		if id == "ID-recover-30s" {
			half.Messages[0].SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(30 * time.Second)
		}
		if resp, err := c.SendMessage(callCtx(t), half); err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("transactional send: %v %v", resp, err)
		}
	}
	cs.checkPass(t) // 60 s: past 30 s, not past transactionTimeOut
	if rec := recvCheck(t, tel); string(rec.GetMessage().GetBody()) != "ID-recover-30s" {
		t.Fatalf("first check-back %v", rec)
	}
	if n := cs.b.Transactions().Stats().Checks; n != 1 {
		t.Fatalf("%d checks at 60 s, want 1", n)
	}
	cs.checkPass(t) // 120 s
	seen := map[string]bool{}
	for len(seen) < 2 {
		seen[string(recvCheck(t, tel).GetMessage().GetBody())] = true
	}
	if !seen["ID-no-duration"] {
		t.Fatalf("check-backs at 120 s: %v", seen)
	}
}
