package broker

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// slaveOpts makes a SLAVE of brokerId 1.
func slaveOpts(o *Options) {
	o.BrokerRole = RoleSlave
	o.BrokerID = 1
}

// asReplicated runs fill with the slave's put refusal lifted: the messages
// it sends stand for what replication would have written.
func (tb *testBroker) asReplicated(fill func()) {
	tb.t.Helper()
	tb.Store().SetSlave(false)
	defer tb.Store().SetSlave(true)
	fill()
	tb.waitDispatched()
}

func TestSlaveOptionsNeedPositiveBrokerID(t *testing.T) {
	for _, c := range []struct {
		role string
		id   int64
		ok   bool
	}{
		{RoleSlave, 1, true}, {RoleSlave, 2, true}, {RoleSlave, 0, false}, {RoleSlave, -1, false},
		{RoleAsyncMaster, 0, true}, {RoleSyncMaster, 0, true}, {"MASTER", 0, false},
	} {
		o := DefaultOptions()
		o.BrokerRole, o.BrokerID = c.role, c.id
		err := o.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s brokerId %d: Validate %v, want ok=%v", c.role, c.id, err, c.ok)
		}
		if !c.ok && c.role == RoleSlave && (err == nil || !strings.Contains(err.Error(), "must be > 0")) {
			t.Errorf("%s brokerId %d: error %v does not say the id must be > 0", c.role, c.id, err)
		}
	}
}

// TestSlaveRefusesWrites: every request that would store a message gets
// what a 4.9.8 slave answers, on remoting and through the Go API the gRPC
// front end uses.
func TestSlaveRefusesWrites(t *testing.T) {
	tb := startBroker(t, slaveOpts)
	var msgID string
	tb.asReplicated(func() {
		msgID = tb.mustSend(sendArgs{topic: "SlaveT", body: []byte("m"), queueID: 0}).ExtFields["msgId"]
	})
	storeRemark := "service not available now. It may be caused by one of the following reasons: the broker's disk is full ["
	for _, c := range []struct {
		name   string
		resp   func() *remoting.Command
		code   int32
		remark string // prefix; "" must be empty
	}{
		{"SEND_MESSAGE", func() *remoting.Command {
			return tb.send(sendArgs{code: remoting.SendMessage, topic: "SlaveT", body: []byte("x")})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"SEND_MESSAGE_V2", func() *remoting.Command {
			return tb.send(sendArgs{code: remoting.SendMessageV2, topic: "SlaveT", body: []byte("x")})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"SEND_MESSAGE_V2 new topic", func() *remoting.Command {
			return tb.send(sendArgs{code: remoting.SendMessageV2, topic: "SlaveAuto", body: []byte("x")})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"SEND_MESSAGE_V2 delay", func() *remoting.Command {
			return tb.send(sendArgs{topic: "SlaveT", body: []byte("x"), props: coreProps("DELAY", "2")})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"SEND_MESSAGE_V2 half", func() *remoting.Command {
			return tb.send(sendArgs{topic: "SlaveT", body: []byte("x"), props: coreProps("TRAN_MSG", "true", "PGROUP", "PG"), sysFlag: message.TransactionPreparedType})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"SEND_BATCH_MESSAGE", func() *remoting.Command {
			body := coreBatchBody(message.BatchEntry{Body: []byte("a")}, message.BatchEntry{Body: []byte("b")})
			return tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "SlaveT", body: body, batch: true})
		}, remoting.ServiceNotAvailable, storeRemark},
		{"CONSUMER_SEND_MSG_BACK", func() *remoting.Command {
			return tb.sendBack(msgID, "SlaveG", 0, "")
		}, remoting.SystemError, "SERVICE_NOT_AVAILABLE"},
		{"END_TRANSACTION", func() *remoting.Command {
			return tb.invoke(remoting.EndTransaction, map[string]string{
				"producerGroup": "PG", "tranStateTableOffset": "0", "commitLogOffset": "0",
				"commitOrRollback": strconv.Itoa(int(message.TransactionCommitType)), "fromTransactionCheck": "false", "msgId": "U",
			}, nil)
		}, remoting.SlaveNotAvailable, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.resp()
			if r.Code != c.code {
				t.Fatalf("code %d %q, want %d", r.Code, r.Remark, c.code)
			}
			if c.remark == "" && r.Remark != "" || !strings.HasPrefix(r.Remark, c.remark) {
				t.Fatalf("remark %q, want prefix %q", r.Remark, c.remark)
			}
		})
	}
	// The Go API of the gRPC front end.
	_, err := tb.Put(PutRequest{Topic: "SlaveT", QueueID: -1, Body: []byte("g")})
	if pe := remoting.AsRefusal(err); pe == nil || pe.Code != remoting.ServiceNotAvailable || !strings.HasPrefix(pe.Remark, storeRemark) {
		t.Fatalf("Put: %v", err)
	}
	if r := remoting.AsRefusal(tb.Transactions().End("PG", 0, 0, true, false, "U")); r == nil || r.Code != remoting.SlaveNotAvailable {
		t.Fatalf("End: %v", r)
	}
	// Nothing was stored beyond the replicated message.
	if got := tb.messagesOn("SlaveT", 0); len(got) != 1 {
		t.Fatalf("SlaveT/0 holds %d messages", len(got))
	}
	if _, err := tb.Store().PutMessage(&message.Message{Topic: "SlaveT", Body: []byte("s")}); !errors.Is(err, store.ErrSlave) {
		t.Fatalf("store put: %v", err)
	}
}

// TestSlaveStoresCommittedOffsets: UPDATE_CONSUMER_OFFSET is stored on a
// slave (ConsumerManageProcessor has no role check; the Java client commits
// there while the master is down), a pull's commit offset is not.
func TestSlaveStoresCommittedOffsets(t *testing.T) {
	tb := startBroker(t, slaveOpts)
	tb.asReplicated(func() {
		for i := range 3 {
			tb.mustSend(sendArgs{topic: "OffT", body: []byte(strconv.Itoa(i))})
		}
	})
	query := func() string {
		r := tb.invoke(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "OffG", "topic": "OffT", "queueId": "0"}, nil)
		if r.Code != remoting.Success {
			return "code " + strconv.Itoa(int(r.Code))
		}
		return r.ExtFields["offset"]
	}
	pr := tb.pull(pullArgs{group: "OffG", topic: "OffT", maxMsgs: 1, sysFlag: pullFlagCommitOffset | pullFlagSubscription, commitOffset: 2, subscription: "*"})
	if pr.Code != remoting.Success {
		t.Fatalf("pull code %d %q", pr.Code, pr.Remark)
	}
	if got := query(); got == "2" {
		t.Fatal("the commit offset of a pull was stored on the slave")
	}
	u := (&remoting.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "OffG", Topic: "OffT", QueueID: 0, CommitOffset: 3}).Fields()
	if r := tb.invoke(remoting.UpdateConsumerOffset, u, nil); r.Code != remoting.Success {
		t.Fatalf("UPDATE_CONSUMER_OFFSET: code %d %q", r.Code, r.Remark)
	}
	if got := query(); got != "3" {
		t.Fatalf("offset after UPDATE_CONSUMER_OFFSET: %s", got)
	}
}

// TestPullSuggestsBroker is 4.9.8's PullMessageProcessor and getMessage on
// masters and slaves: suggestWhichBrokerId, the slave's uncorrected offsets
// and PULL_RETRY_IMMEDIATELY instead of PULL_OFFSET_MOVED.
func TestPullSuggestsBroker(t *testing.T) {
	type pullCase struct {
		name       string
		offset     int64
		code       int32
		suggest    int64
		nextBegin  int64
		withBodies int
	}
	for _, c := range []struct {
		name    string
		mutate  func(*Options)
		slowRAM bool // accessMessageInMemoryMaxRatio 0: every read but the newest is "slow"
		pulls   []pullCase
	}{
		{"master", nil, false, []pullCase{
			{"found", 0, remoting.Success, 0, 1, 1},
			{"overflow", 9, remoting.PullOffsetMoved, 0, 3, 0},
		}},
		{"master slow without slaveReadEnable", nil, true, []pullCase{
			{"found", 0, remoting.Success, 0, 1, 1},
		}},
		{"master slaveReadEnable", func(o *Options) { o.SlaveReadEnable = true }, false, []pullCase{
			{"found", 0, remoting.Success, 5, 1, 1}, // the group's brokerId
		}},
		{"master slaveReadEnable slow", func(o *Options) { o.SlaveReadEnable = true }, true, []pullCase{
			// With a window of 0 bytes every read is behind it (as stock:
			// the newest message ends after its start).
			{"found", 0, remoting.Success, 7, 1, 1}, // whichBrokerWhenConsumeSlowly
			{"found, the newest", 2, remoting.Success, 7, 3, 1},
		}},
		{"slave", slaveOpts, false, []pullCase{
			// 4.9.8's PULL_RETRY_IMMEDIATELY for a slave without
			// slaveReadEnable is overwritten by the status: served,
			// suggesting the master.
			{"found", 0, remoting.Success, 0, 1, 1},
			{"caught up", 3, remoting.PullNotFound, 0, 3, 0},
			{"overflow", 9, remoting.PullRetryImmediately, 5, 9, 0},
		}},
		{"slave slaveReadEnable", func(o *Options) { slaveOpts(o); o.SlaveReadEnable = true }, true, []pullCase{
			{"found", 0, remoting.Success, 7, 1, 1},
			{"overflow", 9, remoting.PullRetryImmediately, 5, 9, 0},
		}},
		{"slave slaveReadEnable in memory", func(o *Options) { slaveOpts(o); o.SlaveReadEnable = true }, false, []pullCase{
			{"found", 0, remoting.Success, 5, 1, 1},
		}},
		{"slave offsetCheckInSlave", func(o *Options) { slaveOpts(o); o.OffsetCheckInSlave = true }, false, []pullCase{
			{"overflow", 9, remoting.PullOffsetMoved, 0, 3, 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := startBroker(t, func(o *Options) {
				if c.mutate != nil {
					c.mutate(o)
				}
				if c.slowRAM {
					o.AccessMessageInMemoryMaxRatio = 0
				}
			})
			g := topicgroup.NewSubscriptionGroupConfig("SugG")
			g.BrokerID, g.WhichBrokerWhenConsumeSlowly = 5, 7
			if err := tb.clients.SubGroups.Update(g); err != nil {
				t.Fatal(err)
			}
			fill := func() {
				for i := range 3 {
					tb.mustSend(sendArgs{topic: "SugT", body: []byte(strconv.Itoa(i))})
				}
				tb.waitDispatched()
			}
			if tb.IsSlave() {
				tb.asReplicated(fill)
			} else {
				fill()
			}
			for _, p := range c.pulls {
				r := tb.pull(pullArgs{group: "SugG", topic: "SugT", offset: p.offset, maxMsgs: 1, sysFlag: pullFlagSubscription, subscription: "*"})
				if r.Code != p.code {
					t.Fatalf("%s: code %d %q, want %d", p.name, r.Code, r.Remark, p.code)
				}
				if got := coreExtInt(t, r, "suggestWhichBrokerId"); got != p.suggest {
					t.Errorf("%s: suggestWhichBrokerId %d, want %d", p.name, got, p.suggest)
				}
				if got := coreExtInt(t, r, "nextBeginOffset"); got != p.nextBegin {
					t.Errorf("%s: nextBeginOffset %d, want %d", p.name, got, p.nextBegin)
				}
				if got := len(coreRecords(t, r.Body)); got != p.withBodies {
					t.Errorf("%s: %d messages", p.name, got)
				}
			}
		})
	}
}

// TestSlaveReadEnableChangesLive: slaveReadEnable and offsetCheckInSlave
// take effect at the next pull after UPDATE_BROKER_CONFIG, as the stock
// processor reads them per request.
func TestSlaveReadEnableChangesLive(t *testing.T) {
	tb := startBroker(t, slaveOpts)
	g := topicgroup.NewSubscriptionGroupConfig("LiveG")
	g.BrokerID = 4
	if err := tb.clients.SubGroups.Update(g); err != nil {
		t.Fatal(err)
	}
	tb.asReplicated(func() { tb.mustSend(sendArgs{topic: "LiveT", body: []byte("x")}) })
	pull := func(offset int64) *remoting.Command {
		return tb.pull(pullArgs{group: "LiveG", topic: "LiveT", offset: offset, maxMsgs: 1, sysFlag: pullFlagSubscription, subscription: "*"})
	}
	if got := coreExtInt(t, pull(0), "suggestWhichBrokerId"); got != 0 {
		t.Fatalf("before the update: suggest %d", got)
	}
	if r := tb.pull(pullArgs{group: "LiveG", topic: "LiveT", offset: 5, sysFlag: pullFlagSubscription, subscription: "*"}); r.Code != remoting.PullRetryImmediately {
		t.Fatalf("before the update: out-of-range code %d", r.Code)
	}
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("slaveReadEnable=true\noffsetCheckInSlave=true\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	if got := coreExtInt(t, pull(0), "suggestWhichBrokerId"); got != 4 {
		t.Fatalf("after the update: suggest %d, want the group's brokerId 4", got)
	}
	if r := pull(5); r.Code != remoting.PullOffsetMoved || coreExtInt(t, r, "nextBeginOffset") != 1 {
		t.Fatalf("after the update: out-of-range code %d next %s", r.Code, r.ExtFields["nextBeginOffset"])
	}
}

// In controller mode brokerHeartbeatInterval is the replicas manager's
// heartbeat period to the controllers: zero or less would make that loop
// send heartbeats back to back (a timer of no time fires at once), so it
// is refused as acting-master mode refuses it.
func TestControllerModeNeedsPositiveHeartbeatInterval(t *testing.T) {
	for _, ms := range []int{0, -1, 1000} {
		o := DefaultOptions()
		o.BrokerRole, o.BrokerID = RoleSlave, -1
		o.EnableControllerMode, o.ControllerAddr = true, "127.0.0.1:9878"
		o.BrokerHeartbeatInterval = ms
		err := o.Validate()
		if (err == nil) != (ms > 0) {
			t.Fatalf("brokerHeartbeatInterval %d: Validate = %v", ms, err)
		}
		if err != nil && !strings.Contains(err.Error(), "brokerHeartbeatInterval") {
			t.Fatalf("brokerHeartbeatInterval %d: error does not name the key: %v", ms, err)
		}
	}
}
