package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// stuckSlaveMaster starts a SYNC_MASTER on a manual clock with a fake slave
// that acked what the master held when it connected and acks nothing more:
// the slave is "OK" (connected, not behind), so a put that waits for it
// waits for slaveTimeout of the clock.
func stuckSlaveMaster(t *testing.T) (*testBroker, *clock.Manual, *fakeHASlave) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := startBroker(t, func(o *Options) { o.BrokerRole = "SYNC_MASTER"; o.Clock = clk })
	f := dialHA(t, m.HAAddr())
	f.report(m.Store().MaxPhyOffset())
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		st, _ := m.HAMasterStats()
		return st.Connections == 1 && len(st.Slaves) == 1 && st.Slaves[0].AckOffset >= 0
	}, "the fake slave")
	return m, clk, f
}

// answeredAfterSlaveTimeout runs request in the background once the store
// holds more than before (the put happened), checks that no answer comes
// while the clock stands, then advances the clock until it does and
// returns it with how much clock it took.
func answeredAfterSlaveTimeout(t *testing.T, m *testBroker, clk *clock.Manual, request func() *remoting.Command) (*remoting.Command, time.Duration) {
	t.Helper()
	before := m.Store().MaxPhyOffset()
	done := make(chan *remoting.Command, 1)
	go func() { done <- request() }()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return m.Store().MaxPhyOffset() > before }, "the put")
	select {
	case r := <-done:
		t.Fatalf("answered (code %d) before the slave acked or slaveTimeout passed", r.Code)
	case <-time.After(50 * time.Millisecond):
	}
	var resp *remoting.Command
	advanced := time.Duration(0)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		select {
		case resp = <-done:
			return true
		default:
		}
		clk.Advance(250 * time.Millisecond)
		advanced += 250 * time.Millisecond
		return false
	}, "the answer after slaveTimeout")
	return resp, advanced
}

// sendHalf stores a half message of group PG (WAIT=false, so the send
// itself does not wait) and returns its END_TRANSACTION commit header.
func sendHalf(t *testing.T, m *testBroker, topic, key string) map[string]string {
	t.Helper()
	half := m.send(sendArgs{topic: topic, body: []byte("half " + key), sysFlag: int32(message.TransactionPreparedType),
		props: coreProps("TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", key, "WAIT", "false")})
	if half.Code != remoting.Success {
		t.Fatalf("half: code %d %q", half.Code, half.Remark)
	}
	_, phy, err := message.DecodeMessageID(half.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"producerGroup": "PG", "tranStateTableOffset": half.ExtFields["queueOffset"],
		"commitLogOffset": strconv.FormatInt(phy, 10), "commitOrRollback": strconv.Itoa(int(message.TransactionCommitType)),
		"fromTransactionCheck": "false", "msgId": key,
	}
}

// A two-way END_TRANSACTION commit on a SYNC_MASTER is answered when the
// slave has the committed message, or after slaveTimeout, and the answer
// is SUCCESS either way; with no slave, SUCCESS at once
// (EndTransactionProcessor.sendFinalMessage counts FLUSH_SLAVE_TIMEOUT and
// SLAVE_NOT_AVAILABLE as success). The producer's WAIT=false on the half
// send does not carry over: stock stores the half without it.
func TestSyncMasterEndTransactionWaitsForSlave(t *testing.T) {
	m, clk, f := stuckSlaveMaster(t)
	ext := sendHalf(t, m, "HaTx", "TX1")
	resp, advanced := answeredAfterSlaveTimeout(t, m, clk, func() *remoting.Command { return m.invoke(remoting.EndTransaction, ext, nil) })
	if resp.Code != remoting.Success || resp.Remark != "" {
		t.Fatalf("commit after slaveTimeout: code %d %q, want SUCCESS", resp.Code, resp.Remark)
	}
	if advanced < 3*time.Second {
		t.Fatalf("answered after %v of the clock, before slaveTimeout", advanced)
	}
	m.waitDispatched()
	if n := m.Store().MaxOffsetInQueue("HaTx", 0); n != 1 {
		t.Fatalf("%d committed messages, want 1", n)
	}

	// The slave's ack releases the answer, without the clock.
	ext = sendHalf(t, m, "HaTx", "TX2")
	done := make(chan *remoting.Command, 1)
	before := m.Store().MaxPhyOffset()
	go func() { done <- m.invoke(remoting.EndTransaction, ext, nil) }()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return m.Store().MaxPhyOffset() > before }, "the commit put")
	f.report(m.Store().MaxPhyOffset())
	select {
	case r := <-done:
		if r.Code != remoting.Success {
			t.Fatalf("commit after the ack: code %d", r.Code)
		}
	case <-time.After(coreTestTimeout):
		t.Fatal("no answer after the slave's ack")
	}

	// No slave at all: stored, SUCCESS at once.
	lone := startBroker(t, func(o *Options) { o.BrokerRole = "SYNC_MASTER" })
	if r := lone.invoke(remoting.EndTransaction, sendHalf(t, lone, "HaTx", "TX3"), nil); r.Code != remoting.Success {
		t.Fatalf("commit without a slave: code %d %q", r.Code, r.Remark)
	}
}

// A stored reply (SEND_REPLY_MESSAGE(_V2)) on a SYNC_MASTER is answered
// once the slave has it or after slaveTimeout, with the push's answer
// (ReplyMessageProcessor: the put's FLUSH_SLAVE_TIMEOUT does not change it).
func TestSyncMasterReplyWaitsForSlave(t *testing.T) {
	for _, code := range []int32{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
		m, clk, _ := stuckSlaveMaster(t)
		req := newReplyRequester(t, m, "requester@1", remoting.Success)
		c := brokertest.NewClient(t, m.Addr())
		props := brokertest.Props(message.PropReplyToClient, "requester@1", message.PropCorrelationID, "corr-1", message.PropMsgType, "reply")
		resp, advanced := answeredAfterSlaveTimeout(t, m, clk, func() *remoting.Command {
			return c.Send(brokertest.Send{Code: code, Topic: message.ReplyTopic(m.opts.BrokerClusterName), Body: []byte("answer"), Props: props})
		})
		if resp.Code != remoting.Success || resp.ExtFields["msgId"] == "" || resp.ExtFields["msgId"] == "0" {
			t.Fatalf("code %d: answered %d %v, want SUCCESS naming the stored reply", code, resp.Code, resp.ExtFields)
		}
		if advanced < 3*time.Second {
			t.Fatalf("code %d: answered after %v of the clock, before slaveTimeout", code, advanced)
		}
		if len(req.pushed) != 1 {
			t.Fatalf("code %d: %d pushes", code, len(req.pushed))
		}
	}
}

// CONSUMER_SEND_MSG_BACK never waits for the slave: 4.9.8 marks the
// message WAIT=false, so a stuck slave or none at all still gets SUCCESS at
// once, without the clock moving.
func TestSyncMasterSendBackDoesNotWait(t *testing.T) {
	m, _, _ := stuckSlaveMaster(t)
	lone := startBroker(t, func(o *Options) { o.BrokerRole = "SYNC_MASTER" })
	for name, tb := range map[string]*testBroker{"stuck slave": m, "no slave": lone} {
		sent := tb.send(sendArgs{topic: "HaBack", body: []byte("job"), props: coreProps("UNIQ_KEY", "B1", "WAIT", "false")})
		if sent.Code != remoting.Success {
			t.Fatalf("%s: send code %d", name, sent.Code)
		}
		if r := tb.sendBack(sent.ExtFields["msgId"], "GBack", 0, "16"); r.Code != remoting.Success {
			t.Fatalf("%s: send back code %d %q, want SUCCESS at once", name, r.Code, r.Remark)
		}
	}
}
