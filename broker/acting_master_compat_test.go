package broker

import (
	"strconv"
	"testing"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// With compatibleWithOldNameSrv (the default, as stock) an acting-master
// broker heartbeats with QUERY_DATA_VERSION carrying its topic table's
// dataVersion and reads its group from the route of
// rmq_sys_SYNC_BROKER_MEMBER_<brokerName>, a topic it creates (perm
// INHERIT, 1/1 queues); set to false it sends 904 and 901.
func TestActingMasterCompatibleWithOldNameSrv(t *testing.T) {
	for _, compat := range []bool{true, false} {
		t.Run("compatible="+strconv.FormatBool(compat), func(t *testing.T) {
			ns := startFakeNamesrv(t)
			tb := startBroker(t, func(o *Options) {
				o.NamesrvAddr = ns.addr
				o.BrokerName = "am-compat"
				o.BrokerRole, o.BrokerID = RoleSlave, 1
				o.EnableSlaveActingMaster = true
				o.CompatibleWithOldNameSrv = compat
				o.BrokerHeartbeatInterval = 20
				o.SyncBrokerMemberGroupPeriod = 20
			})
			if !DefaultOptions().CompatibleWithOldNameSrv {
				t.Fatal("compatibleWithOldNameSrv defaults to false")
			}
			topic := topicgroup.SyncBrokerMemberTopicPrefix + "am-compat"
			if tc := tb.topics.Get(topic); tc == nil || tc.Perm != topicgroup.PermInherit || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 {
				t.Fatalf("%s: %+v", topic, tc)
			}
			heartbeat, members := remoting.BrokerHeartbeat, remoting.GetBrokerMemberGroup
			if compat {
				heartbeat, members = remoting.QueryDataVersion, remoting.GetRouteinfoByTopic
			}
			testutil.WaitFor(t, coreTestTimeout, func() bool {
				return len(ns.requests(heartbeat)) >= 2 && len(ns.requests(members)) >= 2
			}, "heartbeats and member reads")
			for _, code := range []int32{remoting.BrokerHeartbeat, remoting.GetBrokerMemberGroup, remoting.QueryDataVersion, remoting.GetRouteinfoByTopic} {
				if code != heartbeat && code != members && len(ns.requests(code)) != 0 {
					t.Fatalf("sent request code %d", code)
				}
			}
			hb := ns.requests(heartbeat)[0]
			if compat {
				var dv remoting.DataVersion
				if err := fastjson.Unmarshal(hb.Body, &dv); err != nil || dv != tb.topics.DataVersion() {
					t.Fatalf("QUERY_DATA_VERSION body %s (%v), want %+v", hb.Body, err, tb.topics.DataVersion())
				}
				if hb.ExtFields["brokerId"] != "1" || hb.ExtFields["brokerName"] != "am-compat" || hb.ExtFields["brokerAddr"] != tb.Addr() {
					t.Fatalf("QUERY_DATA_VERSION header %v", hb.ExtFields)
				}
				if q := ns.requests(members)[0].ExtFields["topic"]; q != topic {
					t.Fatalf("member read asks the route of %q", q)
				}
			}
		})
	}
}

// EXCHANGE_BROKER_HA_INFO (906): a master answers a request without
// masterHaAddress with its HA address, listen address and the commitlog's
// end at its start; a slave takes a request with masterHaAddress as its
// master, and answers one without it with no fields.
func TestExchangeBrokerHAInfo(t *testing.T) {
	master := startBroker(t, nil)
	master.mustSend(sendArgs{topic: "TBW102X", body: []byte("x")})
	r := master.invoke(remoting.ExchangeBrokerHAInfo, nil, nil)
	if r.Code != remoting.Success || r.ExtFields["masterHaAddress"] != master.haServerAddr(master.runtime()) ||
		r.ExtFields["masterAddress"] != master.Addr() || r.ExtFields["masterFlushOffset"] != "0" {
		t.Fatalf("master's answer %d %v (HA %s)", r.Code, r.ExtFields, master.haServerAddr(master.runtime()))
	}
	slave := startBroker(t, func(o *Options) { o.BrokerRole, o.BrokerID = RoleSlave, 1 })
	if r := slave.invoke(remoting.ExchangeBrokerHAInfo, nil, nil); r.Code != remoting.Success || len(r.ExtFields) != 0 {
		t.Fatalf("slave's answer %d %v", r.Code, r.ExtFields)
	}
	set := (&remoting.ExchangeHAInfoHeader{MasterHAAddress: master.HAAddr(), MasterAddress: master.Addr()}).Fields()
	if r := slave.invoke(remoting.ExchangeBrokerHAInfo, set, nil); r.Code != remoting.Success {
		t.Fatalf("set: %d %s", r.Code, r.Remark)
	}
	if slave.HAMasterAddr() != master.HAAddr() || slave.MasterAddr() != master.Addr() {
		t.Fatalf("slave follows %q / %q", slave.HAMasterAddr(), slave.MasterAddr())
	}
	master.mustSend(sendArgs{topic: "TBW102X", body: []byte("y")})
	maxPhy := master.Store().MaxPhyOffset()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.Store().MaxPhyOffset() >= maxPhy }, "the slave to replicate from the master 906 named")
	// A master ignores a request that names a master.
	if r := master.invoke(remoting.ExchangeBrokerHAInfo, set, nil); r.Code != remoting.Success || len(r.ExtFields) != 0 {
		t.Fatalf("master's answer to a set %d %v", r.Code, r.ExtFields)
	}
}
