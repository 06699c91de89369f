package grpcapi

import (
	"testing"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
)

// In controller mode a broker's configured brokerId is -1 and its id is
// what the controller gives it: 0 while master. The 5.x SDKs send only to
// queues whose broker id is 0 (PublishingLoadBalancer's
// MASTER_BROKER_ID filter), so the route of the broker's own group must
// carry its current id: with the configured -1 every send failed with "No
// writable message queue found" (the failover soak, rmq:rmq, SDK through
// the brokers' own endpoints).
func TestRouteCarriesControllerModeID(t *testing.T) {
	master, slave := testbroker.StartControllerPair(t)
	for _, c := range []struct {
		b      *testbroker.Broker
		master bool
	}{{master, true}, {slave, false}} {
		srv, err := startGRPC(c.b, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		ts := &testServer{b: c.b.Broker, srv: srv}
		ts.createTopic("CtlTopic", 2)
		route, err := dial(t, ts, false).QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "CtlTopic"}})
		if err != nil || route.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryRoute via %s: %v %v", ts.endpoint(), route.GetStatus(), err)
		}
		for _, mq := range route.MessageQueues {
			id := mq.GetBroker().GetId()
			if c.master && id != 0 || !c.master && id <= 0 {
				t.Fatalf("route via the %s (master %v) names broker id %d", ts.endpoint(), c.master, id)
			}
		}
	}
}
