package grpcapi

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/broker"
	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// aclFile is a plain_acl.yml with one account that may publish PubTopic,
// subscribe SubTopic with SubGroup, both on BothTopic, and nothing else.
const aclFile = `
accounts:
  - accessKey: grpcUser1
    secretKey: grpcSecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - PubTopic=PUB
      - SubTopic=SUB
      - BothTopic=PUB|SUB
    groupPerms:
      - SubGroup=SUB
`

// startACLServer is a consume server with aclEnable and aclFile's rules.
func startACLServer(t *testing.T, rules string) *consumeServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := startConsumeServer(t, func(o *broker.Options) { o.AclEnable, o.AclFile = true, path }, nil)
	for _, topic := range []string{"PubTopic", "SubTopic", "BothTopic", "DenyTopic"} {
		cs.createTopic(topic, 1)
	}
	return cs
}

// signedCtx is callCtx signed as a 5.x SDK signs it; an empty accessKey
// signs nothing.
func signedCtx(t *testing.T, accessKey, secretKey string) context.Context {
	ctx := callCtx(t)
	if accessKey == "" {
		return ctx
	}
	dt := time.Now().UTC().Format("20060102T150405Z")
	return metadata.AppendToOutgoingContext(ctx, acl.GrpcDateTime, dt, acl.GrpcAuthorization, acl.SignGrpc(accessKey, secretKey, dt))
}

func TestRawACLSend(t *testing.T) {
	cs := startACLServer(t, aclFile)
	c := dial(t, cs.testServer, false)
	cases := []struct {
		name, ak, sk, topic string
		want                v2.Code
	}{
		{"no credentials", "", "", "PubTopic", v2.Code_UNAUTHORIZED},
		{"wrong signature", "grpcUser1", "notTheSecret", "PubTopic", v2.Code_UNAUTHORIZED},
		{"unknown account", "nobody99", "grpcSecret1", "PubTopic", v2.Code_UNAUTHORIZED},
		{"default DENY", "grpcUser1", "grpcSecret1", "DenyTopic", v2.Code_UNAUTHORIZED},
		{"SUB only", "grpcUser1", "grpcSecret1", "SubTopic", v2.Code_UNAUTHORIZED},
		{"PUB", "grpcUser1", "grpcSecret1", "PubTopic", v2.Code_OK},
	}
	for _, k := range cases {
		resp, err := c.SendMessage(signedCtx(t, k.ak, k.sk), sendReq(k.topic, []byte("x"), "ID-"+k.name))
		if err != nil || resp.Status.Code != k.want {
			t.Fatalf("%s: %v %v, want %v", k.name, resp, err, k.want)
		}
	}
	cs.waitCount(t, "PubTopic", 1, 1)
	if n := cs.queueCounts("DenyTopic", 1)[0] + cs.queueCounts("SubTopic", 1)[0]; n != 0 {
		t.Fatalf("%d refused messages stored", n)
	}
	// Other RPCs are checked too: a route needs any permission on the topic.
	route, err := c.QueryRoute(signedCtx(t, "", ""), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "PubTopic"}})
	if err != nil || route.Status.Code != v2.Code_UNAUTHORIZED || len(route.MessageQueues) != 0 {
		t.Fatalf("unsigned route: %v %v", route, err)
	}
	route, err = c.QueryRoute(signedCtx(t, "grpcUser1", "grpcSecret1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "SubTopic"}})
	if err != nil || route.Status.Code != v2.Code_OK {
		t.Fatalf("signed route: %v %v", route, err)
	}
}

func TestRawACLReceive(t *testing.T) {
	cs := startACLServer(t, aclFile)
	c := dial(t, cs.testServer, false)
	send := func(topic string) {
		resp, err := c.SendMessage(signedCtx(t, "grpcUser1", "grpcSecret1"), sendReq(topic, []byte("x"), "ID-"+topic))
		if err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("send %s: %v %v", topic, resp, err)
		}
	}
	send("BothTopic")
	cs.waitCount(t, "BothTopic", 1, 1)
	cases := []struct {
		name, ak, sk, group, topic string
		want                       v2.Code
	}{
		{"no credentials", "", "", "SubGroup", "BothTopic", v2.Code_UNAUTHORIZED},
		{"wrong signature", "grpcUser1", "notTheSecret", "SubGroup", "BothTopic", v2.Code_UNAUTHORIZED},
		{"group DENY", "grpcUser1", "grpcSecret1", "OtherGroup", "BothTopic", v2.Code_UNAUTHORIZED},
		{"topic PUB only", "grpcUser1", "grpcSecret1", "SubGroup", "PubTopic", v2.Code_UNAUTHORIZED},
		{"topic DENY", "grpcUser1", "grpcSecret1", "SubGroup", "DenyTopic", v2.Code_UNAUTHORIZED},
		{"SUB on both", "grpcUser1", "grpcSecret1", "SubGroup", "BothTopic", v2.Code_OK},
	}
	for _, k := range cases {
		r := receiveRaw(t, c, signedCtx(t, k.ak, k.sk), recvReq(k.group, k.topic, 30*time.Second))
		if r.status.GetCode() != k.want {
			t.Fatalf("%s: status %v, want %v", k.name, r.status, k.want)
		}
		if k.want != v2.Code_OK && (len(r.msgs) != 0 || r.order != "s") {
			t.Fatalf("%s: refused stream answered %q", k.name, r.order)
		}
		if k.want == v2.Code_OK && len(r.msgs) != 1 {
			t.Fatalf("%s: %d messages", k.name, len(r.msgs))
		}
	}
	// An ack needs SUB on the topic and the group as well.
	ack, err := c.AckMessage(signedCtx(t, "grpcUser1", "grpcSecret1"), &v2.AckMessageRequest{
		Group: &v2.Resource{Name: "OtherGroup"}, Topic: &v2.Resource{Name: "BothTopic"},
		Entries: []*v2.AckMessageEntry{{MessageId: "x", ReceiptHandle: "y"}},
	})
	if err != nil || ack.Status.Code != v2.Code_UNAUTHORIZED {
		t.Fatalf("ack for a denied group: %v %v", ack, err)
	}
}

func TestRawACLTelemetry(t *testing.T) {
	cs := startACLServer(t, aclFile)
	c := dial(t, cs.testServer, false)
	pt := v2.ClientType_PRODUCER
	settings := func(topic string) *v2.TelemetryCommand {
		return &v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
			ClientType: &pt, PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: topic}}}},
		}}}
	}
	for _, k := range []struct {
		name, ak, topic string
		want            v2.Code
	}{
		{"unsigned", "", "PubTopic", v2.Code_UNAUTHORIZED},
		{"denied topic", "grpcUser1", "DenyTopic", v2.Code_UNAUTHORIZED},
		{"allowed", "grpcUser1", "PubTopic", v2.Code_OK},
	} {
		stream, err := c.Telemetry(signedCtx(t, k.ak, "grpcSecret1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(settings(k.topic)); err != nil {
			t.Fatal(err)
		}
		got, err := stream.Recv()
		if err != nil || got.GetStatus().GetCode() != k.want {
			t.Fatalf("%s: %v %v, want %v", k.name, got, err, k.want)
		}
		if k.want != v2.Code_OK {
			// The refusal ends the stream, as the proxy completes it.
			if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("%s: stream after the refusal: %v", k.name, err)
			}
		}
	}
}

// White addresses pass without credentials: the global list, and an
// account's own list without a signature.
func TestRawACLWhiteAddresses(t *testing.T) {
	cs := startACLServer(t, "globalWhiteRemoteAddresses:\n  - 127.0.0.*\n"+aclFile)
	c := dial(t, cs.testServer, false)
	resp, err := c.SendMessage(signedCtx(t, "", ""), sendReq("DenyTopic", []byte("x"), "ID-white"))
	if err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("global white address: %v %v", resp, err)
	}
	cs2 := startACLServer(t, `
accounts:
  - accessKey: whiteUser1
    secretKey: whiteSecret1
    whiteRemoteAddress: 127.0.0.1
    defaultTopicPerm: DENY
`)
	c2 := dial(t, cs2.testServer, false)
	ctx := metadata.AppendToOutgoingContext(callCtx(t), acl.GrpcAuthorization, "MQv2-HMAC-SHA1 Credential=whiteUser1")
	resp, err = c2.SendMessage(ctx, sendReq("DenyTopic", []byte("x"), "ID-white2"))
	if err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("account white address: %v %v", resp, err)
	}
	resp, err = c2.SendMessage(signedCtx(t, "", ""), sendReq("DenyTopic", []byte("x"), "ID-white3"))
	if err != nil || resp.Status.Code != v2.Code_UNAUTHORIZED {
		t.Fatalf("white account, no accessKey: %v %v", resp, err)
	}
}
