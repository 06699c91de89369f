package apiv2sdk_test

import (
	"testing"

	sdkv2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/proto"

	"github.com/rmqio/rmq/grpcapi/apiv2"
)

// TestLinksBesideTheGoSDK: this test binary links apiv2 and the 5.x Go SDK's
// own generated package (protobuf-go panics at init when two files register
// one path or full name, which is what happened before apiv2 moved to a proto
// package of its own). On the wire both still speak
// apache.rocketmq.v2.MessagingService, and a message encoded by one decodes
// in the other.
func TestLinksBesideTheGoSDK(t *testing.T) {
	if got, want := apiv2.MessagingService_ServiceDesc.ServiceName, sdkv2.MessagingService_ServiceDesc.ServiceName; got != want {
		t.Fatalf("service name %q, the SDK's %q", got, want)
	}
	if got, want := apiv2.MessagingService_SendMessage_FullMethodName, "/apache.rocketmq.v2.MessagingService/SendMessage"; got != want {
		t.Fatalf("SendMessage method %q, want %q", got, want)
	}
	ours := &apiv2.SendMessageRequest{Messages: []*apiv2.Message{{
		Topic:            &apiv2.Resource{ResourceNamespace: "ns", Name: "T"},
		Body:             []byte("body"),
		SystemProperties: &apiv2.SystemProperties{MessageId: "01ABC", Tag: proto.String("tagA")},
		UserProperties:   map[string]string{"k": "v"},
	}}}
	b, err := proto.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	var theirs sdkv2.SendMessageRequest
	if err := proto.Unmarshal(b, &theirs); err != nil {
		t.Fatal(err)
	}
	m := theirs.GetMessages()[0]
	if m.GetTopic().GetName() != "T" || string(m.GetBody()) != "body" || m.GetSystemProperties().GetTag() != "tagA" || m.GetUserProperties()["k"] != "v" {
		t.Fatalf("the SDK decoded %v", m)
	}
}
