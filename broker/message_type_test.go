package broker

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// createTyped creates topic with the 5.x attribute modification attrs ("" for none) and returns the answer.
func (tb *testBroker) createTyped(topic, attrs string) *remoting.Command {
	tb.t.Helper()
	ext := brokertest.CreateTopicExt(topic, 2, 6, "SINGLE_TAG")
	if attrs != "" {
		ext["attributes"] = attrs
	}
	return tb.invoke(remoting.UpdateAndCreateTopic, ext, nil)
}

// topicAttributes reads a topic's attributes back with GET_TOPIC_CONFIG.
func (tb *testBroker) topicAttributes(topic string) map[string]string {
	tb.t.Helper()
	resp := tb.invoke(remoting.GetTopicConfig, map[string]string{"topic": topic}, nil)
	var tc topicgroup.TopicConfig
	if err := remoting.UnmarshalBody(resp.Body, &tc); err != nil || resp.Code != remoting.Success {
		tb.t.Fatalf("GET_TOPIC_CONFIG %s: %d %q %v", topic, resp.Code, resp.Remark, err)
	}
	return tc.Attributes
}

// TestTopicMessageTypeAttribute: message.type set by UPDATE_AND_CREATE_TOPIC's attributes as 5.x mqadmin
// updateTopic -a sends them, altered and deleted on update, kept by an update without attributes, refused
// with the stock messages, shown by GET_TOPIC_CONFIG / GET_ALL_TOPIC_CONFIG and kept across a restart.
func TestTopicMessageTypeAttribute(t *testing.T) {
	tb := startBroker(t, nil)
	steps := []struct {
		name, topic, attrs string
		wantCode           int32
		wantRemark         string
		want               map[string]string // the topic's attributes afterwards
	}{
		{"create FIFO", "Typed", "+message.type=FIFO", remoting.Success, "", map[string]string{"message.type": "FIFO"}},
		{"update keeps", "Typed", "", remoting.Success, "", map[string]string{"message.type": "FIFO"}},
		{"alter", "Typed", "+message.type=DELAY", remoting.Success, "", map[string]string{"message.type": "DELAY"}},
		{"bad value", "Typed", "+message.type=BATCH", remoting.SystemError, "value is not in set: [UNSPECIFIED, NORMAL, FIFO, DELAY, TRANSACTION, MIXED]", map[string]string{"message.type": "DELAY"}},
		{"mixed refused", "Typed", "+message.type=MIXED", remoting.InvalidParameter, "MIXED message type is not supported.", map[string]string{"message.type": "DELAY"}},
		{"unknown key", "Typed", "+queue.type=BatchCQ", remoting.SystemError, "unsupported key: queue.type", map[string]string{"message.type": "DELAY"}},
		{"no sign", "Typed", "message.type=FIFO", remoting.SystemError, "add/alter attribute format is wrong: message.type", map[string]string{"message.type": "DELAY"}},
		{"duplicate", "Typed", "+message.type=FIFO,+message.type=NORMAL", remoting.SystemError, "key duplication: +message.type", map[string]string{"message.type": "DELAY"}},
		{"delete", "Typed", "-message.type", remoting.Success, "", nil},
		{"delete absent", "Typed", "-message.type", remoting.SystemError, "attempt to delete a nonexistent key: message.type", nil},
		{"create with delete", "Fresh", "-message.type", remoting.SystemError, "only add attribute is supported while creating topic. key: message.type", nil},
		{"create TRANSACTION", "Tx", "+message.type=TRANSACTION", remoting.Success, "", map[string]string{"message.type": "TRANSACTION"}},
	}
	for _, s := range steps {
		resp := tb.createTyped(s.topic, s.attrs)
		if resp.Code != s.wantCode || resp.Remark != s.wantRemark {
			t.Fatalf("%s: %d %q, want %d %q", s.name, resp.Code, resp.Remark, s.wantCode, s.wantRemark)
		}
		if s.wantCode != remoting.Success && tb.topics.Get(s.topic) == nil {
			continue
		}
		if got := tb.topicAttributes(s.topic); !maps.Equal(got, s.want) {
			t.Fatalf("%s: attributes %v, want %v", s.name, got, s.want)
		}
	}
	if tb.topics.Get("Fresh") != nil {
		t.Fatal("a refused creation made the topic")
	}

	// The JSON of an untyped topic is unchanged (no "attributes" key, as 4.x writes it).
	resp := tb.invoke(remoting.GetTopicConfig, map[string]string{"topic": "Typed"}, nil)
	if strings.Contains(string(resp.Body), "attributes") {
		t.Fatalf("untyped topic JSON %s has attributes", resp.Body)
	}
	all := tb.invoke(remoting.GetAllTopicConfig, nil, nil)
	var w remoting.TopicConfigSerializeWrapper
	if err := remoting.UnmarshalBody(all.Body, &w); err != nil || w.TopicConfigTable["Tx"] == nil ||
		w.TopicConfigTable["Tx"].Attributes["message.type"] != "TRANSACTION" {
		t.Fatalf("GET_ALL_TOPIC_CONFIG Tx: %s (%v)", all.Body, err)
	}

	tb = tb.restart()
	if got := tb.topicAttributes("Tx"); got["message.type"] != "TRANSACTION" || len(got) != 1 {
		t.Fatalf("after restart Tx attributes %v", got)
	}
}

func TestTopicMessageTypeMixedAllowed(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.EnableMixedMessageType = true })
	if resp := tb.createTyped("Mixed", "+message.type=MIXED"); resp.Code != remoting.Success {
		t.Fatalf("MIXED with enableMixedMessageType: %d %q", resp.Code, resp.Remark)
	}
	if got := tb.topicAttributes("Mixed"); got["message.type"] != "MIXED" {
		t.Fatalf("attributes %v", got)
	}
}

// messageKinds are one message of each kind as a 4.x or 5.x producer marks it, and its 5.x type.
var messageKinds = []struct {
	name  string
	props []string
	typ   message.TopicMessageType
}{
	{"normal", nil, message.TopicTypeNormal},
	{"fifo", []string{message.PropShardingKey, "g1"}, message.TopicTypeFIFO},
	{"delay level", []string{message.PropDelay, "2"}, message.TopicTypeDelay},
	{"timer", []string{message.PropTimerDelaySec, "5"}, message.TopicTypeDelay},
	{"transaction", []string{message.PropTranMsg, "true", message.PropProducerGroup, "PG"}, message.TopicTypeTransaction},
}

// TestTopicMessageTypeCheckOnSend: with enableTopicMessageTypeCheck a send is refused unless its kind is
// the topic's type (an untyped topic is NORMAL; MIXED takes all), over remoting (MESSAGE_ILLEGAL) and
// through Put (the gRPC front end's path, with ErrTopicMessageType); without it everything is taken.
func TestTopicMessageTypeCheckOnSend(t *testing.T) {
	for _, check := range []bool{true, false} {
		tb := startBroker(t, func(o *Options) {
			o.EnableTopicMessageTypeCheck = check
			o.EnableMixedMessageType = true
		})
		topics := map[string]message.TopicMessageType{"Untyped": message.TopicTypeNormal}
		for _, typ := range []message.TopicMessageType{message.TopicTypeNormal, message.TopicTypeFIFO, message.TopicTypeDelay, message.TopicTypeTransaction, message.TopicTypeMixed} {
			topics["T"+string(typ)] = typ
			if resp := tb.createTyped("T"+string(typ), "+message.type="+string(typ)); resp.Code != remoting.Success {
				t.Fatalf("create %s: %d %q", typ, resp.Code, resp.Remark)
			}
		}
		tb.createTyped("Untyped", "")
		for topic, typ := range topics {
			for _, k := range messageKinds {
				takes := !check || typ == message.TopicTypeMixed || typ == k.typ
				var sysFlag int32
				if k.typ == message.TopicTypeTransaction {
					sysFlag = message.TransactionPreparedType
				}
				resp := tb.send(sendArgs{topic: topic, body: []byte("b"), props: brokertest.Props(k.props...), sysFlag: sysFlag})
				wantRemark := ""
				if !takes {
					wantRemark = "TopicMessageType validate failed, the expected type is " + string(typ) + ", but actual type is " + string(k.typ)
				}
				if (resp.Code == remoting.Success) != takes || resp.Code != remoting.Success && (resp.Code != remoting.MessageIllegal || resp.Remark != wantRemark) {
					t.Errorf("check=%t %s to %s: %d %q, want taken=%t %q", check, k.name, topic, resp.Code, resp.Remark, takes, wantRemark)
				}

				props := map[string]string{}
				for i := 0; i+1 < len(k.props); i += 2 {
					props[k.props[i]] = k.props[i+1]
				}
				_, err := tb.Put(PutRequest{Topic: topic, QueueID: -1, Body: []byte("b"), Properties: props, SysFlag: sysFlag, From: "127.0.0.1:1"})
				var se *remoting.Refusal
				switch {
				case takes && err != nil:
					t.Errorf("check=%t Put %s to %s: %v", check, k.name, topic, err)
				case !takes && (!errors.As(err, &se) || se.Code != remoting.MessageIllegal || !errors.Is(err, ErrTopicMessageType) || se.Remark != wantRemark):
					t.Errorf("check=%t Put %s to %s: %v, want the type conflict %q", check, k.name, topic, err, wantRemark)
				}
			}
		}
		// A consumer's re-send to its retry topic carries a delay level whatever the original topic's type.
		if check {
			tb.mustSend(sendArgs{topic: message.RetryTopicPrefix + "G", body: []byte("r"), props: brokertest.Props(message.PropDelay, "3"), defaultQueueNums: 1})
		}
		tb.stop()
	}
}
