package grpcapi

import (
	"slices"
	"testing"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
)

// TestRawTopicMessageType: with enableTopicMessageTypeCheck the route names the topic's message.type as the
// queues' accepted types, the Settings ask producers to validate, and a send of another kind is refused with
// MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (an untyped topic counts as NORMAL).
func TestRawTopicMessageType(t *testing.T) {
	ts := startServer(t, func(o *broker.Options) { o.EnableTopicMessageTypeCheck = true })
	fifo := remotingTopic{name: "FifoTyped", read: 2, write: 2, perm: 6}.config()
	fifo.Attributes = map[string]string{"message.type": "FIFO"}
	ts.b.Topics().Update(fifo)
	ts.createTopic("Plain", 2)
	c := dial(t, ts, false)

	for topic, want := range map[string][]v2.MessageType{"FifoTyped": {v2.MessageType_FIFO}, "Plain": acceptAll} {
		route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
		if err != nil || route.Status.Code != v2.Code_OK {
			t.Fatalf("route %s: %v %v", topic, route, err)
		}
		for _, mq := range route.MessageQueues {
			if !slices.Equal(mq.AcceptMessageTypes, want) {
				t.Fatalf("%s queue %d accepts %v, want %v", topic, mq.Id, mq.AcceptMessageTypes, want)
			}
		}
	}

	stream, err := c.Telemetry(callCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	pt := v2.ClientType_PRODUCER
	if err := stream.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &pt, PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: "FifoTyped"}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := stream.Recv(); err != nil || !got.GetSettings().GetPublishing().GetValidateMessageType() {
		t.Fatalf("settings answer %v %v: want validate_message_type", got, err)
	}

	fifoReq := func(topic, id string) *v2.SendMessageRequest {
		req := sendReq(topic, []byte("f"), id)
		sp := req.Messages[0].SystemProperties
		group := "g1"
		sp.MessageType, sp.MessageGroup = v2.MessageType_FIFO, &group
		return req
	}
	for _, tc := range []struct {
		name string
		req  *v2.SendMessageRequest
		want v2.Code
		msg  string
	}{
		{"normal to FIFO", sendReq("FifoTyped", []byte("n"), "ID-n1"), v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			"TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL"},
		{"FIFO to FIFO", fifoReq("FifoTyped", "ID-f1"), v2.Code_OK, "OK"},
		{"normal to untyped", sendReq("Plain", []byte("n"), "ID-n2"), v2.Code_OK, "OK"},
		{"FIFO to untyped", fifoReq("Plain", "ID-f2"), v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			"TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO"},
	} {
		resp, err := c.SendMessage(callCtx(t), tc.req)
		if err != nil || resp.Status.Code != tc.want || resp.Status.Message != tc.msg {
			t.Errorf("%s: %v %v, want %v %q", tc.name, resp, err, tc.want, tc.msg)
		}
	}
	ts.waitCount(t, "FifoTyped", 2, 1)
	ts.waitCount(t, "Plain", 2, 1)
	if tc := ts.b.Topics().Get("FifoTyped"); tc == nil || tc.Attributes["message.type"] != "FIFO" {
		t.Fatalf("topic config %+v", tc)
	}
}

// TestRawTopicMessageTypeCheckByDefault: the gRPC front end checks the
// topic message type with default options, as the stock proxy
// (ProxyConfig enableTopicMessageTypeCheck=true), while the broker's
// remoting port, as the stock broker's, does not.
func TestRawTopicMessageTypeCheckByDefault(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("Untyped", 1)
	c := dial(t, ts, false)
	req := sendReq("Untyped", []byte("f"), "ID-d1")
	group := "g1"
	req.Messages[0].SystemProperties.MessageType, req.Messages[0].SystemProperties.MessageGroup = v2.MessageType_FIFO, &group
	resp, err := c.SendMessage(callCtx(t), req)
	if err != nil || resp.Status.Code != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("FIFO send to an untyped topic: %v %v, want MESSAGE_PROPERTY_CONFLICT_WITH_TYPE", resp, err)
	}
	if ts.b.Options().EnableTopicMessageTypeCheck {
		t.Fatal("the broker's own (remoting) check is on by default")
	}
}
