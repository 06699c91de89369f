package broker

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// TestSendSingleStoresMessage sends through every single-message code in
// both header serializations and reads each message back.
func TestSendSingleStoresMessage(t *testing.T) {
	tb := startBroker(t, nil)
	clients := []struct {
		name string
		cli  *remoting.Client
	}{{"json", tb.json}, {"rocketmq", tb.bin}}
	codes := []struct {
		name string
		code int32
	}{
		{"SEND_MESSAGE", remoting.SendMessage},
		{"SEND_MESSAGE_V2", remoting.SendMessageV2},
	}
	// SEND_REPLY_MESSAGE(_V2) push the reply first: reply_test.go.
	wantOffset := int64(0)
	for _, cl := range clients {
		for _, c := range codes {
			t.Run(cl.name+"/"+c.name, func(t *testing.T) {
				body := []byte("hello " + cl.name + " " + c.name)
				// Go clients end the properties with \x02; both forms must parse.
				props := coreProps("TAGS", "tagA", "KEYS", "k1 k2", "UNIQ_KEY", "U-"+c.name, "WAIT", "true", "user", "v") + "\x02"
				a := sendArgs{code: c.code, topic: "TopicSingle", body: body, props: props, queueID: 1}
				resp := tb.invokeWith(cl.cli, c.code, a.ext(), body)
				if resp.Code != remoting.Success {
					t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
				}
				if resp.SerializeType != tb.cli2TypeOf(cl.cli) {
					t.Errorf("response serialize type %d, want the request's", resp.SerializeType)
				}
				for key, want := range map[string]string{"MSG_REGION": "DefaultRegion", "TRACE_ON": "true", "queueId": "1"} {
					if got := resp.ExtFields[key]; got != want {
						t.Errorf("%s = %q, want %q", key, got, want)
					}
				}
				if got := coreExtInt(t, resp, "queueOffset"); got != wantOffset {
					t.Errorf("queueOffset %d, want %d", got, wantOffset)
				}
				wantOffset++

				host, phy, err := message.DecodeMessageID(resp.ExtFields["msgId"])
				if err != nil {
					t.Fatalf("msgId %q: %v", resp.ExtFields["msgId"], err)
				}
				if host.String() != tb.Addr() {
					t.Errorf("msgId host %s, want %s", host, tb.Addr())
				}
				view := tb.invoke(remoting.ViewMessageByID, map[string]string{"offset": fmt.Sprint(phy)}, nil)
				if view.Code != remoting.Success {
					t.Fatalf("view: code %d %q", view.Code, view.Remark)
				}
				m := coreRecords(t, view.Body)[0]
				if m.Topic != "TopicSingle" || m.QueueID != 1 || m.Flag != 7 || !bytes.Equal(m.Body, body) {
					t.Errorf("stored %s/%d flag %d body %q", m.Topic, m.QueueID, m.Flag, m.Body)
				}
				wantProps := map[string]string{"TAGS": "tagA", "KEYS": "k1 k2", "UNIQ_KEY": "U-" + c.name, "user": "v", "CLUSTER": "DefaultCluster"}
				for k, v := range wantProps {
					if m.Properties[k] != v {
						t.Errorf("property %s = %q, want %q", k, m.Properties[k], v)
					}
				}
				if _, ok := m.Properties["WAIT"]; ok {
					t.Error("WAIT was stored")
				}
				if m.StoreHost.String() != tb.Addr() {
					t.Errorf("STOREHOST %s, want %s", m.StoreHost, tb.Addr())
				}
				if m.BornHost.Addr() != netip.MustParseAddr("127.0.0.1") {
					t.Errorf("BORNHOST %s", m.BornHost)
				}
			})
		}
	}
}

func (tb *testBroker) cli2TypeOf(cli *remoting.Client) byte {
	if cli == tb.bin {
		return remoting.SerializeRocketMQ
	}
	return remoting.SerializeJSON
}

// TestSendBatch checks the batch path: every member stored with the batch
// properties and CLUSTER, consecutive offsets, comma-joined ids.
func TestSendBatch(t *testing.T) {
	tb := startBroker(t, nil)
	before := int64(0) // queue offset of the next batch's first member
	for _, cli := range []*remoting.Client{tb.json, tb.bin} {
		entries := []message.BatchEntry{
			{Flag: 1, Body: []byte("one"), Properties: map[string]string{"TAGS": "a", "UNIQ_KEY": "u1"}},
			{Flag: 2, Body: []byte("two"), Properties: map[string]string{"TAGS": "b", "batchKey": "inner"}},
			{Flag: 3, Body: []byte("three")},
		}
		a := sendArgs{code: remoting.SendBatchMessage, topic: "TopicBatch", props: coreProps("batchKey", "outer", "WAIT", "true"), batch: true}
		resp := tb.invokeWith(cli, remoting.SendBatchMessage, a.ext(), coreBatchBody(entries...))
		if resp.Code != remoting.Success {
			t.Fatalf("batch: code %d %q", resp.Code, resp.Remark)
		}
		ids := strings.Split(resp.ExtFields["msgId"], ",")
		if len(ids) != len(entries) {
			t.Fatalf("msgId %q: want %d ids", resp.ExtFields["msgId"], len(entries))
		}
		if got := coreExtInt(t, resp, "queueOffset"); got != before {
			t.Errorf("queueOffset %d, want %d", got, before)
		}
		for i, id := range ids {
			_, phy, err := message.DecodeMessageID(id)
			if err != nil {
				t.Fatalf("id %q: %v", id, err)
			}
			rec, err := tb.Store().LookMessageByOffset(phy)
			if err != nil {
				t.Fatalf("look %d: %v", phy, err)
			}
			m := coreRecords(t, rec)[0]
			if !bytes.Equal(m.Body, entries[i].Body) || m.Flag != entries[i].Flag || m.QueueOffset != before+int64(i) {
				t.Errorf("member %d: body %q flag %d offset %d", i, m.Body, m.Flag, m.QueueOffset)
			}
			if m.Properties["batchKey"] != "outer" || m.Properties["CLUSTER"] != "DefaultCluster" {
				t.Errorf("member %d properties %v: want batch-level batchKey and CLUSTER", i, m.Properties)
			}
			if _, ok := m.Properties["WAIT"]; ok {
				t.Errorf("member %d stored WAIT", i)
			}
			for k, v := range entries[i].Properties {
				if k != "batchKey" && m.Properties[k] != v {
					t.Errorf("member %d lost %s=%s: %v", i, k, v, m.Properties)
				}
			}
		}
		before += int64(len(entries))
	}
}

// TestSendRejections covers every refusal of the send path with the stock
// code and remark.
func TestSendRejections(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.MaxMessageSize = 1024 })
	tb.Topics().Update(&topicgroup.TopicConfig{TopicName: "ReadOnly", ReadQueueNums: 2, WriteQueueNums: 2, Perm: topicgroup.PermRead, TopicFilterType: filterTypeSingleTag})
	tb.mustSend(sendArgs{topic: "Existing", body: []byte("x")})

	longProps := coreProps("big", strings.Repeat("p", 32768))
	cases := []struct {
		name       string
		args       sendArgs
		wantCode   int32
		wantRemark string // contained in the remark
	}{
		{name: "missing topic V1", args: sendArgs{code: remoting.SendMessage, topic: "T", drop: "topic"},
			wantCode: remoting.SystemError, wantRemark: "the custom field <topic> is null"},
		{name: "missing bornTimestamp V2", args: sendArgs{topic: "T", drop: "bornTimestamp"},
			wantCode: remoting.SystemError, wantRemark: "the custom field <bornTimestamp> is null"},
		{name: "blank topic", args: sendArgs{topic: " "}, wantCode: remoting.SystemError, wantRemark: "The specified topic is blank."},
		{name: "illegal characters", args: sendArgs{topic: "bad topic!"}, wantCode: remoting.SystemError,
			wantRemark: "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{name: "too long", args: sendArgs{topic: strings.Repeat("t", 128)}, wantCode: remoting.SystemError,
			wantRemark: "The specified topic is longer than topic max length."},
		{name: "system topic", args: sendArgs{topic: "SCHEDULE_TOPIC_XXXX"}, wantCode: remoting.NoPermission,
			wantRemark: "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."},
		{name: "not writable", args: sendArgs{topic: "ReadOnly"}, wantCode: remoting.NoPermission,
			wantRemark: "the topic[ReadOnly] sending message is forbidden"},
		{name: "queue id too big", args: sendArgs{topic: "Existing", queueID: 99}, wantCode: remoting.SystemError,
			wantRemark: "request queueId[99] is illegal, TopicConfig [topicName=Existing, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] Producer: 127.0.0.1:"},
		{name: "no default topic", args: sendArgs{topic: "Unknown", defaultTopic: "NoSuchDefault"}, wantCode: remoting.TopicNotExist,
			wantRemark: "topic[Unknown] not exist, apply first please!\nSee http://rocketmq.apache.org/docs/faq/ for further details."},
		{name: "body too large", args: sendArgs{topic: "Existing", body: make([]byte, 1025)}, wantCode: remoting.MessageIllegal,
			wantRemark: "the message is illegal, maybe msg body or properties length not matched. msg body length limit 1024B"},
		{name: "properties too large", args: sendArgs{topic: "Existing", props: longProps}, wantCode: remoting.MessageIllegal,
			wantRemark: "the message is illegal"},
		{name: "malformed batch", args: sendArgs{code: remoting.SendBatchMessage, topic: "Existing", batch: true, body: []byte{0, 0, 0, 99, 1}},
			wantCode: remoting.MessageIllegal, wantRemark: "the batch body is malformed"},
		{name: "empty batch", args: sendArgs{code: remoting.SendBatchMessage, topic: "Existing", batch: true},
			wantCode: remoting.MessageIllegal, wantRemark: "the batch body is malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.send(tc.args)
			if resp.Code != tc.wantCode || !strings.Contains(resp.Remark, tc.wantRemark) {
				t.Fatalf("got %d %q, want %d %q…", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
			if _, ok := resp.ExtFields["MSG_REGION"]; !ok {
				t.Errorf("reply lacks MSG_REGION: %v", resp.ExtFields)
			}
		})
	}
	if tb.Topics().Get("Unknown") != nil {
		t.Error("a topic was created from a missing default topic")
	}

	t.Run("bad number", func(t *testing.T) {
		ext := sendArgs{topic: "Existing"}.ext()
		ext["e"] = "x1"
		resp := tb.invoke(remoting.SendMessageV2, ext, nil)
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "not a number") {
			t.Fatalf("got %d %q", resp.Code, resp.Remark)
		}
	})
	t.Run("unknown request code", func(t *testing.T) {
		resp := tb.invoke(9999, nil, nil)
		if resp.Code != remoting.RequestCodeNotSupported || resp.Remark != " request type 9999 not supported" {
			t.Fatalf("got %d %q", resp.Code, resp.Remark)
		}
	})
}

// TestSendAutoCreate checks topic creation from TBW102 and its refusal
// when auto-creation is off.
func TestSendAutoCreate(t *testing.T) {
	cases := []struct {
		name       string
		autoCreate bool
		clientNums int32
		wantCode   int32
		wantQueues int32
	}{
		{name: "client asks fewer queues", autoCreate: true, clientNums: 4, wantCode: remoting.Success, wantQueues: 4},
		{name: "capped by TBW102", autoCreate: true, clientNums: 64, wantCode: remoting.Success, wantQueues: 8},
		{name: "disabled", autoCreate: false, clientNums: 4, wantCode: remoting.TopicNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, func(o *Options) { o.AutoCreateTopicEnable = tc.autoCreate })
			before := tb.Topics().DataVersion()
			resp := tb.send(sendArgs{topic: "AutoTopic", body: []byte("x"), defaultQueueNums: tc.clientNums, queueID: -1})
			if resp.Code != tc.wantCode {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
			}
			tc2 := tb.Topics().Get("AutoTopic")
			if tc.wantCode != remoting.Success {
				if tc2 != nil {
					t.Fatal("topic created although auto-creation is off")
				}
				return
			}
			if tc2 == nil || tc2.ReadQueueNums != tc.wantQueues || tc2.WriteQueueNums != tc.wantQueues || tc2.Perm != permReadWrite {
				t.Fatalf("created %+v, want %d queues perm 6", tc2, tc.wantQueues)
			}
			if q := coreExtInt(t, resp, "queueId"); q < 0 || q >= int64(tc.wantQueues) {
				t.Errorf("random queue %d out of range", q)
			}
			if after := tb.Topics().DataVersion(); after.Counter != before.Counter+1 {
				t.Errorf("data version %d → %d, want one bump", before.Counter, after.Counter)
			}
		})
	}
}

// TestSendRetryTopicLimit routes sends past a group's retry limit to its DLQ.
func TestSendRetryTopicLimit(t *testing.T) {
	tb := startBroker(t, nil)
	cases := []struct {
		name      string
		reconsume string
		max       string
		wantTopic string
	}{
		{name: "below group default", reconsume: "3", wantTopic: "%RETRY%G1"},
		{name: "at request limit", reconsume: "2", max: "2", wantTopic: "%DLQ%G1"},
		{name: "at group default", reconsume: "16", wantTopic: "%DLQ%G1"},
		{name: "request limit above", reconsume: "16", max: "20", wantTopic: "%RETRY%G1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.mustSend(sendArgs{code: remoting.SendMessage, topic: "%RETRY%G1", body: []byte(tc.name),
				props: coreProps("DELAY", "3"), reconsumeTimes: tc.reconsume, maxReconsumeTimes: tc.max})
			_, phy, err := message.DecodeMessageID(resp.ExtFields["msgId"])
			if err != nil {
				t.Fatal(err)
			}
			rec, err := tb.Store().LookMessageByOffset(phy)
			if err != nil {
				t.Fatal(err)
			}
			m := coreRecords(t, rec)[0]
			topic := m.Topic
			if topic == "SCHEDULE_TOPIC_XXXX" { // retries wait out their DELAY level first
				topic = m.Properties["REAL_TOPIC"]
			}
			if topic != tc.wantTopic {
				t.Fatalf("stored in %s (real %s), want %s", m.Topic, topic, tc.wantTopic)
			}
			if _, hasDelay := m.Properties["DELAY"]; hasDelay == (tc.wantTopic != "%RETRY%G1") {
				t.Errorf("DELAY present=%t in %s", hasDelay, m.Topic)
			}
		})
	}
	dlq := tb.Topics().Get("%DLQ%G1")
	if dlq == nil || dlq.WriteQueueNums != 1 || dlq.Perm != dlqPerm {
		t.Errorf("DLQ topic %+v", dlq)
	}
	t.Run("unknown group", func(t *testing.T) {
		tb := startBroker(t, func(o *Options) { o.AutoCreateSubscriptionGroup = false })
		resp := tb.send(sendArgs{code: remoting.SendMessage, topic: "%RETRY%Nobody", body: []byte("x"), reconsumeTimes: "1"})
		if resp.Code != remoting.SubscriptionGroupNotExist {
			t.Fatalf("code %d %q", resp.Code, resp.Remark)
		}
	})
}

// TestSendSysFlags keeps compressed bodies as they are and marks
// MULTI_TAG topics.
func TestSendSysFlags(t *testing.T) {
	tb := startBroker(t, nil)
	tb.Topics().Update(&topicgroup.TopicConfig{TopicName: "Multi", ReadQueueNums: 1, WriteQueueNums: 1, Perm: permReadWrite, TopicFilterType: filterTypeMultiTag})
	cases := []struct {
		name    string
		topic   string
		sysFlag int32
		want    int32
	}{
		{name: "compressed", topic: "Plain", sysFlag: 0x1, want: 0x1},
		{name: "java zlib type bits", topic: "Plain", sysFlag: 0x301, want: 0x301},
		{name: "multi tag topic", topic: "Multi", sysFlag: 0, want: 0x2},
		{name: "host v6 bits cleared", topic: "Plain", sysFlag: 0x30, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte{0x78, 0x9c, 0xff, 0x00} // not valid zlib: stored untouched
			resp := tb.mustSend(sendArgs{topic: tc.topic, body: body, sysFlag: tc.sysFlag})
			_, phy, _ := message.DecodeMessageID(resp.ExtFields["msgId"])
			rec, err := tb.Store().LookMessageByOffset(phy)
			if err != nil {
				t.Fatal(err)
			}
			m := coreRecords(t, rec)[0]
			if m.SysFlag != tc.want || !bytes.Equal(m.Body, body) {
				t.Fatalf("sysFlag %#x body %x, want %#x %x", m.SysFlag, m.Body, tc.want, body)
			}
		})
	}
}

// TestSendPutHooks runs hooks on every put and maps their refusals.
// stockServiceNotAvailable is the remark SendMessageProcessor gives a put
// the store refuses (SERVICE_NOT_AVAILABLE), before the cause in brackets.
// The bracket holds the disk use (Java diskUtil), compared as a pattern.
const stockServiceNotAvailable = "service not available now. It may be caused by one of the following reasons: " +
	"the broker's disk is full [DISKUTIL], messages are put to the slave, message store has been shut down, etc."

var diskUtilRE = regexp.MustCompile(`\[CL: +-?[0-9.]+ CQ: +-?[0-9.]+ INDEX: +-?[0-9.]+\]`)

func TestSendPutHooks(t *testing.T) {
	hook := func(m *message.Message) error {
		switch m.Properties["hook"] {
		case "reroute":
			m.Topic = "Rerouted"
		case "refuse":
			return remoting.Refuse(remoting.MessageIllegal, "refused by hook")
		case "fail":
			return errors.New("hook broke")
		case "diskfull":
			return fmt.Errorf("%w: no space left for a new segment", store.ErrDiskFull)
		case "closed":
			return store.ErrClosed
		}
		return nil
	}
	tb := startBrokerWith(t, coreTestOptions(t, nil), func(b *Broker) { b.putHooks = append(b.putHooks, hook) })
	cases := []struct {
		name       string
		hook       string
		wantCode   int32
		wantRemark string
		wantTopic  string
	}{
		{name: "untouched", hook: "none", wantCode: remoting.Success, wantTopic: "Hooked"},
		{name: "rewrite", hook: "reroute", wantCode: remoting.Success, wantTopic: "Rerouted"},
		{name: "refusal code", hook: "refuse", wantCode: remoting.MessageIllegal, wantRemark: "refused by hook"},
		{name: "plain error", hook: "fail", wantCode: remoting.SystemError, wantRemark: "UNKNOWN_ERROR: hook broke"},
		{name: "disk full", hook: "diskfull", wantCode: remoting.ServiceNotAvailable,
			wantRemark: stockServiceNotAvailable + " (store: disk full: no space left for a new segment)"},
		{name: "store closed", hook: "closed", wantCode: remoting.ServiceNotAvailable,
			wantRemark: stockServiceNotAvailable + " (store: closed)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.send(sendArgs{topic: "Hooked", body: []byte("x"), props: coreProps("hook", tc.hook)})
			if remark := diskUtilRE.ReplaceAllString(resp.Remark, "[DISKUTIL]"); resp.Code != tc.wantCode || remark != tc.wantRemark {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
			if tc.wantTopic == "" {
				return
			}
			_, phy, _ := message.DecodeMessageID(resp.ExtFields["msgId"])
			rec, _ := tb.Store().LookMessageByOffset(phy)
			if m := coreRecords(t, rec)[0]; m.Topic != tc.wantTopic {
				t.Fatalf("stored in %s, want %s", m.Topic, tc.wantTopic)
			}
		})
	}
}

// TestSendStoreClosed: a send the store itself refuses (closed under a
// running broker) is answered SERVICE_NOT_AVAILABLE on every put path.
func TestSendStoreClosed(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "Closing", body: []byte("before")})
	if err := tb.Store().Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args sendArgs
	}{
		{name: "raw properties", args: sendArgs{topic: "Closing", body: []byte("x")}},
		{name: "parsed properties", args: sendArgs{topic: "Closing", body: []byte("x"), props: coreProps("DELAY", "1")}},
		{name: "batch", args: sendArgs{code: remoting.SendBatchMessage, topic: "Closing", batch: true, body: coreBatchBody(message.BatchEntry{Body: []byte("b")})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.send(tc.args)
			if resp.Code != remoting.ServiceNotAvailable || !strings.HasPrefix(diskUtilRE.ReplaceAllString(resp.Remark, "[DISKUTIL]"), stockServiceNotAvailable) {
				t.Fatalf("got %d %q, want %d with the stock remark", resp.Code, resp.Remark, remoting.ServiceNotAvailable)
			}
			if !strings.Contains(resp.Remark, store.ErrClosed.Error()) {
				t.Errorf("remark %q does not name the cause %q", resp.Remark, store.ErrClosed)
			}
		})
	}
}
