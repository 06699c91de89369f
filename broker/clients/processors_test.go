package clients

import (
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

func decodeBody[T any](t *testing.T, resp *remoting.Command) *T {
	t.Helper()
	var v T
	if err := remoting.UnmarshalBody(resp.Body, &v); err != nil {
		t.Fatalf("bad body %q: %v", resp.Body, err)
	}
	return &v
}

func (tc *clTestClient) consumerList(group string) []string {
	resp := tc.invoke(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != remoting.Success {
		return nil
	}
	var body remoting.ConsumerListBody
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil {
		tc.env.t.Fatalf("consumer list body %q: %v", resp.Body, err)
	}
	return body.ConsumerIDList
}

func TestHeartbeatMembershipAndNotify(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a, b := env.client("A"), env.client("B")

	resp := a.heartbeat([]string{"G"}, "T")
	clExpectCode(t, resp, remoting.Success, "")
	if resp.Version != remoting.Version {
		t.Fatalf("heartbeat response version %d, want %d", resp.Version, remoting.Version)
	}
	if env.s.SubGroups.Find("G") == nil {
		t.Fatal("group config not auto-created")
	}
	retry := env.topics.Get("%RETRY%G")
	if retry == nil || retry.ReadQueueNums != 1 || retry.WriteQueueNums != 1 || retry.Perm != topicgroup.PermRead|topicgroup.PermWrite {
		t.Fatalf("retry topic = %+v, want 1 queue, perm 6", retry)
	}
	if env.topics.created != 1 {
		t.Fatalf("%d topics created through Topics, want the retry topic only", env.topics.created)
	}
	if got := a.consumerList("G"); !reflect.DeepEqual(got, []string{"A"}) {
		t.Fatalf("consumer list = %v, want [A]", got)
	}
	env.waitFor("A notified of its own join", func() bool { return clCount(a.notifications(), "G") == 1 })

	b.heartbeat([]string{"G"}, "T")
	env.waitFor("A and B notified of B's join", func() bool {
		return clCount(a.notifications(), "G") == 2 && clCount(b.notifications(), "G") == 1
	})
	if got := a.consumerList("G"); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Fatalf("consumer list = %v, want [A B]", got)
	}

	// A renewal changes nothing; B closing notifies A again. Had the renewal
	// notified, that notification would precede the one B's close causes.
	a.heartbeat([]string{"G"}, "T")
	b.cl.Close()
	env.waitFor("A notified of B's close", func() bool { return clCount(a.notifications(), "G") >= 3 })
	if n := clCount(a.notifications(), "G"); n != 3 {
		t.Fatalf("A got %d notifications, want 3 (join, join, close)", n)
	}
	env.waitFor("B dropped from the group", func() bool { return reflect.DeepEqual(a.consumerList("G"), []string{"A"}) })
}

func TestHeartbeatGoClientBody(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("go")
	// As the Go client sends it: codeSet elements as strings, nanosecond subVersion.
	body := `{"clientID":"10.0.0.1@1234","consumerDataSet":[{"groupName":"GG","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,` +
		`"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1700000000123456789,` +
		`"expressionType":"TAG"}],"unitMode":false}],"producerDataSet":[{"groupName":"PG"}]}`
	req := remoting.NewRequest(remoting.HeartBeat, nil, []byte(body))
	req.Version = 317
	clExpectCode(t, c.do(req), remoting.Success, "")

	got := env.s.Consumers.FindSubscription("GG", "T")
	if got == nil || !reflect.DeepEqual(got.CodeSet, []remoting.FlexInt64{97, 98}) || got.SubVersion != 1700000000123456789 {
		t.Fatalf("subscription = %+v", got)
	}
	resp := c.invoke(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "PG"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	pc := decodeBody[remoting.ProducerConnection](t, resp)
	if len(pc.ConnectionSet) != 1 {
		t.Fatalf("producer connections = %s", resp.Body)
	}
	conn := pc.ConnectionSet[0]
	if conn.ClientID != "10.0.0.1@1234" || conn.Language != "GO" || conn.Version != 317 || !strings.HasPrefix(conn.ClientAddr, "127.0.0.1:") {
		t.Fatalf("producer connection = %+v", conn)
	}
}

func TestHeartbeatBadBody(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("bad")
	for _, body := range [][]byte{nil, []byte("{"), []byte(`{"consumerDataSet":{}}`)} {
		if resp := c.invoke(remoting.HeartBeat, nil, body); resp.Code != remoting.SystemError {
			t.Fatalf("heartbeat body %q: code %d, want %d", body, resp.Code, remoting.SystemError)
		}
	}
}

func TestHeartbeatWithoutGroupConfig(t *testing.T) {
	// With auto-creation off an unknown group is still registered (as the
	// stock broker does) but gets no retry topic.
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: false})
	c := env.client("A")
	clExpectCode(t, c.heartbeat([]string{"G"}, "T"), remoting.Success, "")
	if env.topics.Get("%RETRY%G") != nil {
		t.Fatal("retry topic created for a group without config")
	}
	if got := c.consumerList("G"); !reflect.DeepEqual(got, []string{"A"}) {
		t.Fatalf("consumer list = %v", got)
	}
}

func TestNotifyDisabledByGroupConfig(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	quiet := env.client("admin")
	cfg := topicgroup.NewSubscriptionGroupConfig("quiet")
	cfg.NotifyConsumerIdsChangedEnable = false
	clExpectCode(t, quiet.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, remoting.MarshalBody(cfg)), remoting.Success, "")

	a, b := env.client("A"), env.client("B")
	a.heartbeat([]string{"quiet", "loud"}, "T")
	b.heartbeat([]string{"quiet", "loud"}, "T")
	env.waitFor("A notified for group loud twice", func() bool { return clCount(a.notifications(), "loud") == 2 })
	if n := clCount(a.notifications(), "quiet"); n != 0 {
		t.Fatalf("A got %d notifications for a group with notification off", n)
	}
}

// TestNotifyDisabledByBroker: the broker's notifyConsumerIdsChangedEnable
// gates every notification, read when one would be sent.
func TestNotifyDisabledByBroker(t *testing.T) {
	var on atomic.Bool
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true, notify: on.Load})
	a, b, c := env.client("A"), env.client("B"), env.client("C")
	a.heartbeat([]string{"G"}, "T")
	b.heartbeat([]string{"G"}, "T") // no notification: the broker's flag is off
	on.Store(true)
	c.heartbeat([]string{"G"}, "T")
	// A's notifications arrive in order on its connection: once C's join
	// is seen, one for B's would have been too.
	env.waitFor("A notified of C's join", func() bool { return clCount(a.notifications(), "G") >= 1 })
	if n := clCount(a.notifications(), "G"); n != 1 {
		t.Fatalf("A got %d notifications, want 1 (only after the flag was turned on)", n)
	}
}

// TestNotifyOnCloseIgnoresGroupFlag: a closed connection notifies its
// groups' other members even when the group's own flag is off, as stock
// ConsumerManager.doChannelCloseEvent (only the broker's flag gates it).
func TestNotifyOnCloseIgnoresGroupFlag(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	cfg := topicgroup.NewSubscriptionGroupConfig("quiet")
	cfg.NotifyConsumerIdsChangedEnable = false
	clExpectCode(t, env.client("admin").invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, remoting.MarshalBody(cfg)), remoting.Success, "")
	a, b := env.client("A"), env.client("B")
	a.heartbeat([]string{"quiet"}, "T")
	b.heartbeat([]string{"quiet"}, "T")
	b.cl.Close()
	env.waitFor("A notified of B's closed connection", func() bool { return clCount(a.notifications(), "quiet") == 1 })
}

func TestUnregisterClient(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a, b := env.client("A"), env.client("B")
	a.heartbeat([]string{"G"}, "T")
	hb := remoting.HeartbeatData{ClientID: "B", ConsumerDataSet: []*remoting.ConsumerData{clConsumerData("G", clSub("T", 1, "*"))},
		ProducerDataSet: []*remoting.ProducerData{{GroupName: "P"}}}
	b.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb))
	env.waitFor("A notified of B's join", func() bool { return clCount(a.notifications(), "G") == 2 })

	resp := b.invoke(remoting.UnregisterClient, map[string]string{"producerGroup": "P"}, nil)
	clExpectCode(t, resp, remoting.SystemError, "")
	if !strings.Contains(resp.Remark, "clientID") {
		t.Fatalf("missing clientID remark %q", resp.Remark)
	}

	clExpectCode(t, b.invoke(remoting.UnregisterClient, map[string]string{"clientID": "B", "producerGroup": "P", "consumerGroup": "G"}, nil), remoting.Success, "")
	env.waitFor("A notified of B's leave", func() bool { return clCount(a.notifications(), "G") == 3 })
	if got := a.consumerList("G"); !reflect.DeepEqual(got, []string{"A"}) {
		t.Fatalf("consumer list = %v, want [A]", got)
	}
	clExpectCode(t, b.invoke(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "P"}, nil),
		remoting.SystemError, "the producer group[P] not exist")
}

func TestConsumerListOfUnknownGroup(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("A")
	clExpectCode(t, c.invoke(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "nobody"}, nil),
		remoting.SystemError, "no consumer for this group, nobody")
	clExpectCode(t, c.invoke(remoting.GetConsumerListByGroup, nil, nil), remoting.SystemError, "")
}

func TestUpdateConsumerOffset(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("A")
	full := map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "3", "commitOffset": "42"}
	without := func(key string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			if k != key {
				m[k] = v
			}
		}
		return m
	}
	tests := []struct {
		name     string
		ext      map[string]string
		wantCode int32
	}{
		{name: "no group", ext: without("consumerGroup"), wantCode: remoting.SystemError},
		{name: "no topic", ext: without("topic"), wantCode: remoting.SystemError},
		{name: "no queue", ext: without("queueId"), wantCode: remoting.SystemError},
		{name: "no offset", ext: without("commitOffset"), wantCode: remoting.SystemError},
		{name: "offset not a number", ext: map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "3", "commitOffset": "x"}, wantCode: remoting.SystemError},
		{name: "complete", ext: full, wantCode: remoting.Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clExpectCode(t, c.invoke(remoting.UpdateConsumerOffset, tc.ext, nil), tc.wantCode, "")
		})
	}
	if off, ok := env.s.Offsets.Query("G", "T", 3); !ok || off != 42 {
		t.Fatalf("committed offset = %d, %v; want 42", off, ok)
	}
	// Java sends it oneway: no reply, but the offset is committed.
	req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "3", "commitOffset": "50"}, nil)
	if err := c.cl.Oneway(env.addr, req); err != nil {
		t.Fatal(err)
	}
	env.waitFor("oneway commit", func() bool { off, _ := env.s.Offsets.Query("G", "T", 3); return off == 50 })
}

func TestLockAndUnlockBatch(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("wire")
	mq := func(q int32) *remoting.MessageQueue {
		return &remoting.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: q}
	}
	lock := func(client string, qs ...int32) []int32 {
		body := remoting.LockBatchRequestBody{ClientID: client, ConsumerGroup: "G"}
		for _, q := range qs {
			body.MqSet = append(body.MqSet, mq(q))
		}
		resp := c.invoke(remoting.LockBatchMQ, nil, remoting.MarshalBody(&body))
		clExpectCode(t, resp, remoting.Success, "")
		if !strings.Contains(string(resp.Body), `"lockOKMQSet":[`) {
			t.Fatalf("lock response body %s lacks the lockOKMQSet array", resp.Body)
		}
		var got []int32
		for _, m := range decodeBody[remoting.LockBatchResponseBody](t, resp).LockOKMQSet {
			got = append(got, m.QueueID)
		}
		return got
	}
	if got := lock("A", 0, 1); !reflect.DeepEqual(got, []int32{0, 1}) {
		t.Fatalf("A locked %v", got)
	}
	if got := lock("B", 0, 2); !reflect.DeepEqual(got, []int32{2}) {
		t.Fatalf("B locked %v, want [2]", got)
	}
	unlock := remoting.LockBatchRequestBody{ClientID: "A", ConsumerGroup: "G", MqSet: []*remoting.MessageQueue{mq(0)}}
	clExpectCode(t, c.invoke(remoting.UnlockBatchMQ, nil, remoting.MarshalBody(&unlock)), remoting.Success, "")
	if got := lock("B", 0); !reflect.DeepEqual(got, []int32{0}) {
		t.Fatalf("B locked %v after A's unlock, want [0]", got)
	}
	if got := lock("B", 1); got != nil {
		t.Fatalf("B locked %v, A's lock on 1 is live", got)
	}
	env.clk.Advance(61 * time.Second)
	if got := lock("B", 1); !reflect.DeepEqual(got, []int32{1}) {
		t.Fatalf("B locked %v after A's lock lapsed, want [1]", got)
	}
	clExpectCode(t, c.invoke(remoting.LockBatchMQ, nil, []byte("{")), remoting.SystemError, "")
	clExpectCode(t, c.invoke(remoting.UnlockBatchMQ, nil, []byte("[")), remoting.SystemError, "")
}

func TestConnectionListRequests(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a := env.client("A")
	admin := env.client("admin")

	clExpectCode(t, admin.invoke(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "G"}, nil),
		remoting.ConsumerNotOnline, "the consumer group[G] not online")
	clExpectCode(t, admin.invoke(remoting.GetConsumerConnectionList, nil, nil), remoting.SystemError, "")
	clExpectCode(t, admin.invoke(remoting.GetProducerConnectionList, nil, nil), remoting.SystemError, "")

	a.heartbeat([]string{"G"}, "T", "%RETRY%G")
	resp := admin.invoke(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "G"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	cc := decodeBody[remoting.ConsumerConnection](t, resp)
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "A" || cc.ConnectionSet[0].Language != "GO" ||
		cc.ConnectionSet[0].Version != remoting.Version || !strings.HasPrefix(cc.ConnectionSet[0].ClientAddr, "127.0.0.1:") {
		t.Fatalf("connections = %s", resp.Body)
	}
	if cc.ConsumeType != "CONSUME_PASSIVELY" || cc.MessageModel != "CLUSTERING" || cc.ConsumeFromWhere != "CONSUME_FROM_LAST_OFFSET" {
		t.Fatalf("group info = %s", resp.Body)
	}
	if len(cc.SubscriptionTable) != 2 || cc.SubscriptionTable["%RETRY%G"] == nil || cc.SubscriptionTable["T"].SubString != "*" {
		t.Fatalf("subscriptions = %s", resp.Body)
	}
}

func TestSubscriptionGroupAdmin(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: false})
	admin := env.client("admin")

	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"G","retryMaxTimes":3}`)), remoting.Success, "")
	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"retryMaxTimes":3}`)), remoting.SystemError, "")
	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":`)), remoting.SystemError, "")
	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, nil), remoting.Success, "")

	resp := admin.invoke(remoting.GetAllSubscriptionGroupConfig, nil, nil)
	clExpectCode(t, resp, remoting.Success, "")
	w := decodeBody[remoting.SubscriptionGroupWrapper](t, resp)
	want := topicgroup.NewSubscriptionGroupConfig("G")
	want.RetryMaxTimes = 3
	if !reflect.DeepEqual(w.SubscriptionGroupTable["G"], want) || w.SubscriptionGroupTable["TOOLS_CONSUMER"] == nil {
		t.Fatalf("all groups = %s", resp.Body)
	}
	if w.DataVersion.Counter != 1 {
		t.Fatalf("data version %+v after one change", w.DataVersion)
	}

	env.s.Offsets.Commit("G", "T", 0, 5)
	env.s.Offsets.Commit("H", "T", 0, 6)
	clExpectCode(t, admin.invoke(remoting.DeleteSubscriptionGroup, nil, nil), remoting.SystemError, "")
	clExpectCode(t, admin.invoke(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "H"}, nil), remoting.Success, "")
	if _, ok := env.s.Offsets.Query("H", "T", 0); !ok {
		t.Fatal("offsets removed without removeOffset")
	}
	clExpectCode(t, admin.invoke(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "G", "removeOffset": "true"}, nil), remoting.Success, "")
	if env.s.SubGroups.Find("G") != nil {
		t.Fatal("group config not deleted")
	}
	if _, ok := env.s.Offsets.Query("G", "T", 0); ok {
		t.Fatal("offsets kept despite removeOffset=true")
	}

	reloaded, err := NewSubscriptionGroupManager(env.s.SubGroups.path, false, env.s.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.Find("G") != nil || reloaded.DataVersion().Counter != 2 {
		t.Fatalf("persisted state: G=%v version %+v", reloaded.Find("G"), reloaded.DataVersion())
	}
}

func TestQueryTopicConsumeByWhoAndAllOffsets(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a := env.client("A")
	a.heartbeat([]string{"online"}, "T")
	a.heartbeat([]string{"online", "other"}, "T", "U")
	env.s.Offsets.Commit("offline", "T", 0, 9)
	env.s.Offsets.Commit("online", "T", 1, 4)
	env.s.Offsets.Commit("elsewhere", "U", 0, 1)

	clExpectCode(t, a.invoke(remoting.QueryTopicConsumeByWho, nil, nil), remoting.SystemError, "")
	resp := a.invoke(remoting.QueryTopicConsumeByWho, map[string]string{"topic": "T"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	if got := decodeBody[remoting.GroupList](t, resp).GroupList; !reflect.DeepEqual(got, []string{"offline", "online", "other"}) {
		t.Fatalf("groups of T = %v", got)
	}

	resp = a.invoke(remoting.GetAllConsumerOffset, nil, nil)
	clExpectCode(t, resp, remoting.Success, "")
	const want = `{"offsetTable":{"T@offline":{"0":9},"T@online":{"1":4},"U@elsewhere":{"0":1}}}`
	if string(resp.Body) != want {
		t.Fatalf("all offsets = %s, want %s", resp.Body, want)
	}
}

func TestConsumerCallForwarding(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	consumer, admin := env.client("A"), env.client("admin")
	consumer.answer = func(req *remoting.Command) *remoting.Command {
		if req.Code != remoting.GetConsumerRunningInfo || req.ExtFields["jstackEnable"] != "true" {
			return remoting.NewResponse(req, remoting.SystemError, "unexpected forward")
		}
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"properties":{"consumeType":"CONSUME_PASSIVELY"}}`)
		return resp
	}
	consumer.heartbeat([]string{"G"}, "T")
	lowVersion := remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&remoting.HeartbeatData{
		ClientID: "ancient", ConsumerDataSet: []*remoting.ConsumerData{clConsumerData("G", clSub("T", 1, "*"))}}))
	lowVersion.Version = 10
	env.client("ancient").do(lowVersion)

	ask := func(clientID string) *remoting.Command {
		return admin.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "G", "clientId": clientID, "jstackEnable": "true"}, nil)
	}
	resp := ask("A")
	clExpectCode(t, resp, remoting.Success, "")
	if string(resp.Body) != `{"properties":{"consumeType":"CONSUME_PASSIVELY"}}` {
		t.Fatalf("relayed body %q", resp.Body)
	}
	clExpectCode(t, ask("nobody"), remoting.SystemError, "The Consumer <G> <nobody> not online")
	if resp := ask("ancient"); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "too low") {
		t.Fatalf("old client: %d %q", resp.Code, resp.Remark)
	}
	clExpectCode(t, admin.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "G"}, nil), remoting.SystemError, "")

	consumer.mu.Lock()
	consumer.answer = func(*remoting.Command) *remoting.Command { return nil } // never replies
	consumer.mu.Unlock()
	env.s.callTimeout.Store(int64(200 * time.Millisecond))
	if resp := ask("A"); resp.Code != codeConsumeMsgTimeout {
		t.Fatalf("silent client: code %d %q, want %d", resp.Code, resp.Remark, codeConsumeMsgTimeout)
	}
}

func TestClientExpiryScan(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a, b := env.client("A"), env.client("B")
	a.heartbeat([]string{"G"}, "T")
	hb := remoting.HeartbeatData{ClientID: "B", ConsumerDataSet: []*remoting.ConsumerData{clConsumerData("G", clSub("T", 1, "*"))},
		ProducerDataSet: []*remoting.ProducerData{{GroupName: "P"}}}
	b.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb))
	env.waitFor("A notified of B's join", func() bool { return clCount(a.notifications(), "G") == 2 })
	bChan, ok := env.s.Consumers.FindChannel("G", "B")
	if !ok {
		t.Fatal("B not registered")
	}

	env.clk.Advance(100 * time.Second)
	a.heartbeat([]string{"G"}, "T")
	env.clk.Advance(20 * time.Second)
	env.s.scanClients()
	if got := a.consumerList("G"); len(got) != 2 {
		t.Fatalf("consumers after 120 s = %v, B must still be alive", got)
	}

	env.clk.Advance(time.Second)
	env.s.scanClients()
	if got := env.s.Consumers.ClientIDs("G"); !reflect.DeepEqual(got, []string{"A"}) {
		t.Fatalf("consumers after expiry = %v, want [A]", got)
	}
	if _, ok := env.s.Producers.Connection("P"); ok {
		t.Fatal("expired producer still listed")
	}
	env.waitFor("B's connection closed", bChan.Conn.Closed)
	env.waitFor("A notified of B's expiry", func() bool { return clCount(a.notifications(), "G") == 3 })
}

func TestClientHousekeepingLoop(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	a := env.client("A")
	a.heartbeat([]string{"G"}, "T")
	ch, ok := env.s.Consumers.FindChannel("G", "A")
	if !ok {
		t.Fatal("A not registered")
	}
	stop := make(chan struct{})
	created := env.clk.TimerCreated()
	done := make(chan struct{})
	go func() { env.s.Housekeep(stop); close(done) }()
	select {
	case <-created:
	case <-time.After(5 * time.Second):
		t.Fatal("housekeeping never armed its timer")
	}
	env.clk.Advance(channelExpiredTimeout + clientScanInterval)
	env.waitFor("A's idle connection closed by the scan", ch.Conn.Closed)
	if len(env.s.Consumers.Groups()) != 0 {
		t.Fatalf("groups left after expiry: %v", env.s.Consumers.Groups())
	}

	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("housekeeping loop did not stop")
	}
}

func TestCheckClientConfig(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("A")
	tests := []struct {
		name       string
		body       string
		wantCode   int32
		wantRemark string
	}{
		{name: "tag expression", body: `{"clientId":"A","group":"G","subscriptionData":{"expressionType":"TAG","subString":"a||b","topic":"T"}}`, wantCode: remoting.Success},
		{name: "no expression type", body: `{"clientId":"A","group":"G","subscriptionData":{"subString":"*","topic":"T"}}`, wantCode: remoting.Success},
		{name: "no subscription", body: `{"clientId":"A","group":"G"}`, wantCode: remoting.Success},
		{name: "sql92", body: `{"clientId":"A","group":"G","subscriptionData":{"expressionType":"SQL92","subString":"a > 1","topic":"T"}}`,
			wantCode: remoting.SystemError, wantRemark: "The broker does not support consumer to filter message by SQL92"},
		{name: "broken body", body: `{"subscriptionData":`, wantCode: remoting.SystemError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clExpectCode(t, c.invoke(remoting.CheckClientConfig, nil, []byte(tc.body)), tc.wantCode, tc.wantRemark)
		})
	}
}

func TestGetSubscriptionGroupConfig(t *testing.T) {
	tests := []struct {
		name       string
		autoCreate bool
		ext        map[string]string
		wantCode   int32
	}{
		{name: "built-in group", ext: map[string]string{"group": "TOOLS_CONSUMER"}, wantCode: remoting.Success},
		{name: "auto-created group", autoCreate: true, ext: map[string]string{"group": "G"}, wantCode: remoting.Success},
		{name: "unknown group", ext: map[string]string{"group": "G"}, wantCode: remoting.SubscriptionGroupNotExist},
		{name: "no group header", ext: nil, wantCode: remoting.SystemError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: tc.autoCreate})
			resp := env.client("admin").invoke(remoting.GetSubscriptionGroupConfig, tc.ext, nil)
			clExpectCode(t, resp, tc.wantCode, "")
			if tc.wantCode != remoting.Success {
				return
			}
			if got := decodeBody[topicgroup.SubscriptionGroupConfig](t, resp); !reflect.DeepEqual(got, topicgroup.NewSubscriptionGroupConfig(tc.ext["group"])) {
				t.Fatalf("config = %s", resp.Body)
			}
		})
	}
}

// TestAvailableConnRotates: transaction checks go to the producers of a
// group in turn.
func TestAvailableConnRotates(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	for _, id := range []string{"A", "B"} {
		hb := remoting.HeartbeatData{ClientID: id, ProducerDataSet: []*remoting.ProducerData{{GroupName: "P"}}}
		clExpectCode(t, env.client(id).invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), remoting.Success, "")
	}
	var got []*remoting.Conn
	for range 4 {
		got = append(got, env.s.Producers.AvailableConn("P"))
	}
	if got[0] == nil || got[1] == nil || got[0] == got[1] || got[2] != got[0] || got[3] != got[1] {
		t.Fatalf("AvailableConn picked %v, want the two producers alternating", got)
	}
}
