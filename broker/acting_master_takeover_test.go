package broker

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// actingTrio starts a name server that tells brokers of min-id changes, a
// master and its slave (group name) in acting-master mode with remote
// escape, and the master of a second group (other), all on clk.
func actingTrio(t *testing.T, name, other string, clk clock.Clock, mutate func(*Options)) (master, slave, second *testBroker) {
	t.Helper()
	ns := startActingNamesrv(t)
	acting := func(group string) func(*Options) {
		return func(o *Options) {
			o.NamesrvAddr = ns.Addr()
			o.BrokerName = group
			o.MessageClock = clk
			o.SmallStore = true
			o.EnableSlaveActingMaster = true
			o.EnableRemoteEscape = true
			o.BrokerHeartbeatInterval = 50
			o.SyncBrokerMemberGroupPeriod = 50
			if mutate != nil {
				mutate(o)
			}
		}
	}
	master = startBroker(t, acting(name))
	slave = startBroker(t, func(o *Options) {
		acting(name)(o)
		o.BrokerRole, o.BrokerID = RoleSlave, 1
		o.ListenPort = testutil.FreePortPair(t, master.opts.ListenPort)
		o.haReconnectDelay = 20 * time.Millisecond
	})
	second = startBroker(t, acting(other))
	slave.SetHAMasterAddress(master.HAAddr())
	return master, slave, second
}

// replicated waits until the slave holds everything the master stored and
// has dispatched it.
func replicated(t *testing.T, master, slave *testBroker) {
	t.Helper()
	maxPhy := master.Store().MaxPhyOffset()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.Store().MaxPhyOffset() >= maxPhy }, "the slave to replicate")
	slave.waitDispatched()
}

// txCheckProducer is a connection that heartbeats as a producer of group
// and records the CHECK_TRANSACTION_STATE requests it gets.
type txCheckProducer struct {
	cl     *remoting.Client
	mu     sync.Mutex
	checks []*remoting.Command
}

func connectTxProducer(t *testing.T, tb *testBroker, group string) *txCheckProducer {
	t.Helper()
	p := &txCheckProducer{}
	p.cl = remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.CheckTransactionState {
			p.mu.Lock()
			p.checks = append(p.checks, req)
			p.mu.Unlock()
		}
		return nil
	}})
	t.Cleanup(p.cl.Close)
	hb := remoting.HeartbeatData{ClientID: "tx-" + group, ProducerDataSet: []*remoting.ProducerData{{GroupName: group}}}
	resp, err := p.cl.InvokeTimeout(tb.Addr(), remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), coreTestTimeout)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("producer heartbeat: %v %v", err, resp)
	}
	return p
}

func (p *txCheckProducer) received() []*remoting.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*remoting.Command(nil), p.checks...)
}

// endTx sends END_TRANSACTION for the half message a send answered or a
// check named (queue offset, commitlog offset).
func endTx(t *testing.T, tb *testBroker, queueOffset, phy string, decision int32, fromCheck bool) {
	t.Helper()
	r := tb.invoke(remoting.EndTransaction, map[string]string{
		"producerGroup": "PGA", "tranStateTableOffset": queueOffset, "commitLogOffset": phy,
		"commitOrRollback": strconv.Itoa(int(decision)), "fromTransactionCheck": strconv.FormatBool(fromCheck), "msgId": "U",
	}, nil)
	if r.Code != remoting.Success {
		t.Fatalf("end transaction: %d %s", r.Code, r.Remark)
	}
}

// uniqs counts the messages of topic (queues 0..n-1) on tb by UNIQ_KEY.
func uniqs(tb *testBroker, topic string, n int32) map[string]int {
	got := map[string]int{}
	for q := int32(0); q < n; q++ {
		for _, m := range tb.messagesOn(topic, q) {
			got[m.Properties[message.PropUniqKey]]++
		}
	}
	return got
}

const (
	txCommit   int32 = 8  // MessageSysFlag.TRANSACTION_COMMIT_TYPE
	txRollback int32 = 12 // MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
)

// The master of an acting-master pair goes with three half messages
// stored: one committed, one rolled back, one undecided. The slave takes
// the transaction check over from its replicated store: it escapes only
// the undecided one, as a prepared message, to the other group's master,
// which checks it once its transactionTimeOut from the born time has
// passed (not before); the producer's COMMIT makes it consumable there.
// The decided two are never walked again. When the master is back the
// slave holds the check: later passes escape nothing more.
func TestSlaveActingMasterTakesOverTransactionCheck(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	const interval, timeout = 10 * time.Second, 30 * time.Second
	master, slave, other := actingTrio(t, "am-t", "am-u", clk, func(o *Options) {
		o.TransactionCheckInterval, o.TransactionTimeOut = interval.Milliseconds(), timeout.Milliseconds()
	})
	for _, tb := range []*testBroker{master, other} {
		createTopic(t, tb, "AMX", 2)
	}
	half := func(uniq string) (string, string) {
		a := sendArgs{code: remoting.SendMessageV2, topic: "AMX", body: []byte(uniq), sysFlag: message.TransactionPreparedType,
			props: coreProps("TRAN_MSG", "true", "PGROUP", "PGA", "UNIQ_KEY", uniq)}
		ext := a.ext()
		ext["g"] = strconv.FormatInt(clk.Now().UnixMilli(), 10) // born on the test clock
		r := master.invoke(a.code, ext, a.body)
		if r.Code != remoting.Success {
			t.Fatalf("half send: %d %s", r.Code, r.Remark)
		}
		_, phy, err := message.DecodeMessageID(r.ExtFields["msgId"])
		if err != nil {
			t.Fatal(err)
		}
		return r.ExtFields["queueOffset"], strconv.FormatInt(phy, 10)
	}
	born := clk.Now()
	half("TX-OPEN")
	q, p := half("TX-COMMITTED")
	endTx(t, master, q, p, txCommit, false)
	q, p = half("TX-ROLLED-BACK")
	endTx(t, master, q, p, txRollback, false)
	replicated(t, master, slave)
	prod := connectTxProducer(t, other, "PGA")

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() && slave.tx.Active() }, "the slave to act as master")

	// The slave's pass escapes the undecided half message only.
	passes := slave.tx.Stats().Passes
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.tx.Stats().Passes > passes }, "a check pass on the acting master")
	if st := slave.tx.Stats(); st.Escaped != 1 || st.Checks != 0 {
		t.Fatalf("acting master's check: %+v, want 1 escaped, no check of its own", st)
	}
	halves := uniqs(other, message.TopicTransHalf, 1)
	if len(halves) != 1 || halves["TX-OPEN"] != 1 {
		t.Fatalf("half messages on am-u: %v, want TX-OPEN once", halves)
	}
	if got := uniqs(other, "AMX", 2); len(got) != 0 {
		t.Fatalf("on AMX at am-u before any decision: %v", got)
	}

	// am-u checks it only once transactionTimeOut from its born time has
	// passed: not at its pass 20 s after the birth.
	clk.Advance(interval)
	time.Sleep(50 * time.Millisecond)
	if n := len(prod.received()); n != 0 {
		t.Fatalf("%d checks %v after the birth, within transactionTimeOut %v", n, clk.Now().Sub(born), timeout)
	}
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(prod.received()) == 1 }, "am-u's check of the escaped half message")
	check := prod.received()[0]
	if ext, _ := message.DecodeRecord(check.Body); ext == nil || ext.Properties[message.PropUniqKey] != "TX-OPEN" || ext.Topic != "AMX" {
		t.Fatalf("check about %v", ext)
	}
	endTx(t, other, check.ExtFields["tranStateTableOffset"], check.ExtFields["commitLogOffset"], txCommit, true)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(other, "AMX", 2)["TX-OPEN"] == 1 }, "the committed message on am-u")
	if got := uniqs(other, "AMX", 2); len(got) != 1 {
		t.Fatalf("on AMX at am-u: %v", got)
	}

	// The master comes back: the slave holds its check.
	back := startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() && !slave.tx.Active() }, "the slave to stop acting")
	_ = back
	before := slave.tx.Stats()
	clk.Advance(3 * interval)
	time.Sleep(50 * time.Millisecond)
	if st := slave.tx.Stats(); st.Passes != before.Passes || st.Escaped != before.Escaped {
		t.Fatalf("held check ran: %+v after %+v", st, before)
	}
}

// The master of an acting-master pair goes with two popped messages in
// flight, one of them acked. The slave follows the revive log and takes
// the revive over: its timer store delivers the trigger at popTime +
// invisibleTime (not a millisecond before), and the unacked message goes to
// the POP retry topic on the other group's master, where the group pops it
// again; the acked one never comes back. When the master is back the slave
// holds the revive.
func TestSlaveActingMasterTakesOverPopRevive(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	const invisible = 60 * time.Second
	master, slave, other := actingTrio(t, "am-p", "am-q", clk, nil)
	retry := pop.RetryTopic("AMP", "PCG")
	createTopic(t, master, "AMP", 1)
	for _, topic := range []string{"AMP", retry} {
		createTopic(t, other, topic, 1)
	}
	for _, u := range []string{"POP-ACKED", "POP-OPEN"} {
		master.mustSend(sendArgs{topic: "AMP", body: []byte(u), props: coreProps("UNIQ_KEY", u)})
	}
	master.waitDispatched()
	res, err := master.pop.Pop(pop.PopRequest{Group: "PCG", Topic: "AMP", QueueID: -1, MaxMsgs: 2, Invisible: invisible.Milliseconds()})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("pop: %v %+v", err, res)
	}
	for _, m := range res.Messages {
		if m.Ext.Properties[message.PropUniqKey] == "POP-ACKED" {
			if err := master.pop.Ack("PCG", "AMP", m.Handle); err != nil {
				t.Fatal(err)
			}
		}
	}
	popped := clk.Now()
	replicated(t, master, slave)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.pop.Stats().InFlight == 1 }, "the slave to follow the checkpoint and its ack")

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() && slave.pop.Active() }, "the slave to act as master")

	clk.Set(popped.Add(invisible - time.Millisecond))
	time.Sleep(50 * time.Millisecond) // a revive, were it early, has time to land
	if got := uniqs(other, retry, 1); len(got) != 0 {
		t.Fatalf("revived early: %v", got)
	}
	clk.Set(popped.Add(invisible))
	testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(other, retry, 1)["POP-OPEN"] == 1 }, "the revive on am-q's retry topic")
	if st := slave.pop.Stats(); st.Revived != 1 || st.InFlight != 0 {
		t.Fatalf("acting master's revive: %+v", st)
	}
	other.waitDispatched()
	again, err := other.pop.Pop(pop.PopRequest{Group: "PCG", Topic: "AMP", QueueID: -1, MaxMsgs: 2, Invisible: invisible.Milliseconds()})
	if err != nil || len(again.Messages) != 1 || again.Messages[0].Ext.Properties[message.PropUniqKey] != "POP-OPEN" || again.Messages[0].Ext.ReconsumeTimes != 1 {
		t.Fatalf("pop again on am-q: %v %+v", err, again)
	}
	if got := uniqs(other, retry, 1); len(got) != 1 {
		t.Fatalf("on %s at am-q: %v", retry, got)
	}

	back := startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() && !slave.pop.Active() }, "the slave to stop acting")
	_ = back
}
