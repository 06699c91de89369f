package broker

import (
	"slices"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

func TestGetAllDelayOffset(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.MessageDelayLevel = "1s 5s 10s" })
	resp := tb.invoke(remoting.GetAllDelayOffset, nil, nil)
	if resp.Code != remoting.Success || string(resp.Body) != `{"offsetTable":{1:0,2:0,3:0}}` {
		t.Fatalf("answer %d %q body %s", resp.Code, resp.Remark, resp.Body)
	}
}

func TestGetSystemTopicListFromBroker(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.TraceTopicEnable = true })
	resp := tb.invoke(remoting.GetSystemTopicListFromBroker, nil, nil)
	var list remoting.TopicList
	if resp.Code != remoting.Success || remoting.UnmarshalBody(resp.Body, &list) != nil {
		t.Fatalf("answer %d %q body %s", resp.Code, resp.Remark, resp.Body)
	}
	for _, want := range []string{message.TopicAutoCreateKey, message.TopicSchedule, message.TopicTrace, message.TopicTransHalf,
		tb.opts.BrokerClusterName, tb.opts.BrokerName, message.ReplyTopic(tb.opts.BrokerClusterName)} {
		if !slices.Contains(list.TopicList, want) {
			t.Errorf("system topics lack %s: %v", want, list.TopicList)
		}
	}
	if slices.Contains(list.TopicList, "UserTopic") || list.BrokerAddr != "" {
		t.Errorf("list %+v", list)
	}
}

func TestCleanUnusedTopic(t *testing.T) {
	tb := startBroker(t, nil)
	c := brokertest.NewClient(t, tb.Addr())
	for _, topic := range []string{"Kept", "Dropped"} {
		c.MustSend(brokertest.Send{Topic: topic, Body: []byte("x")})
	}
	c.MustSend(brokertest.Send{Topic: "Delayed", Body: []byte("x"), Props: brokertest.Props(message.PropDelay, "3")})
	tb.waitDispatched()
	// Drop the topic from the table only (as a topic table edited by hand).
	if !tb.Topics().Delete("Dropped") {
		t.Fatal("Dropped not in the table")
	}
	if !slices.Contains(tb.Store().Topics(), "Dropped") {
		t.Fatal("Dropped has no queues before the clean")
	}
	resp := tb.invoke(remoting.CleanUnusedTopic, nil, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("answer %d %q", resp.Code, resp.Remark)
	}
	topics := tb.Store().Topics()
	if slices.Contains(topics, "Dropped") || !slices.Contains(topics, "Kept") || !slices.Contains(topics, message.TopicSchedule) {
		t.Fatalf("queues after the clean: %s", strings.Join(topics, ","))
	}
}
