package grpcapi

import (
	"context"
	"crypto/tls"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/topicgroup"
)

// dial connects a raw MessagingService client, plaintext or TLS.
func dial(t *testing.T, ts *testServer, useTLS bool) v2.MessagingServiceClient {
	t.Helper()
	return v2.NewMessagingServiceClient(dialConn(t, ts, useTLS))
}

// dialConn is dial's connection; it closes with the test.
func dialConn(t *testing.T, ts *testServer, useTLS bool) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	conn, err := grpc.NewClient(ts.endpoint(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, mdClientID, "raw-test-client")
}

func sendReq(topic string, body []byte, id string) *v2.SendMessageRequest {
	return &v2.SendMessageRequest{Messages: []*v2.Message{{
		Topic: &v2.Resource{Name: topic}, Body: body,
		SystemProperties: &v2.SystemProperties{MessageId: id, MessageType: v2.MessageType_NORMAL},
	}}}
}

func TestRawPlaintextAndTLSOnOnePort(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("RawTopic", 3)
	for _, useTLS := range []bool{false, true} {
		c := dial(t, ts, useTLS)
		route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "RawTopic"}})
		if err != nil {
			t.Fatalf("tls=%v QueryRoute: %v", useTLS, err)
		}
		if route.Status.Code != v2.Code_OK || len(route.MessageQueues) != 3 {
			t.Fatalf("tls=%v route %v", useTLS, route)
		}
		mq := route.MessageQueues[2]
		addr := mq.Broker.Endpoints.Addresses[0]
		if mq.Id != 2 || mq.Permission != v2.Permission_READ_WRITE || addr.Host != "127.0.0.1" || int(addr.Port) != int(ts.srv.Addr().Port()) {
			t.Fatalf("tls=%v queue %v", useTLS, mq)
		}
		resp, err := c.SendMessage(callCtx(t), sendReq("RawTopic", []byte("x"), "ID-raw"))
		if err != nil || resp.Status.Code != v2.Code_OK || len(resp.Entries) != 1 || resp.Entries[0].MessageId != "ID-raw" {
			t.Fatalf("tls=%v send: %v %v", useTLS, resp, err)
		}
	}
	ts.waitCount(t, "RawTopic", 3, 2)
}

func TestRawRouteQueuesByPermission(t *testing.T) {
	ts := startServer(t, nil)
	ts.b.Topics().Update(remotingTopic{name: "Uneven", read: 3, write: 1, perm: 6}.config())
	c := dial(t, ts, false)
	route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Uneven"}})
	if err != nil {
		t.Fatal(err)
	}
	var perms []v2.Permission
	for i, mq := range route.MessageQueues {
		if mq.Id != int32(i) {
			t.Fatalf("queue ids not renumbered from 0: %v", route.MessageQueues)
		}
		perms = append(perms, mq.Permission)
	}
	want := []v2.Permission{v2.Permission_READ, v2.Permission_READ, v2.Permission_READ_WRITE}
	if len(perms) != len(want) || perms[0] != want[0] || perms[1] != want[1] || perms[2] != want[2] {
		t.Fatalf("permissions %v, want %v", perms, want)
	}
}

// withMsg is a valid send to BadTopic changed by change.
func withMsg(change func(*v2.Message)) *v2.SendMessageRequest {
	req := sendReq("BadTopic", []byte("x"), "ID-changed")
	change(req.Messages[0])
	return req
}

func TestRawBadInput(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("BadTopic", 1)
	ts.b.Topics().Update(remotingTopic{name: "ReadOnlyTopic", read: 1, write: 1, perm: topicgroup.PermRead}.config())
	c := dial(t, ts, false)
	cases := []struct {
		name string
		req  *v2.SendMessageRequest
		want v2.Code
	}{
		{"no message", &v2.SendMessageRequest{}, v2.Code_MESSAGE_CORRUPTED},
		{"unknown topic", sendReq("NoSuchTopic", []byte("x"), "ID1"), v2.Code_TOPIC_NOT_FOUND},
		{"illegal topic", sendReq("bad topic!", []byte("x"), "ID2"), v2.Code_ILLEGAL_TOPIC},
		{"system topic", sendReq("RMQ_SYS_TRANS_HALF_TOPIC", []byte("x"), "ID3"), v2.Code_ILLEGAL_TOPIC},
		{"no message id", sendReq("BadTopic", []byte("x"), ""), v2.Code_ILLEGAL_MESSAGE_ID},
		{"oversize body", sendReq("BadTopic", make([]byte, 64<<10+1), "ID4"), v2.Code_MESSAGE_BODY_TOO_LARGE},
		{"empty body", sendReq("BadTopic", nil, "ID7"), v2.Code_MESSAGE_BODY_EMPTY},
		{"blank message id", sendReq("BadTopic", []byte("x"), " "), v2.Code_ILLEGAL_MESSAGE_ID},
		{"too many properties", withMsg(func(m *v2.Message) {
			m.UserProperties = map[string]string{}
			for i := range 129 {
				m.UserProperties["k"+strconv.Itoa(i)] = "v"
			}
		}), v2.Code_MESSAGE_PROPERTIES_TOO_LARGE},
		{"oversize properties", withMsg(func(m *v2.Message) {
			m.UserProperties = map[string]string{"big": strings.Repeat("v", 16<<10-len("big")-len("tag"))}
			tag := "tagX" // one byte over 16 KiB with the tag
			m.SystemProperties.Tag = &tag
		}), v2.Code_MESSAGE_PROPERTIES_TOO_LARGE},
		{"control character in a property value", withMsg(func(m *v2.Message) { m.UserProperties = map[string]string{"k": "a\x01"} }), v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"tag with |", withMsg(func(m *v2.Message) { tag := "a|b"; m.SystemProperties.Tag = &tag }), v2.Code_ILLEGAL_MESSAGE_TAG},
		{"blank tag", withMsg(func(m *v2.Message) { tag := "  "; m.SystemProperties.Tag = &tag }), v2.Code_ILLEGAL_MESSAGE_TAG},
		{"blank key", withMsg(func(m *v2.Message) { m.SystemProperties.Keys = []string{"k", " "} }), v2.Code_ILLEGAL_MESSAGE_KEY},
		{"blank message group", withMsg(func(m *v2.Message) { g := " "; m.SystemProperties.MessageGroup = &g }), v2.Code_ILLEGAL_MESSAGE_GROUP},
		{"long message group", withMsg(func(m *v2.Message) { g := strings.Repeat("g", 64); m.SystemProperties.MessageGroup = &g }), v2.Code_ILLEGAL_MESSAGE_GROUP},
		{"delivery beyond a day", withMsg(func(m *v2.Message) {
			m.SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(25 * time.Hour))
		}), v2.Code_ILLEGAL_DELIVERY_TIME},
		{"transaction recovery beyond an hour", withMsg(func(m *v2.Message) {
			m.SystemProperties.MessageType = v2.MessageType_TRANSACTION
			m.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(time.Hour + time.Second)
		}), v2.Code_BAD_REQUEST},
		{"topic not writable", sendReq("ReadOnlyTopic", []byte("x"), "ID8"), v2.Code_FORBIDDEN},
	}
	for _, tc := range cases {
		resp, err := c.SendMessage(callCtx(t), tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.Status.Code != tc.want || len(resp.Entries) != 0 {
			t.Fatalf("%s: status %v, want %v", tc.name, resp.Status, tc.want)
		}
	}
	reserved := sendReq("BadTopic", []byte("x"), "ID5")
	reserved.Messages[0].UserProperties = map[string]string{"UNIQ_KEY": "mine"}
	if resp, err := c.SendMessage(callCtx(t), reserved); err != nil || resp.Status.Code != v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY {
		t.Fatalf("system property key: %v %v", resp, err)
	}
	route, err := c.QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "NoSuchTopic"}})
	if err != nil || route.Status.Code != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route of unknown topic: %v %v", route, err)
	}
	if n := sum(ts.queueCounts("BadTopic", 1)); n != 0 {
		t.Fatalf("%d messages stored from refused sends", n)
	}
	// The just-in-limit property size is taken.
	fits := withMsg(func(m *v2.Message) {
		m.UserProperties = map[string]string{"big": strings.Repeat("v", 16<<10-len("big")-len("tag"))}
		tag := "tag"
		m.SystemProperties.Tag = &tag
	})
	if resp, err := c.SendMessage(callCtx(t), fits); err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("16 KiB of properties: %v %v", resp, err)
	}
	// QueryAssignment: unknown topic, illegal group, no readable queue.
	for _, tc := range []struct {
		topic, group string
		want         v2.Code
	}{
		{"NoSuchTopic", "G", v2.Code_TOPIC_NOT_FOUND},
		{"BadTopic", "bad group!", v2.Code_ILLEGAL_CONSUMER_GROUP},
		{"WriteOnlyTopic", "G", v2.Code_FORBIDDEN},
	} {
		ts.b.Topics().Update(remotingTopic{name: "WriteOnlyTopic", read: 1, write: 1, perm: topicgroup.PermWrite}.config())
		qa, err := c.QueryAssignment(callCtx(t), &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: tc.topic}, Group: &v2.Resource{Name: tc.group}})
		if err != nil || qa.Status.Code != tc.want {
			t.Fatalf("assignment of %s/%s: %v %v, want %v", tc.topic, tc.group, qa, err, tc.want)
		}
	}
	// Requests without x-mq-client-id.
	noID, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if hb, err := c.Heartbeat(noID, &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER}); err != nil || hb.Status.Code != v2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("heartbeat without client id: %v %v", hb, err)
	}
	if nt, err := c.NotifyClientTermination(noID, &v2.NotifyClientTerminationRequest{}); err != nil || nt.Status.Code != v2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("termination without client id: %v %v", nt, err)
	}
	// Heartbeat before Settings: the SDKs re-send their Settings on this code.
	hb, err := c.Heartbeat(callCtx(t), &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER})
	if err != nil || hb.Status.Code != v2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat before settings: %v %v", hb, err)
	}
	end, err := c.EndTransaction(callCtx(t), &v2.EndTransactionRequest{Topic: &v2.Resource{Name: "BadTopic"}, TransactionId: "nope", Resolution: v2.TransactionResolution_COMMIT})
	if err != nil || end.Status.Code != v2.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("end of unknown transaction: %v %v", end, err)
	}
	for _, tc := range []struct {
		topic, id string
		want      v2.Code
	}{
		{"NoSuchTopic", "nope", v2.Code_INVALID_TRANSACTION_ID}, // no data for it
		{"bad topic!", "nope", v2.Code_ILLEGAL_TOPIC},
		{"BadTopic", " ", v2.Code_INVALID_TRANSACTION_ID},
	} {
		end, err := c.EndTransaction(callCtx(t), &v2.EndTransactionRequest{Topic: &v2.Resource{Name: tc.topic}, TransactionId: tc.id, Resolution: v2.TransactionResolution_COMMIT})
		if err != nil || end.Status.Code != tc.want {
			t.Fatalf("end of %q on %s: %v %v, want %v", tc.id, tc.topic, end, err, tc.want)
		}
	}
	// An ack without topic: ILLEGAL_TOPIC in the response status.
	if ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{}); err != nil || ack.Status.Code != v2.Code_ILLEGAL_TOPIC {
		t.Fatalf("AckMessage without topic: %v %v", ack, err)
	}
	// A malformed request (not a protobuf message): gRPC refuses it, the
	// endpoint stays up.
	conn, err := grpc.NewClient(ts.endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out v2.QueryRouteResponse
	err = conn.Invoke(callCtx(t), "/apache.rocketmq.v2.MessagingService/QueryRoute", &rawBytes{b: []byte{0xff, 0xff, 0xff}}, &out, grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.Internal {
		t.Fatalf("malformed request answered %v", err)
	}
	// The same on the Telemetry stream: it ends with INTERNAL.
	tel, err := conn.NewStream(callCtx(t), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		"/apache.rocketmq.v2.MessagingService/Telemetry", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.SendMsg(&rawBytes{b: []byte{0x0a, 0xff, 0xff}}); err != nil {
		t.Fatal(err)
	}
	if err := tel.RecvMsg(&rawBytes{}); status.Code(err) != codes.Internal {
		t.Fatalf("malformed telemetry command answered %v", err)
	}
	// Still serving.
	if resp, err := c.SendMessage(callCtx(t), sendReq("BadTopic", []byte("ok"), "ID6")); err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("send after bad input: %v %v", resp, err)
	}
}

func TestRawTelemetrySettings(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("TeleTopic", 1)
	c := dial(t, ts, true)
	ctx := callCtx(t)
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pt := v2.ClientType_PRODUCER
	if err := stream.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &pt, PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: "TeleTopic"}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	pub := got.GetSettings().GetPublishing()
	if got.Status.Code != v2.Code_OK || pub.GetMaxBodySize() != 64<<10 || !pub.GetValidateMessageType() || got.GetSettings().GetBackoffPolicy().GetMaxAttempts() != 3 {
		t.Fatalf("settings answer %v", got)
	}
	hb, err := c.Heartbeat(ctx, &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER})
	if err != nil || hb.Status.Code != v2.Code_OK {
		t.Fatalf("heartbeat after settings: %v %v", hb, err)
	}
	// Settings with neither publishing nor subscription end the stream.
	bad, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &pt}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("empty settings: %v", err)
	}
}
