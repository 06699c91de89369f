package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
)

// startActingNamesrv runs a name server with supportActingMaster and
// notifyMinBrokerIdChanged.
func startActingNamesrv(t *testing.T) *namesrv.Server {
	t.Helper()
	return startNamesrvWith(t, func(o *namesrv.Options) { o.SupportActingMaster, o.NotifyMinBrokerIDChanged = true, true })
}

// A master/slave pair in acting-master mode and a second group's master:
// the master stops, the name server tells the slave (905), the slave runs
// the delay levels and timers from its replicated store and sends what
// falls due to the other group's master (enableRemoteEscape), never
// early, each once; the master comes back and the slave holds them again.
func TestSlaveActingMasterTakesOverDelayAndTimer(t *testing.T) {
	ns := startActingNamesrv(t)
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	master, slave, other := actingTrio(t, ns, "am-a", "am-b", clk, nil)
	for _, tb := range []*testBroker{master, other} {
		createTopic(t, tb, "AMT", 2)
	}
	if slave.SpecialServicesRunning() {
		t.Fatal("a slave runs the special services while its master is alive")
	}

	due := clk.Now().Add(20 * time.Second).UnixMilli()
	master.mustSend(sendArgs{topic: "AMT", body: []byte("delayed"), props: coreProps("DELAY", "3", "UNIQ_KEY", "AM-D")}) // 10 s
	master.mustSend(sendArgs{topic: "AMT", body: []byte("timer"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due, 10), "UNIQ_KEY", "AM-T")})
	maxPhy := master.Store().MaxPhyOffset()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.Store().MaxPhyOffset() >= maxPhy }, "the slave to replicate")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.timers.Stats().Pending == 1 }, "the slave's wheel to hold the timer")

	// The master goes; the slave is told and takes over.
	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() && slave.MinBrokerIDInGroup() == 1 }, "the slave to act as master")
	if rd := ns.Routes().TopicRoute("AMT"); rd == nil || acting0(rd, "am-a") != slave.Addr() {
		t.Fatalf("route without master: %+v", rd)
	}

	onOther := func() map[string]int {
		got := map[string]int{}
		for q := int32(0); q < 2; q++ {
			for _, m := range other.messagesOn("AMT", q) {
				got[m.Properties["UNIQ_KEY"]]++
			}
		}
		return got
	}
	clk.Advance(10*time.Second - time.Millisecond)
	time.Sleep(50 * time.Millisecond) // a delivery, were it early, has time to land
	if got := onOther(); len(got) != 0 {
		t.Fatalf("delivered early: %v", got)
	}
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return onOther()["AM-D"] == 1 }, "the delay-level message escaped to am-b")
	clk.Advance(10*time.Second - 2*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if got := onOther(); got["AM-T"] != 0 {
		t.Fatalf("timer delivered early: %v", got)
	}
	clk.Advance(2 * time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return onOther()["AM-T"] == 1 }, "the timer message escaped to am-b")
	for _, m := range other.messagesOn("AMT", 0) {
		if m.Properties["DELAY"] != "" || m.Properties[message.PropTimerDeliverMs] != "" && m.StoreTimestamp < due {
			t.Fatalf("escaped message %v", m.Properties)
		}
	}
	if got := onOther(); got["AM-D"] != 1 || got["AM-T"] != 1 || len(got) != 2 {
		t.Fatalf("on am-b: %v", got)
	}

	// The master comes back: the slave holds its services again.
	back := startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() && slave.MinBrokerIDInGroup() == 0 }, "the slave to stop acting")
	if slave.MasterAddr() != back.Addr() {
		t.Fatalf("slave follows master %q, want %q", slave.MasterAddr(), back.Addr())
	}
}

// acting0 is the id-0 address of brokerName in a route.
func acting0(rd *remoting.TopicRouteData, brokerName string) string {
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs[0]
		}
	}
	return ""
}

// Without notifyMinBrokerIdChanged the slave learns the change from its
// member polls (901, or with compatibleWithOldNameSrv the route of its
// group's member topic); without enableRemoteEscape what falls due is not
// delivered anywhere and stays pending (stock SERVICE_NOT_AVAILABLE): its
// delay offset does not move. When the master is back the polls learn it
// without its HA address, which the slave asks the master for (906).
func TestSlaveActingMasterByMemberSyncWithoutEscape(t *testing.T) {
	for _, compat := range []bool{true, false} {
		t.Run("compatible="+strconv.FormatBool(compat), func(t *testing.T) { testActingByMemberSync(t, compat) })
	}
}

func testActingByMemberSync(t *testing.T, compat bool) {
	ns := startNamesrvWith(t, nil)
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	master, slave := startActingPair(t, actingOptions(ns.Addr(), "am-c", clk, func(o *Options) {
		o.CompatibleWithOldNameSrv = compat
		o.TransactionCheckInterval = 1000
	}))
	createTopic(t, master, "AMC", 1)
	master.mustSend(sendArgs{topic: "AMC", body: []byte("d"), props: coreProps("DELAY", "1")}) // 1 s
	master.mustSend(sendArgs{topic: "AMC", body: []byte("h"), sysFlag: message.TransactionPreparedType,
		props: coreProps("TRAN_MSG", "true", "PGROUP", "PGC", "UNIQ_KEY", "AMC-H")})
	maxPhy := master.Store().MaxPhyOffset()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.Store().MaxPhyOffset() >= maxPhy }, "the slave to replicate")

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() }, "the slave to act as master from its member polls")
	clk.Advance(2 * time.Second)
	time.Sleep(200 * time.Millisecond) // the level tries (and is refused) meanwhile
	if st := slave.sched.Stats(); st.Delivered != 0 || st.ToDLQ != 0 || st.DeadLettered != 0 {
		t.Fatalf("schedule stats %+v without a place to deliver", st)
	}
	if off := slave.sched.Offsets()[1]; off != 0 {
		t.Fatalf("delay offset of level 1 moved to %d without a place to deliver", off)
	}
	if n := len(slave.messagesOn("AMC", 0)); n != 0 {
		t.Fatalf("%d messages on the slave's own queue", n)
	}
	// The undecided half message is refused by the escape bridge too: the
	// walk stops at it, its progress stays (stock would skip it after 10
	// tries).
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.tx.Stats().Passes > 0 }, "a check pass on the acting master")
	if off, _ := slave.clients.Offsets.Query(message.GroupTransCheck, message.TopicTransHalf, 0); off != 0 || slave.tx.Stats().Escaped != 0 {
		t.Fatalf("half progress %d, %+v without a place to escape to", off, slave.tx.Stats())
	}

	// The master comes back; the polls carry no HA address: 906 asks it.
	slave.setHAMasterAddr("")
	back := startBrokerWith(t, master.opts, nil)
	want := back.haServerAddr(back.runtime())
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return !slave.SpecialServicesRunning() && slave.MinBrokerIDInGroup() == 0 && slave.HAMasterAddr() == want
	}, "the slave to stop acting and follow the master's HA address from 906")
}
