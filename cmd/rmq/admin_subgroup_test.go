package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rmqio/rmq/grpcapi"
	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// updateSubGroup -o and -p set consumeMessageOrderly and groupRetryPolicy
// as the 5.x mqadmin does (UpdateSubGroupSubCommand, in the
// SubscriptionGroupConfig body); the broker stores them and its gRPC
// endpoint answers a consumer of the group with FIFO settings and the
// group's backoff, upon which the 5.x SDKs consume it orderly.
func TestAdminUpdateSubGroupOrderly(t *testing.T) {
	tc := testbroker.StartCluster(t, nil)
	for _, args := range [][]string{
		{"-g", "OrderlyG", "-o", "true", "-p", `{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":2000,"max":60000,"multiplier":3}}`},
		{"-g", "PlainG"}, // mqadmin's default: not orderly
	} {
		code, out, errOut := runCLI(t, append([]string{"admin", "updateSubGroup", "-b", tc.BrokerAddr()}, args...)...)
		if code != 0 {
			t.Fatalf("updateSubGroup %v: exit %d out %q err %q", args, code, out, errOut)
		}
	}
	subs := tc.Broker.Broker.Clients().SubGroups
	if g := subs.Find("OrderlyG"); g == nil || !g.ConsumeMessageOrderly || g.GroupRetryPolicy == nil || g.GroupRetryPolicy.Type != "EXPONENTIAL" ||
		g.GroupRetryPolicy.Exponential == nil || *g.GroupRetryPolicy.Exponential != (remoting.ExponentialRetryPolicy{Initial: 2000, Max: 60000, Multiplier: 3}) {
		t.Fatalf("OrderlyG stored as %+v", g)
	}
	if g := subs.Find("PlainG"); g == nil || g.ConsumeMessageOrderly || g.GroupRetryPolicy != nil {
		t.Fatalf("PlainG stored as %+v", g)
	}

	o := grpcapi.DefaultOptions()
	o.Port = 0
	srv := grpcapi.New(tc.Broker.Broker, o)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := v2.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for group, wantFIFO := range map[string]bool{"OrderlyG": true, "PlainG": false} {
		gctx := metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "cli-test-"+group)
		tel, err := c.Telemetry(gctx)
		if err != nil {
			t.Fatal(err)
		}
		ct := v2.ClientType_PUSH_CONSUMER
		if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
			ClientType: &ct, PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group}}},
		}}}); err != nil {
			t.Fatal(err)
		}
		got, err := tel.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if sub := got.GetSettings().GetSubscription(); sub == nil || sub.GetFifo() != wantFIFO {
			t.Fatalf("%s: settings answer %v, want fifo %v", group, got, wantFIFO)
		}
		// -p: the group's policy is the consumers' backoff.
		if exp := got.GetSettings().GetBackoffPolicy().GetExponentialBackoff(); (exp.GetInitial().AsDuration() == 2*time.Second && exp.GetMultiplier() == 3) != wantFIFO {
			t.Fatalf("%s: backoff %v", group, got.GetSettings().GetBackoffPolicy())
		}
		hb, err := c.Heartbeat(gctx, &v2.HeartbeatRequest{Group: &v2.Resource{Name: group}, ClientType: ct})
		if err != nil || hb.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("%s: heartbeat %v %v", group, hb, err)
		}
		_ = tel.CloseSend()
	}
}
