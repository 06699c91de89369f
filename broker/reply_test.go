package broker

import (
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// replyRequester is a requesting client: it heartbeats as producer "RG"
// with clientID and records the replies pushed to it, answering each with
// code answer.
type replyRequester struct {
	cli    *remoting.Client
	pushed chan *remoting.Command
}

func newReplyRequester(t *testing.T, tb *testBroker, clientID string, answer int32) *replyRequester {
	t.Helper()
	r := &replyRequester{pushed: make(chan *remoting.Command, 4)}
	r.cli = remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		r.pushed <- req
		return remoting.NewResponse(req, answer, "")
	}})
	t.Cleanup(r.cli.Close)
	hb := remoting.HeartbeatData{ClientID: clientID, ProducerDataSet: []*remoting.ProducerData{{GroupName: "RG"}}}
	if resp := tb.invokeWith(r.cli, remoting.HeartBeat, nil, remoting.MarshalBody(&hb)); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %s", resp.Code, resp.Remark)
	}
	return r
}

func TestReplyPushedToRequester(t *testing.T) {
	for _, code := range []int32{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
		tb := startBroker(t, nil)
		req := newReplyRequester(t, tb, "requester@1", remoting.Success)
		c := brokertest.NewClient(t, tb.Addr())
		topic := message.ReplyTopic(tb.opts.BrokerClusterName)
		props := brokertest.Props(message.PropReplyToClient, "requester@1", message.PropCorrelationID, "corr-1", message.PropMsgType, "reply")
		resp := c.Send(brokertest.Send{Code: code, Topic: topic, Body: []byte("the answer"), Props: props})
		if resp.Code != remoting.Success {
			t.Fatalf("code %d: reply answered %d %q", code, resp.Code, resp.Remark)
		}
		var push *remoting.Command
		select {
		case push = <-req.pushed:
		default:
			t.Fatalf("code %d: no PUSH_REPLY_MESSAGE_TO_CLIENT before the reply was answered", code)
		}
		if push.Code != remoting.PushReplyMessageToClient || string(push.Body) != "the answer" {
			t.Fatalf("push code %d body %q", push.Code, push.Body)
		}
		ext := push.Ext()
		got := message.ParseProperties(ext["properties"])
		if got[message.PropCorrelationID] != "corr-1" || got[message.PropPushReplyTime] == "" {
			t.Fatalf("pushed properties %v", got)
		}
		for _, k := range []string{"producerGroup", "topic", "bornHost", "storeHost", "storeTimestamp", "sysFlag", "queueId", "bornTimestamp", "flag"} {
			if ext[k] == "" {
				t.Errorf("push header lacks %s: %v", k, ext)
			}
		}
		if ext["storeHost"] != tb.Addr() || ext["topic"] != topic {
			t.Errorf("storeHost %q topic %q", ext["storeHost"], ext["topic"])
		}
		// storeReplyMessageEnable (default true): also stored, and the answer names the stored message.
		tb.waitDispatched()
		if id := resp.ExtFields["msgId"]; id == "0" || id == "" {
			t.Errorf("stored reply answered msgId %q", id)
		}
		if n := tb.Store().MaxOffsetInQueue(topic, 0); n != 1 {
			t.Errorf("reply topic holds %d messages, want 1", n)
		}
	}
}

func TestReplyRequesterGone(t *testing.T) {
	tb := startBroker(t, nil)
	c := brokertest.NewClient(t, tb.Addr())
	topic := message.ReplyTopic(tb.opts.BrokerClusterName)
	cases := []struct {
		props, remark string
	}{
		{brokertest.Props(message.PropReplyToClient, "nobody@1"), "push reply message fail, channel of <nobody@1> not found."},
		{brokertest.Props(message.PropCorrelationID, "c"), "reply message properties[REPLY_TO_CLIENT] is null"},
	}
	for i, tc := range cases {
		resp := c.Send(brokertest.Send{Code: remoting.SendReplyMessageV2, Topic: topic, Body: []byte("x"), Props: tc.props})
		if resp.Code != remoting.SystemError || resp.Remark != tc.remark {
			t.Fatalf("answer %d %q, want SYSTEM_ERROR %q", resp.Code, resp.Remark, tc.remark)
		}
		// Stored all the same, as stock.
		if off := brokertest.ExtInt(t, resp, "queueOffset"); off != int64(i) {
			t.Errorf("queueOffset %d, want %d", off, i)
		}
	}
}

func TestReplyRefusedByRequester(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.StoreReplyMessageEnable = false })
	newReplyRequester(t, tb, "requester@2", remoting.SystemError)
	ok := newReplyRequester(t, tb, "requester@3", remoting.Success)
	c := brokertest.NewClient(t, tb.Addr())
	topic := message.ReplyTopic(tb.opts.BrokerClusterName)
	resp := c.Send(brokertest.Send{Code: remoting.SendReplyMessage, Topic: topic, Body: []byte("x"),
		Props: brokertest.Props(message.PropReplyToClient, "requester@2")})
	if resp.Code != remoting.SystemError || resp.Remark != "push reply message to requester@2fail." {
		t.Fatalf("answer %d %q", resp.Code, resp.Remark)
	}
	resp = c.Send(brokertest.Send{Code: remoting.SendReplyMessage, Topic: topic, Body: []byte("y"),
		Props: brokertest.Props(message.PropReplyToClient, "requester@3")})
	if resp.Code != remoting.Success || resp.ExtFields["msgId"] != "0" || resp.ExtFields["queueOffset"] != "0" {
		t.Fatalf("answer %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	<-ok.pushed
	// storeReplyMessageEnable=false: nothing stored.
	if n := tb.Store().MaxOffsetInQueue(topic, 0); n != 0 {
		t.Errorf("reply topic holds %d messages, want 0", n)
	}
}

func TestTraceTopicOptions(t *testing.T) {
	o := DefaultOptions()
	if !o.TraceOn || o.TraceTopicEnable || o.MsgTraceTopicName != message.TopicTrace || !o.StoreReplyMessageEnable {
		t.Fatalf("defaults traceOn %v traceTopicEnable %v msgTraceTopicName %q storeReplyMessageEnable %v",
			o.TraceOn, o.TraceTopicEnable, o.MsgTraceTopicName, o.StoreReplyMessageEnable)
	}
	tb := startBroker(t, nil)
	if tb.Topics().Get(message.TopicTrace) != nil {
		t.Fatal("trace topic created without traceTopicEnable")
	}
	resp := brokertest.NewClient(t, tb.Addr()).MustSend(brokertest.Send{Topic: "TraceDefault", Body: []byte("x")})
	if resp.ExtFields[message.PropTraceOn] != "true" {
		t.Fatalf("send answered TRACE_ON=%q", resp.ExtFields[message.PropTraceOn])
	}
	for _, name := range []string{"", "MY_TRACE"} {
		tb := startBroker(t, func(o *Options) { o.TraceTopicEnable, o.MsgTraceTopicName = true, name })
		want := name
		if want == "" {
			want = message.TopicTrace
		}
		tc := tb.Topics().Get(want)
		if tc == nil || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != permReadWrite || !tb.Topics().IsSystemTopic(want) {
			t.Fatalf("trace topic %q: %+v", want, tc)
		}
	}
}

// TestReplyBeforeRequesterHeartbeat: a requester that has not heartbeated
// yet gets the reply on the connection its request came on.
func TestReplyBeforeRequesterHeartbeat(t *testing.T) {
	tb := startBroker(t, nil)
	pushed := make(chan *remoting.Command, 1)
	reqCli := remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		pushed <- req
		return remoting.NewResponse(req, remoting.Success, "")
	}})
	t.Cleanup(reqCli.Close)
	request := brokertest.Send{Topic: "RequestTopic", Body: []byte("ping"),
		Props: brokertest.Props(message.PropReplyToClient, "early@1", message.PropCorrelationID, "c-1")}
	if resp := tb.invokeWith(reqCli, remoting.SendMessageV2, request.Ext(), request.Body); resp.Code != remoting.Success {
		t.Fatalf("request: %d %q", resp.Code, resp.Remark)
	}
	c := brokertest.NewClient(t, tb.Addr())
	resp := c.Send(brokertest.Send{Code: remoting.SendReplyMessageV2, Topic: message.ReplyTopic(tb.opts.BrokerClusterName),
		Body: []byte("pong"), Props: brokertest.Props(message.PropReplyToClient, "early@1", message.PropCorrelationID, "c-1")})
	if resp.Code != remoting.Success {
		t.Fatalf("reply: %d %q", resp.Code, resp.Remark)
	}
	select {
	case push := <-pushed:
		if string(push.Body) != "pong" {
			t.Fatalf("pushed body %q", push.Body)
		}
	default:
		t.Fatal("the reply was not pushed to the request's connection")
	}
	// Once that connection is gone, the stock answer.
	reqCli.Close()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.requesters.find("early@1") == nil }, "the requester's connection to close")
	resp = c.Send(brokertest.Send{Code: remoting.SendReplyMessageV2, Topic: message.ReplyTopic(tb.opts.BrokerClusterName),
		Body: []byte("late"), Props: brokertest.Props(message.PropReplyToClient, "early@1")})
	if resp.Code != remoting.SystemError || resp.Remark != "push reply message fail, channel of <early@1> not found." {
		t.Fatalf("reply to a gone requester: %d %q", resp.Code, resp.Remark)
	}
}
