package main

import (
	"testing"

	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/topicgroup"
)

// updateSubGroup -o and -p set consumeMessageOrderly and groupRetryPolicy
// as the 5.x mqadmin does (UpdateSubGroupSubCommand, in the
// SubscriptionGroupConfig body), and the broker stores them. What the gRPC
// endpoint makes of them: grpcapi's TestRawFIFOGroup and
// TestRawAutoRenewStopsAtMaxTime.
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
		g.GroupRetryPolicy.Exponential == nil || *g.GroupRetryPolicy.Exponential != (topicgroup.ExponentialRetryPolicy{Initial: 2000, Max: 60000, Multiplier: 3}) {
		t.Fatalf("OrderlyG stored as %+v", g)
	}
	if g := subs.Find("PlainG"); g == nil || g.ConsumeMessageOrderly || g.GroupRetryPolicy != nil {
		t.Fatalf("PlainG stored as %+v", g)
	}
}
