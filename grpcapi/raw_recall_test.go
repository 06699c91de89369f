package grpcapi

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// TestRawRecallMessage: a timer message's send answers a recall handle; a
// recall through it keeps the message from ever being delivered, while
// another timer message and a normal one arrive. Refusals answer the
// proxy's codes.
func TestRawRecallMessage(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	cs.createTypedTopic("RawRecall", 1, "MIXED")
	cs.createTypedTopic("RawRecallOther", 1, "MIXED")
	c := dial(t, cs.testServer, false)
	send := func(body string, after time.Duration) *v2.SendResultEntry {
		t.Helper()
		req := sendReq("RawRecall", []byte(body), "ID-"+body)
		if after > 0 {
			req.Messages[0].SystemProperties.MessageType = v2.MessageType_DELAY
			req.Messages[0].SystemProperties.DeliveryTimestamp = timestamppb.New(cs.clk.Now().Add(after))
		}
		resp, err := c.SendMessage(callCtx(t), req)
		if err != nil || resp.Status.Code != v2.Code_OK || len(resp.Entries) != 1 {
			t.Fatalf("send %s: %v %v", body, resp, err)
		}
		return resp.Entries[0]
	}
	recall := func(topic, handle string) *v2.RecallMessageResponse {
		t.Helper()
		resp, err := c.RecallMessage(callCtx(t), &v2.RecallMessageRequest{Topic: &v2.Resource{Name: topic}, RecallHandle: handle})
		if err != nil {
			t.Fatalf("RecallMessage: %v", err)
		}
		return resp
	}

	if e := send("normal", 0); e.RecallHandle != "" {
		t.Fatalf("a normal message got recall handle %q", e.RecallHandle)
	}
	cancelled := send("cancelled", 2*time.Second)
	kept := send("kept", time.Second)
	if cancelled.RecallHandle == "" || kept.RecallHandle == "" {
		t.Fatalf("timer messages without a recall handle: %q %q", cancelled.RecallHandle, kept.RecallHandle)
	}
	// The handle names its topic and broker.
	if r := recall("RawRecallOther", cancelled.RecallHandle); r.Status.Code != v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("recall on another topic: %v", r.Status)
	}
	if r := recall("RawRecall", cancelled.RecallHandle); r.Status.Code != v2.Code_OK || r.MessageId != "ID-cancelled" {
		t.Fatalf("recall: %v id %q", r.Status, r.MessageId)
	}

	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Timers().Stats().EnqueueBehind == 0 }, "the timer messages in the wheel")
	cs.clk.Advance(3 * time.Second)
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Timers().Stats().Pending == 0 }, "the wheel to drain")
	cs.waitCount(t, "RawRecall", 1, 2)
	r := receiveRaw(t, c, callCtx(t), recvReq("RawRecallGroup", "RawRecall", 30*time.Second))
	var bodies []string
	for _, m := range r.msgs {
		bodies = append(bodies, string(m.Body))
	}
	if r.status.GetCode() != v2.Code_OK || strings.Join(bodies, ",") != "normal,kept" {
		t.Fatalf("received %v %q; the recalled message must never arrive", r.status, bodies)
	}
	if n := cs.queueCounts("RawRecall", 1)[0]; n != 2 {
		t.Fatalf("%d messages on the topic, want 2", n)
	}

	for _, tc := range []struct {
		name, topic, handle string
		want                v2.Code
		remark              string
	}{
		{"already delivered", "RawRecall", kept.RecallHandle, v2.Code_INTERNAL_SERVER_ERROR, "already delivered"},
		{"empty handle", "RawRecall", "", v2.Code_INTERNAL_SERVER_ERROR, ""},
		{"not base64", "RawRecall", "not-base64!", v2.Code_INTERNAL_SERVER_ERROR, ""},
		{"too few fields", "RawRecall", "djEgUmF3UmVjYWxs", v2.Code_INTERNAL_SERVER_ERROR, ""},
		{"unknown topic", "NoSuchTopic", cancelled.RecallHandle, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "UNSPECIFIED"},
		{"empty topic", "", cancelled.RecallHandle, v2.Code_ILLEGAL_TOPIC, ""},
		{"system topic", message.TopicWheelTimer, cancelled.RecallHandle, v2.Code_ILLEGAL_TOPIC, ""},
	} {
		got := recall(tc.topic, tc.handle)
		if got.Status.Code != tc.want || !strings.Contains(got.Status.Message, tc.remark) || got.MessageId != "" {
			t.Errorf("%s: %v id %q, want %v with %q", tc.name, got.Status, got.MessageId, tc.want, tc.remark)
		}
	}
}
