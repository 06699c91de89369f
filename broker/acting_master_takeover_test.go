package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
)

// actingOptions are the options of a broker of group in acting-master
// mode on the name server at ns, fast polls, its message clock clk; more
// adjusts them further.
func actingOptions(ns, group string, clk clock.Clock, more func(*Options)) func(*Options) {
	return func(o *Options) {
		o.NamesrvAddr = ns
		o.BrokerName = group
		o.MessageClock = clk
		o.SmallStore = true
		o.EnableSlaveActingMaster = true
		o.BrokerHeartbeatInterval = 50
		o.SyncBrokerMemberGroupPeriod = 50
		if more != nil {
			more(o)
		}
	}
}

// startActingPair starts a master with opts and its slave (id 1),
// replicating from it.
func startActingPair(t *testing.T, opts func(*Options)) (master, slave *testBroker) {
	t.Helper()
	master = startBroker(t, opts)
	slave = startBroker(t, func(o *Options) {
		opts(o)
		o.BrokerRole, o.BrokerID = RoleSlave, 1
		o.ListenPort = testutil.FreePortPair(t, master.opts.ListenPort)
		o.haReconnectDelay = 20 * time.Millisecond
	})
	slave.SetHAMasterAddress(master.HAAddr())
	return master, slave
}

// actingTrio starts, on the name server ns, a master and its slave (group
// name) in acting-master mode with remote escape, and the master of a
// second group (other), all on clk.
func actingTrio(t *testing.T, ns *namesrv.Server, name, other string, clk clock.Clock, mutate func(*Options)) (master, slave, second *testBroker) {
	t.Helper()
	escape := func(o *Options) {
		o.EnableRemoteEscape = true
		if mutate != nil {
			mutate(o)
		}
	}
	master, slave = startActingPair(t, actingOptions(ns.Addr(), name, clk, escape))
	second = startBroker(t, actingOptions(ns.Addr(), other, clk, escape))
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

// sendHalfBorn sends a half message of producer group PGA for topic to tb,
// born now on clk, and returns its queue offset and commitlog offset.
func sendHalfBorn(t *testing.T, tb *testBroker, clk clock.Clock, topic, uniq string) (queueOffset, phy string) {
	t.Helper()
	a := sendArgs{code: remoting.SendMessageV2, topic: topic, body: []byte(uniq), sysFlag: message.TransactionPreparedType,
		props: coreProps("TRAN_MSG", "true", "PGROUP", "PGA", "UNIQ_KEY", uniq)}
	ext := a.ext()
	ext["g"] = strconv.FormatInt(clk.Now().UnixMilli(), 10) // born on the test clock
	r := tb.invoke(a.code, ext, a.body)
	if r.Code != remoting.Success {
		t.Fatalf("half send: %d %s", r.Code, r.Remark)
	}
	_, p, err := message.DecodeMessageID(r.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	return r.ExtFields["queueOffset"], strconv.FormatInt(p, 10)
}

const (
	txCommit   int32 = 8  // MessageSysFlag.TRANSACTION_COMMIT_TYPE
	txRollback int32 = 12 // MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
)

// The master of an acting-master pair goes with half messages stored: one
// committed, one rolled back, one it checked (its check copy is in the
// replica too) and one younger than transactionTimeOut. The slave takes the
// transaction check over from its replicated store: it escapes each
// undecided chain once (the checked one by its latest copy), as a prepared
// message, to the other group's master, which checks each once its
// transactionTimeOut from the born time has passed (not before); the
// producer's COMMIT makes them consumable there, once each. The decided two
// are never walked again. When the master is back the slave holds the
// check: later passes escape nothing more.
func TestSlaveActingMasterTakesOverTransactionCheck(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	const interval, timeout = 10 * time.Second, 30 * time.Second
	master, slave, other := actingTrio(t, startActingNamesrv(t), "am-t", "am-u", clk, func(o *Options) {
		o.TransactionCheckInterval, o.TransactionTimeOut = interval.Milliseconds(), timeout.Milliseconds()
	})
	for _, tb := range []*testBroker{master, other} {
		createTopic(t, tb, "AMX", 2)
	}
	half := func(uniq string) (string, string) { return sendHalfBorn(t, master, clk, "AMX", uniq) }
	half("TX-OPEN")
	q, p := half("TX-COMMITTED")
	endTx(t, master, q, p, txCommit, false)
	q, p = half("TX-ROLLED-BACK")
	endTx(t, master, q, p, txRollback, false)
	// Three pass slots with the master alive: its third checks TX-OPEN
	// (no producer is connected to it: the check copy stays unanswered);
	// the slave's check is held, no pass runs there.
	for i := int64(1); i <= 3; i++ {
		clk.Advance(interval)
		testutil.WaitFor(t, coreTestTimeout, func() bool { return master.tx.Stats().Passes >= i }, "the master's check pass")
	}
	lateBorn := clk.Now()
	half("TX-LATE")
	replicated(t, master, slave)
	if st := slave.tx.Stats(); st.Passes != 0 || st.Escaped != 0 || slave.tx.Active() {
		t.Fatalf("a slave's check ran while its master is alive: %+v", st)
	}
	prod := brokertest.ConnectTxProducer(t, other.Addr(), "PGA", "acting")

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() && slave.tx.Active() }, "the slave to act as master")

	// The slave's pass escapes the two undecided chains, once each.
	passes := slave.tx.Stats().Passes
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.tx.Stats().Passes > passes }, "a check pass on the acting master")
	if st := slave.tx.Stats(); st.Escaped != 2 || st.Checks != 0 {
		t.Fatalf("acting master's check: %+v, want 2 escaped, no check of its own", st)
	}
	halves := uniqs(other, message.TopicTransHalf, 1)
	if len(halves) != 2 || halves["TX-OPEN"] != 1 || halves["TX-LATE"] != 1 {
		t.Fatalf("half messages on am-u: %v, want TX-OPEN and TX-LATE once", halves)
	}
	if got := uniqs(other, "AMX", 2); len(got) != 0 {
		t.Fatalf("on AMX at am-u before any decision: %v", got)
	}

	// checked finds am-u's checks about uniq.
	checked := func(uniq string) []*remoting.Command {
		var out []*remoting.Command
		for _, c := range prod.Received() {
			if ext, _ := message.DecodeRecord(c.Body); ext != nil && ext.Properties[message.PropUniqKey] == uniq && ext.Topic == "AMX" {
				out = append(out, c)
			}
		}
		return out
	}
	commit := func(uniq string) {
		t.Helper()
		c := checked(uniq)[0]
		endTx(t, other, c.ExtFields["tranStateTableOffset"], c.ExtFields["commitLogOffset"], txCommit, true)
		testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(other, "AMX", 2)[uniq] == 1 }, uniq+" committed on am-u")
	}
	// TX-OPEN is past its timeout: checked by am-u's next pass. TX-LATE,
	// 20 s old then, is not.
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(checked("TX-OPEN")) > 0 }, "am-u's check of TX-OPEN")
	time.Sleep(50 * time.Millisecond)
	if n := len(checked("TX-LATE")); n != 0 {
		t.Fatalf("TX-LATE checked %v after its birth, within transactionTimeOut %v", clk.Now().Sub(lateBorn), timeout)
	}
	commit("TX-OPEN")
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(checked("TX-LATE")) > 0 }, "am-u's check of TX-LATE at its timeout")
	commit("TX-LATE")
	if got := uniqs(other, "AMX", 2); len(got) != 2 || got["TX-OPEN"] != 1 || got["TX-LATE"] != 1 {
		t.Fatalf("on AMX at am-u: %v", got)
	}

	// The master comes back: the slave holds its check.
	startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() && !slave.tx.Active() }, "the slave to stop acting")
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
	master, slave, other := actingTrio(t, startActingNamesrv(t), "am-p", "am-q", clk, nil)
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
