package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// startRoleNamesrv runs a name server on a free loopback port.
func startRoleNamesrv(t *testing.T) *namesrv.Server {
	t.Helper()
	return startNamesrvWith(t, nil)
}

// startNamesrvWith is startRoleNamesrv with edit applied to the options.
func startNamesrvWith(t *testing.T, edit func(*namesrv.Options)) *namesrv.Server {
	t.Helper()
	o := namesrv.DefaultOptions()
	o.ListenHost = "127.0.0.1"
	o.ListenPort = testutil.FreePort(t)
	o.Logger = testlog.New(t)
	if edit != nil {
		edit(&o)
	}
	ns, err := namesrv.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// haFollows is the master address the slave's HA client follows.
func haFollows(tb *testBroker) string {
	st, ok := tb.HAClientStats()
	if !ok {
		return "(no HA client)"
	}
	return st.MasterAddr
}

// TestSlaveLearnsMasterFromRegistration: a slave registers with its
// brokerId, the name server answers the master's address and HA address,
// the slave keeps both (and hands the HA address to its HA client) unless
// haMasterAddress pins the latter; clients see both ids.
func TestSlaveLearnsMasterFromRegistration(t *testing.T) {
	ns := startRoleNamesrv(t)
	withNS := func(o *Options) { o.NamesrvAddr = ns.Addr(); o.BrokerName = "bn-a" }

	// A slave that starts first learns nothing yet.
	slave := startBroker(t, func(o *Options) { withNS(o); slaveOpts(o); o.BrokerIP2 = "127.0.0.9" })
	if slave.MasterAddr() != "" || slave.HAMasterAddr() != "" || haFollows(slave) != "" {
		t.Fatalf("learned %q %q %q with no master", slave.MasterAddr(), slave.HAMasterAddr(), haFollows(slave))
	}

	master := startBroker(t, func(o *Options) { withNS(o); o.BrokerIP2 = "127.0.0.1" })
	wantHA := "127.0.0.1:" + strconv.Itoa(master.opts.ListenPort+1)
	slave.registerAll(true) // the next periodic registration
	if slave.MasterAddr() != master.Addr() || slave.HAMasterAddr() != wantHA {
		t.Fatalf("learned master %q HA %q, want %q %q", slave.MasterAddr(), slave.HAMasterAddr(), master.Addr(), wantHA)
	}
	if got := haFollows(slave); got != wantHA {
		t.Fatalf("HA client follows %q", got)
	}
	// ... and replicates from there.
	sent := master.mustSend(sendArgs{topic: "LearnT", body: []byte("r")}).ExtFields["msgId"]
	testutil.WaitFor(t, 3*coreTestTimeout, func() bool {
		got := slave.messagesOn("LearnT", 0)
		return len(got) == 1 && got[0].MsgID == sent
	}, "the slave to replicate from the learned address")

	// A pinned HA address stays; the master address is still learned.
	const pin = "127.0.0.1:1"
	p := startBroker(t, func(o *Options) { withNS(o); o.BrokerRole, o.BrokerID, o.HaMasterAddress = RoleSlave, 2, pin })
	if p.HAMasterAddr() != pin || p.MasterAddr() != master.Addr() || haFollows(p) != pin {
		t.Fatalf("pinned slave: HA %q (client %q) master %q", p.HAMasterAddr(), haFollows(p), p.MasterAddr())
	}
	// A value shorter than 6 characters pins nothing (stock's length check).
	short := startBroker(t, func(o *Options) { withNS(o); o.BrokerRole, o.BrokerID, o.HaMasterAddress = RoleSlave, 3, "a:1" })
	if short.HAMasterAddr() != wantHA {
		t.Fatalf("short haMasterAddress: HA %q", short.HAMasterAddr())
	}

	// Clients see every id, on a topic route and in clusterList.
	want := map[int64]string{0: master.Addr(), 1: slave.Addr(), 2: p.Addr(), 3: short.Addr()}
	route := ns.Routes().TopicRoute(message.TopicAutoCreateKey)
	if route == nil || len(route.BrokerDatas) != 1 || !sameAddrs(route.BrokerDatas[0].BrokerAddrs, want) {
		t.Fatalf("route %+v", route)
	}
	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	resp, err := cli.InvokeTimeout(ns.Addr(), remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), coreTestTimeout)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("clusterList: %v %v", err, resp)
	}
	var ci remoting.ClusterInfo
	if err := remoting.UnmarshalBody(resp.Body, &ci); err != nil {
		t.Fatal(err)
	}
	if bd := ci.BrokerAddrTable["bn-a"]; bd == nil || !sameAddrs(bd.BrokerAddrs, want) {
		t.Fatalf("clusterList brokerAddrTable %+v", ci.BrokerAddrTable)
	}
}

func sameAddrs(got, want map[int64]string) bool {
	if len(got) != len(want) {
		return false
	}
	for id, a := range want {
		if got[id] != a {
			return false
		}
	}
	return true
}

// TestSlaveSynchronizeCopiesMasterMetadata: every round of the slave's
// clock (first after 3 s, then every 10 s) copies the master's topics,
// consumer offsets, delay offsets and subscription groups as
// SlaveSynchronize does (and the POP request modes, as 5.3.3), and the
// copies survive a restart of the slave.
func TestSlaveSynchronizeCopiesMasterMetadata(t *testing.T) {
	ns := startRoleNamesrv(t)
	master := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.Addr() })
	master.Topics().Update(&topicgroup.TopicConfig{TopicName: "SyncT", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	g := topicgroup.NewSubscriptionGroupConfig("SyncG")
	g.RetryMaxTimes = 5
	if err := master.clients.SubGroups.Update(g); err != nil {
		t.Fatal(err)
	}
	commit := func(tb *testBroker, topic, group string, q int32, off int64) {
		t.Helper()
		u := (&remoting.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q, CommitOffset: off}).Fields()
		if r := tb.invoke(remoting.UpdateConsumerOffset, u, nil); r.Code != remoting.Success {
			t.Fatalf("UPDATE_CONSUMER_OFFSET: code %d %q", r.Code, r.Remark)
		}
	}
	commit(master, "SyncT", "SyncG", 1, 7)
	popMode := pop.RequestMode{Topic: "SyncT", ConsumerGroup: "SyncG", Mode: pop.ModePop, PopShareQueueNum: 2}
	if err := master.pop.Modes().Set(popMode); err != nil {
		t.Fatal(err)
	}
	// A delay-level message delivered on the master moves level 1's offset.
	master.mustSend(sendArgs{topic: "SyncT", body: []byte("d"), props: coreProps("DELAY", "1")})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return master.sched.Offsets()[1] == 1 }, "the master's level 1 delivery")

	t0 := time.UnixMilli(1_700_000_000_000)
	clk := clock.NewManual(t0)
	slave := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.Addr(); slaveOpts(o); o.Clock = clk })
	if slave.MasterAddr() != master.Addr() {
		t.Fatalf("slave's master %q", slave.MasterAddr())
	}
	// What replication would have brought: the schedule queue's message,
	// which a restarted slave's level 1 offset must not pass (stock's
	// correctDelayOffset clamps it at start, as rmq's does).
	slave.asReplicated(func() { slave.mustSend(sendArgs{topic: "RepT", body: []byte("d"), props: coreProps("DELAY", "1")}) })
	commit(slave, "SyncT", "SyncG", 1, 99)  // overwritten by the master's (putAll)
	commit(slave, "Local", "LocalG", 0, 11) // a key the master lacks stays
	if slave.Topics().Has("SyncT") {
		t.Fatal("copied before the first round")
	}

	round := func(at time.Time, d time.Duration) {
		t.Helper()
		testutil.WaitFor(t, coreTestTimeout, func() bool { return clk.HasTimerAt(at) }, "the slave's next sync round")
		clk.Advance(d)
	}
	synced := func(tb *testBroker) func() bool {
		return func() bool {
			off, _ := tb.clients.Offsets.Query("SyncG", "SyncT", 1)
			cfg := tb.clients.SubGroups.Find("SyncG")
			return tb.Topics().Has("SyncT") && tb.Topics().DataVersion() == master.Topics().DataVersion() &&
				off == 7 && cfg != nil && cfg.RetryMaxTimes == 5 &&
				tb.clients.SubGroups.DataVersion() == master.clients.SubGroups.DataVersion() && tb.sched.Offsets()[1] == 1 &&
				tb.pop.Modes().Get("SyncT", "SyncG") == popMode
		}
	}
	round(t0.Add(slaveSyncFirst), slaveSyncFirst)
	testutil.WaitFor(t, coreTestTimeout, synced(slave), "the first sync round")
	if off, ok := slave.clients.Offsets.Query("LocalG", "Local", 0); !ok || off != 11 {
		t.Fatalf("the slave's own key: %d %v", off, ok)
	}
	b, err := os.ReadFile(filepath.Join(slave.opts.StorePathRootDir, "config", "delayOffset.json"))
	if err != nil || !strings.Contains(string(b), `"1":1`) {
		t.Fatalf("slave delayOffset.json %q %v", b, err)
	}

	// The next round, 10 s later, copies what changed since.
	master.Topics().Update(&topicgroup.TopicConfig{TopicName: "SyncT2", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	round(t0.Add(slaveSyncFirst+slaveSyncPeriod), slaveSyncPeriod)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.Topics().Has("SyncT2") }, "the second sync round")

	// Persisted: a restarted slave has the copies before any round.
	slave = slave.restart()
	if !synced(slave)() || !slave.Topics().Has("SyncT2") {
		t.Fatal("the copies did not survive the slave's restart")
	}
}

// TestSlaveRunsNoDeliveryServices: a slave delivers no delay-level or timer
// message and runs no transaction check; the same store started as a
// master resumes them.
func TestSlaveRunsNoDeliveryServices(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	clk := clock.NewManual(t0)
	slave := startBroker(t, func(o *Options) { slaveOpts(o); o.Clock = clk })
	slave.asReplicated(func() {
		slave.mustSend(sendArgs{topic: "DelT", body: []byte("d"), props: coreProps("DELAY", "1")})
		slave.mustSend(sendArgs{topic: "TimT", body: []byte("t"), props: coreProps(message.PropTimerDelaySec, "2")})
		slave.mustSend(sendArgs{topic: "TxT", body: []byte("h"), props: coreProps("TRAN_MSG", "true", "PGROUP", "PG"), sysFlag: message.TransactionPreparedType})
	})
	checking := func(tb *testBroker) bool { _, ok := tb.tx.NextCheck(); return ok }
	if slave.deliveryStarted.Load() || checking(slave) {
		t.Fatal("a delivery service runs on the slave")
	}
	clk.Advance(time.Minute)
	if len(slave.messagesOn("DelT", 0)) != 0 || len(slave.messagesOn("TimT", 0)) != 0 {
		t.Fatal("the slave delivered")
	}

	o := slave.opts
	slave.stop()
	o.BrokerRole, o.BrokerID = RoleAsyncMaster, 0
	master := startBrokerWith(t, o, nil)
	clk.Advance(time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return len(master.messagesOn("DelT", 0)) == 1 && len(master.messagesOn("TimT", 0)) == 1
	}, "the master to resume delay-level and timer delivery")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return checking(master) }, "the master's transaction check loop")
}

// TestMasterAnswersSlaveSynchronize holds rmq's answers to the four codes a
// Java 4.9.x slave's SlaveSynchronize sends to the stock body shapes
// (AdminBrokerProcessor): TopicConfigSerializeWrapper, ConsumerOffset
// wrapper, the delayOffset.json text with bare integer keys, and
// SubscriptionGroupWrapper.
func TestMasterAnswersSlaveSynchronize(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "ShapeT", body: []byte("x")})
	u := (&remoting.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "ShapeG", Topic: "ShapeT", QueueID: 0, CommitOffset: 1}).Fields()
	if r := tb.invoke(remoting.UpdateConsumerOffset, u, nil); r.Code != remoting.Success {
		t.Fatalf("UPDATE_CONSUMER_OFFSET: %d", r.Code)
	}
	keys := func(t *testing.T, raw []byte) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return m
	}
	exactly := func(t *testing.T, m map[string]json.RawMessage, want ...string) {
		t.Helper()
		if len(m) != len(want) {
			t.Fatalf("keys %v, want %v", m, want)
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Fatalf("no %q in %v", k, m)
			}
		}
	}
	for _, cli := range []*remoting.Client{tb.json, tb.bin} {
		r := tb.invokeWith(cli, remoting.GetAllTopicConfig, nil, nil)
		if r.Code != remoting.Success {
			t.Fatalf("21: %d", r.Code)
		}
		top := keys(t, r.Body)
		exactly(t, top, "topicConfigTable", "dataVersion")
		exactly(t, keys(t, top["dataVersion"]), "counter", "timestamp")
		tc := keys(t, keys(t, top["topicConfigTable"])["ShapeT"])
		exactly(t, tc, "topicName", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "topicSysFlag", "order")

		r = tb.invokeWith(cli, remoting.GetAllConsumerOffset, nil, nil)
		if r.Code != remoting.Success {
			t.Fatalf("43: %d", r.Code)
		}
		top = keys(t, r.Body)
		exactly(t, top, "offsetTable")
		if q := keys(t, top["offsetTable"])["ShapeT@ShapeG"]; string(q) != `{"0":1}` {
			t.Fatalf("43 offsetTable entry %s", q)
		}

		r = tb.invokeWith(cli, remoting.GetAllDelayOffset, nil, nil)
		if r.Code != remoting.Success || !strings.HasPrefix(string(r.Body), `{"offsetTable":{1:0,2:0,`) {
			t.Fatalf("45: %d %s", r.Code, r.Body)
		}

		r = tb.invokeWith(cli, remoting.GetAllSubscriptionGroupConfig, nil, nil)
		if r.Code != remoting.Success {
			t.Fatalf("201: %d", r.Code)
		}
		top = keys(t, r.Body)
		exactly(t, top, "subscriptionGroupTable", "dataVersion")
		if _, ok := keys(t, top["subscriptionGroupTable"])[message.GroupTools]; !ok {
			t.Fatal("201 without the built-in group")
		}
	}
}

// TestSlaveServesWhileMasterIsDown is the stock client's failover as the
// brokers see it: with the master gone, a consumer reads the slave (served
// although slaveReadEnable is off, suggesting the master) and commits its
// offsets there, which the slave keeps: the name server no longer names a
// master, so SlaveSynchronize copies nothing. Once the master is back the
// next round puts the master's offsets over them, as 4.9.8 does (#1094).
func TestSlaveServesWhileMasterIsDown(t *testing.T) {
	ns := startRoleNamesrv(t)
	master := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.Addr() })
	slave := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.Addr(); slaveOpts(o) })
	for i := range 3 {
		master.mustSend(sendArgs{topic: "DownT", body: []byte(strconv.Itoa(i))})
	}
	u := func(tb *testBroker, off int64) {
		t.Helper()
		h := (&remoting.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "DownG", Topic: "DownT", QueueID: 0, CommitOffset: off}).Fields()
		if r := tb.invoke(remoting.UpdateConsumerOffset, h, nil); r.Code != remoting.Success {
			t.Fatalf("UPDATE_CONSUMER_OFFSET: code %d %q", r.Code, r.Remark)
		}
	}
	u(master, 1)
	testutil.WaitFor(t, 3*coreTestTimeout, func() bool { return len(slave.messagesOn("DownT", 0)) == 3 }, "replication")
	slave.syncAll()
	if off, _ := slave.clients.Offsets.Query("DownG", "DownT", 0); off != 1 {
		t.Fatalf("slave offset %d before the master went down", off)
	}

	o := master.opts
	master.stop()
	slave.registerAll(true)
	if slave.MasterAddr() != "" {
		t.Fatalf("master %q still known", slave.MasterAddr())
	}
	r := slave.pull(pullArgs{group: "DownG", topic: "DownT", offset: 1, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"})
	if r.Code != remoting.Success || len(coreRecords(t, r.Body)) != 2 || coreExtInt(t, r, "suggestWhichBrokerId") != 0 {
		t.Fatalf("pull from the slave: code %d %q", r.Code, r.Remark)
	}
	u(slave, 3)
	slave.syncAll() // no master: nothing copied
	if off, _ := slave.clients.Offsets.Query("DownG", "DownT", 0); off != 3 {
		t.Fatalf("slave offset %d with the master down, want the committed 3", off)
	}

	master = startBrokerWith(t, o, nil)
	slave.registerAll(true)
	if slave.MasterAddr() != master.Addr() {
		t.Fatalf("master %q not learned again", slave.MasterAddr())
	}
	slave.syncAll()
	if off, _ := slave.clients.Offsets.Query("DownG", "DownT", 0); off != 1 {
		t.Fatalf("slave offset %d after the master returned, want the master's 1 (stock putAll)", off)
	}
}
