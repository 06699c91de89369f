package admin

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

func TestResponseErrorNamesPeerCodeAndRemark(t *testing.T) {
	b := startPeer(t)
	a := newTestAdmin(t)
	_, err := a.GetBrokerConfig(testCtx(t), b.addr)
	var re *ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *ResponseError", err)
	}
	if re.Addr != b.addr || re.Code != remoting.RequestCodeNotSupported || re.Request != remoting.GetBrokerConfig || re.Remark != " request type 26 not supported" {
		t.Errorf("ResponseError = %+v", re)
	}
	want := fmt.Sprintf("broker %s answered GET_BROKER_CONFIG(26) with CODE 3 (REQUEST_CODE_NOT_SUPPORTED) DESC:  request type 26 not supported", b.addr)
	if err.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), want)
	}
	if CodeOf(err) != 3 || CodeOf(errors.New("x")) != -1 {
		t.Errorf("CodeOf mismatch")
	}
}

func TestTransportErrorNamesPeer(t *testing.T) {
	dead := testutil.FreeAddr(t)
	a := newTestAdmin(t)
	_, err := a.BrokerRuntimeInfo(testCtx(t), dead)
	var te *TransportError
	if !errors.As(err, &te) || te.Addr != dead || !strings.Contains(err.Error(), "broker "+dead) {
		t.Fatalf("err = %v, want a TransportError naming %s", err, dead)
	}
}

func TestNamesrvFailover(t *testing.T) {
	ns := startPeer(t)
	ns.reply(remoting.GetAllTopicListFromNameserver, remoting.Success, "", nil, []byte(`{"topicList":["A","B"]}`))
	dead := testutil.FreeAddr(t)
	a := newTestAdmin(t, dead, ns.addr)
	got, err := a.TopicList(testCtx(t))
	if err != nil || !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Fatalf("TopicList = %v, %v", got, err)
	}
	if _, err := newTestAdmin(t).TopicList(testCtx(t)); !errors.Is(err, ErrNoNamesrv) {
		t.Errorf("no name server: err = %v", err)
	}
	// A name server that answers with an error code is not skipped.
	ns.reply(remoting.GetAllTopicListFromNameserver, remoting.SystemError, "boom", nil, nil)
	other := startPeer(t)
	other.reply(remoting.GetAllTopicListFromNameserver, remoting.Success, "", nil, []byte(`{"topicList":[]}`))
	if _, err := newTestAdmin(t, ns.addr, other.addr).TopicList(testCtx(t)); CodeOf(err) != remoting.SystemError {
		t.Errorf("error answer: err = %v, want code 1 from the first name server", err)
	}
}

func TestTopicStatusReadsFastjsonKeys(t *testing.T) {
	ns, b := startPeer(t), startPeer(t)
	ns.reply(remoting.GetRouteinfoByTopic, remoting.Success, "", nil, routeBody("broker-a", b.addr, 2))
	b.reply(remoting.GetTopicStatsInfo, remoting.Success, "", nil, []byte(
		`{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":4,"minOffset":1},`+
			`{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":9,"minOffset":0}}}`))
	a := newTestAdmin(t, ns.addr)
	rows, err := a.TopicStatus(testCtx(t), "T")
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueStats{
		{remoting.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "T"}, TopicOffset{MinOffset: 0, MaxOffset: 9, LastUpdateTimestamp: 1700000000000}},
		{remoting.MessageQueue{BrokerName: "broker-a", QueueID: 1, Topic: "T"}, TopicOffset{MinOffset: 1, MaxOffset: 4}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("TopicStatus = %+v\nwant %+v", rows, want)
	}
	if r := b.requests(remoting.GetTopicStatsInfo); len(r) != 1 || r[0].ExtFields["topic"] != "T" {
		t.Errorf("stats requests = %v", r)
	}
	b.reply(remoting.GetTopicStatsInfo, remoting.Success, "", nil, []byte(`{"offsetTable":{}}`))
	if _, err := a.TopicStatus(testCtx(t), "T"); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty table: err = %v, want ErrNotFound", err)
	}
}

func TestConsumeStatsMergesBrokers(t *testing.T) {
	ns, b1, b2 := startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetRouteinfoByTopic, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerDatas":[{"brokerAddrs":{"0":%q},"brokerName":"b2","cluster":"C"},{"brokerAddrs":{"0":%q},"brokerName":"b1","cluster":"C"}],"queueDatas":[]}`, b2.addr, b1.addr)))
	b1.reply(remoting.GetConsumeStats, remoting.Success, "", nil, []byte(`{"consumeTps":1.5,"offsetTable":{{"brokerName":"b1","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":5}}}`))
	b2.reply(remoting.GetConsumeStats, remoting.Success, "", nil, []byte(`{"consumeTps":2.0,"offsetTable":{{"brokerName":"b2","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0}}}`))
	cs, err := newTestAdmin(t, ns.addr).ConsumeStats(testCtx(t), "G", "")
	if err != nil {
		t.Fatal(err)
	}
	if cs.ConsumeTps != 3.5 || cs.DiffTotal != 3 || len(cs.Queues) != 2 || cs.Queues[0].BrokerName != "b1" || cs.Queues[0].Diff != 3 {
		t.Errorf("ConsumeStats = %+v", cs)
	}
	if r := ns.requests(remoting.GetRouteinfoByTopic); len(r) != 1 || r[0].ExtFields["topic"] != "%RETRY%G" {
		t.Errorf("route request = %v", r)
	}
	if r := b1.requests(remoting.GetConsumeStats); len(r) != 1 || r[0].ExtFields["consumerGroup"] != "G" {
		t.Errorf("stats request = %v", r)
	}
}

func TestSendMessageRetriesOnAnotherBroker(t *testing.T) {
	ns, ba, bb := startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetRouteinfoByTopic, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerDatas":[{"brokerAddrs":{"0":%q},"brokerName":"a","cluster":"C"},{"brokerAddrs":{"0":%q},"brokerName":"b","cluster":"C"}],`+
			`"queueDatas":[{"brokerName":"a","perm":6,"readQueueNums":1,"writeQueueNums":1},{"brokerName":"b","perm":6,"readQueueNums":1,"writeQueueNums":1}]}`, ba.addr, bb.addr)))
	ba.reply(remoting.SendMessageV2, remoting.ServiceNotAvailable, "busy", nil, nil)
	bb.reply(remoting.SendMessageV2, remoting.Success, "", map[string]string{"msgId": "OFFSETID", "queueId": "0", "queueOffset": "41"}, nil)
	a := newTestAdmin(t, ns.addr)
	// Whichever broker is tried first, the send ends on b: a fails with a
	// retryable code, and a retry goes to the other broker.
	for range 4 {
		res, err := a.SendMessage(testCtx(t), SendMessageSpec{Topic: "T", Body: []byte("hi"), Tags: "TagA", Keys: "k1", QueueID: -1})
		if err != nil {
			t.Fatal(err)
		}
		if res.BrokerName != "b" || res.OffsetMsgID != "OFFSETID" || res.QueueOffset != 41 || res.Status != "SEND_OK" || len(res.MsgID) != 32 {
			t.Errorf("SendResult = %+v", res)
		}
	}
	reqs := bb.requests(remoting.SendMessageV2)
	if len(reqs) != 4 {
		t.Fatalf("b saw %d sends", len(reqs))
	}
	props := message.ParseProperties(reqs[0].ExtFields["i"])
	if props["TAGS"] != "TagA" || props["KEYS"] != "k1" || props["WAIT"] != "true" || len(props["UNIQ_KEY"]) != 32 || string(reqs[0].Body) != "hi" || reqs[0].ExtFields["b"] != "T" {
		t.Errorf("send request = %v body %q", reqs[0].ExtFields, reqs[0].Body)
	}
	// A non-retryable code is returned at once.
	bb.reply(remoting.SendMessageV2, remoting.MessageIllegal, "too big", nil, nil)
	ba.reply(remoting.SendMessageV2, remoting.MessageIllegal, "too big", nil, nil)
	before := len(ba.requests(remoting.SendMessageV2)) + len(bb.requests(remoting.SendMessageV2))
	_, err := a.SendMessage(testCtx(t), SendMessageSpec{Topic: "T", Body: []byte("x"), QueueID: -1})
	after := len(ba.requests(remoting.SendMessageV2)) + len(bb.requests(remoting.SendMessageV2))
	if CodeOf(err) != remoting.MessageIllegal || after-before != 1 {
		t.Errorf("err = %v after %d attempts, want code 13 after 1", err, after-before)
	}
}

func TestSendMessageUsesTBW102ForUnknownTopic(t *testing.T) {
	ns, b := startPeer(t), startPeer(t)
	ns.handle(remoting.GetRouteinfoByTopic, func(r *remoting.Command) *remoting.Command {
		if r.ExtFields["topic"] == message.TopicAutoCreateKey {
			resp := remoting.NewResponse(r, remoting.Success, "")
			resp.Body = routeBody("broker-a", b.addr, 8)
			return resp
		}
		return remoting.NewResponse(r, remoting.TopicNotExist, "No topic route info in name server for the topic: "+r.ExtFields["topic"])
	})
	b.reply(remoting.SendMessageV2, remoting.Success, "", map[string]string{"msgId": "X", "queueId": "2", "queueOffset": "0"}, nil)
	a := newTestAdmin(t, ns.addr)
	for range 8 {
		if _, err := a.SendMessage(testCtx(t), SendMessageSpec{Topic: "NEW", Body: []byte("x"), QueueID: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range b.requests(remoting.SendMessageV2) {
		if r.ExtFields["b"] != "NEW" || r.ExtFields["c"] != "TBW102" || r.ExtFields["e"] >= "4" {
			t.Errorf("send to TBW102 queues: %v (queue must be < 4)", r.ExtFields)
		}
	}
	if _, err := a.SendMessage(testCtx(t), SendMessageSpec{Topic: "NEW", Body: []byte("x"), BrokerName: "broker-a", QueueID: 9}); !errors.Is(err, ErrNoRoute) {
		t.Errorf("queue 9: err = %v, want ErrNoRoute", err)
	}
}

func TestUpdateTopicOrderedOnCluster(t *testing.T) {
	ns, b1, b2 := startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetBrokerClusterInfo, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerAddrTable":{"a":{"brokerAddrs":{0:%q},"brokerName":"a","cluster":"C"},"b":{"brokerAddrs":{0:%q,1:"127.0.0.1:1"},"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b","a"]}}`, b1.addr, b2.addr)))
	ns.reply(remoting.PutKVConfig, remoting.Success, "", nil, nil)
	for _, b := range []*fakePeer{b1, b2} {
		b.reply(remoting.UpdateAndCreateTopic, remoting.Success, "", nil, nil)
	}
	a := newTestAdmin(t, ns.addr)
	res, err := a.UpdateTopic(testCtx(t), TopicSpec{TopicName: "OT", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, Order: true}, "", "C")
	if err != nil {
		t.Fatal(err)
	}
	if res.OrderConf != "a:4;b:4" || len(res.Brokers) != 2 {
		t.Errorf("result = %+v", res)
	}
	req := b2.requests(remoting.UpdateAndCreateTopic)[0].ExtFields
	want := map[string]string{"topic": "OT", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "true"}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("create request = %v", req)
	}
	kv := ns.requests(remoting.PutKVConfig)
	if len(kv) != 1 || kv[0].ExtFields["namespace"] != "ORDER_TOPIC_CONFIG" || kv[0].ExtFields["key"] != "OT" || kv[0].ExtFields["value"] != "a:4;b:4" {
		t.Errorf("PUT_KV_CONFIG = %v", kv)
	}
	if _, err := a.UpdateTopic(testCtx(t), TopicSpec{TopicName: "OT"}, "", "NOPE"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown cluster: err = %v", err)
	}
	want1 := `TopicConfig [topicName=OT, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=true]`
	if s := res.Config.String(); s != want1 {
		t.Errorf("String = %s", s)
	}
}

func TestTimerStatuses(t *testing.T) {
	ns, withTimer, without, disabled := startPeer(t), startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetBrokerClusterInfo, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerAddrTable":{"a":{"brokerAddrs":{"0":%q},"brokerName":"a","cluster":"C"},"b":{"brokerAddrs":{"0":%q},"brokerName":"b","cluster":"C"},"c":{"brokerAddrs":{"0":%q},"brokerName":"c","cluster":"C"}},"clusterAddrTable":{"C":["a","b","c"]}}`, withTimer.addr, without.addr, disabled.addr)))
	withTimer.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, []byte(
		`{"table":{"timerCongestNum":"12","timerReadBehind":"3","timerOffsetBehind":"4","timerEnqueueTps":"1.5","timerDequeueTps":"0.25","timerReadBehindMs":"3200","putTps":"0.0 0.0 0.0"}}`))
	without.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, []byte(`{"table":{"putTps":"0.0 0.0 0.0"}}`))
	disabled.reply(remoting.GetBrokerRuntimeInfo, remoting.Success, "", nil, []byte(`{"table":{"timerWheelEnable":"false","putTps":"0.0 0.0 0.0"}}`))
	sts, err := newTestAdmin(t, ns.addr).TimerStatuses(testCtx(t), "", "")
	if !errors.Is(err, ErrNoTimerStats) || !strings.Contains(err.Error(), without.addr) || strings.Contains(err.Error(), disabled.addr) {
		t.Errorf("err = %v, want ErrNoTimerStats naming %s only", err, without.addr)
	}
	if len(sts) != 3 {
		t.Fatalf("got %d statuses", len(sts))
	}
	got := sts[0]
	if got.BrokerName != "a" || got.Pending != 12 || got.ReadBehindSec != 3 || got.EnqueueBehind != 4 || got.EnqueueTps != 1.5 || got.DequeueTps != 0.25 ||
		!reflect.DeepEqual(got.Other, map[string]string{"timerReadBehindMs": "3200"}) || got.Error != "" || got.Disabled {
		t.Errorf("status = %+v", got)
	}
	if sts[1].Error == "" {
		t.Errorf("broker without timer keys has no error: %+v", sts[1])
	}
	// A broker with timerWheelEnable=false is reported as such, not as a failure.
	if c := sts[2]; c.BrokerName != "c" || !c.Disabled || c.Error != "" {
		t.Errorf("timer-disabled broker: %+v", c)
	}
	var out strings.Builder
	PrintTimerStatuses(&out, sts)
	if !regexp.MustCompile(`(?m)^c\s+\S+\s+disabled\s`).MatchString(out.String()) {
		t.Errorf("table does not show broker c as disabled:\n%s", out.String())
	}
}

func TestRecallMessage(t *testing.T) {
	ns, b := startPeer(t), startPeer(t)
	ns.reply(remoting.GetRouteinfoByTopic, remoting.Success, "", nil, routeBody("broker-a", b.addr, 1))
	b.reply(remoting.RecallMessage, remoting.Success, "", map[string]string{"msgId": "ABC"}, nil)
	handle := "djEgVCBicm9rZXItYSAxNzAwMDAwMDAwMDAwIEFCQw==" // v1 T broker-a 1700000000000 ABC
	a := newTestAdmin(t, ns.addr)
	res, err := a.RecallMessage(testCtx(t), "", handle, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.MsgID != "ABC" || res.Addr != b.addr || res.Topic != "T" {
		t.Errorf("result = %+v", res)
	}
	req := b.requests(remoting.RecallMessage)[0].ExtFields
	if req["topic"] != "T" || req["recallHandle"] != handle || req["producerGroup"] != ToolsProducerGroup || req["bname"] != "broker-a" {
		t.Errorf("request = %v", req)
	}
	if _, err := a.RecallMessage(testCtx(t), "OTHER", handle, ""); !errors.Is(err, ErrBadRecallHandle) {
		t.Errorf("topic mismatch: err = %v", err)
	}
	b.reply(remoting.RecallMessage, remoting.IllegalOperation, "recall failed, timestamp invalid", nil, nil)
	if _, err := a.RecallMessage(testCtx(t), "T", handle, ""); CodeOf(err) != remoting.IllegalOperation {
		t.Errorf("refused recall: err = %v", err)
	}
}

func TestQueryMessageFilters(t *testing.T) {
	ns, b1, b2 := startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetRouteinfoByTopic, remoting.Success, "", nil, []byte(fmt.Sprintf(
		`{"brokerDatas":[{"brokerAddrs":{"0":%q},"brokerName":"a","cluster":"C"},{"brokerAddrs":{"0":%q},"brokerName":"b","cluster":"C"}],"queueDatas":[]}`, b1.addr, b2.addr)))
	host := netip.MustParseAddrPort(b1.addr)
	rec := func(topic, keys string, off int64) []byte {
		return encodeRecord(testRecord{topic: topic, phyOff: off, body: []byte("x"), props: map[string]string{"KEYS": keys, "UNIQ_KEY": fmt.Sprintf("U%d", off)}, storeHost: host, bornHost: host})
	}
	var body []byte
	body = append(body, rec("T", "k1 k2", 1)...)
	body = append(body, rec("T", "k22", 2)...)
	body = append(body, rec("OTHER", "k2", 3)...)
	b1.reply(remoting.QueryMessage, remoting.Success, "", map[string]string{"indexLastUpdateTimestamp": "0", "indexLastUpdatePhyoffset": "0"}, body)
	b2.reply(remoting.QueryMessage, remoting.QueryNotFound, "can not find message", nil, nil)
	a := newTestAdmin(t, ns.addr)
	msgs, err := a.QueryMessage(testCtx(t), "T", "k2", QueryMaxNumByKey, 0, 1<<62, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].MsgID != "U1" {
		t.Errorf("key query kept %d messages: %+v", len(msgs), msgs)
	}
	q := b1.requests(remoting.QueryMessage)[0].ExtFields
	if q["key"] != "k2" || q["maxNum"] != "64" || q["_UNIQUE_KEY_QUERY"] != "false" || q["topic"] != "T" {
		t.Errorf("query header = %v", q)
	}
	if msgs, err := a.QueryMessage(testCtx(t), "T", "U2", QueryMaxNumUniqKey, 0, 1<<62, true); err != nil || len(msgs) != 1 || msgs[0].CommitLogOffset != 2 {
		t.Errorf("unique query = %v, %v", msgs, err)
	}
	if _, err := a.QueryMessage(testCtx(t), "T", "none", 64, 0, 1, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("no match: err = %v", err)
	}
	b1.reply(remoting.QueryMessage, remoting.RequestCodeNotSupported, " request type 12 not supported", nil, nil)
	b2.reply(remoting.QueryMessage, remoting.RequestCodeNotSupported, " request type 12 not supported", nil, nil)
	if _, err := a.QueryMessage(testCtx(t), "T", "k2", 64, 0, 1, false); CodeOf(err) != remoting.RequestCodeNotSupported {
		t.Errorf("unserved: err = %v, want the brokers' code 3", err)
	}
}

func TestViewMessageGoesToTheIDsBroker(t *testing.T) {
	b := startPeer(t)
	host := netip.MustParseAddrPort(b.addr)
	b.reply(remoting.ViewMessageByID, remoting.Success, "", nil, encodeRecord(testRecord{topic: "T", phyOff: 77, body: []byte("v"), storeHost: host, bornHost: host}))
	a := newTestAdmin(t) // no name server needed
	m, err := a.ViewMessage(testCtx(t), message.CreateMessageID(host, 77))
	if err != nil {
		t.Fatal(err)
	}
	if m.CommitLogOffset != 77 || string(m.Body) != "v" {
		t.Errorf("message = %+v", m)
	}
	if r := b.requests(remoting.ViewMessageByID); len(r) != 1 || r[0].ExtFields["offset"] != "77" {
		t.Errorf("requests = %v", r)
	}
	if _, err := a.ViewMessage(testCtx(t), "nope"); !errors.Is(err, ErrBadMsgID) {
		t.Errorf("bad id: err = %v", err)
	}
}

func TestBrokerConfigAndUpdate(t *testing.T) {
	b := startPeer(t)
	b.reply(remoting.GetBrokerConfig, remoting.Success, "", map[string]string{"version": `{"counter":1}`}, []byte("brokerName=broker-a\nlistenPort=10911\n"))
	b.reply(remoting.UpdateBrokerConfig, remoting.Success, "", nil, nil)
	a := newTestAdmin(t)
	cfgs, err := a.BrokerConfigs(testCtx(t), b.addr, "")
	if err != nil || len(cfgs) != 1 || !reflect.DeepEqual(cfgs[0].Properties, map[string]string{"brokerName": "broker-a", "listenPort": "10911"}) {
		t.Fatalf("BrokerConfigs = %+v, %v", cfgs, err)
	}
	done, err := a.UpdateBrokerConfig(testCtx(t), b.addr, "", "flushDiskType", "SYNC_FLUSH")
	if err != nil || len(done) != 1 {
		t.Fatalf("UpdateBrokerConfig = %v, %v", done, err)
	}
	if r := b.requests(remoting.UpdateBrokerConfig); string(r[0].Body) != "flushDiskType=SYNC_FLUSH\n" {
		t.Errorf("body = %q", r[0].Body)
	}
	if _, err := a.UpdateBrokerConfig(testCtx(t), b.addr, "", "a=b", "c"); !errors.Is(err, ErrUsage) {
		t.Errorf("bad key: err = %v", err)
	}
}
