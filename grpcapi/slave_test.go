package grpcapi

import (
	"strings"
	"testing"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
)

// A SLAVE refuses a gRPC send as it refuses a remoting one (the store's
// SERVICE_NOT_AVAILABLE, which the proxy's code table leaves
// INTERNAL_SERVER_ERROR), and stores nothing.
func TestSendToSlaveRefused(t *testing.T) {
	ts := startServer(t, func(o *broker.Options) { o.BrokerRole, o.BrokerID = broker.RoleSlave, 1 })
	ts.createTopic("SlaveGrpc", 1)
	c := dial(t, ts, false)
	resp, err := c.SendMessage(callCtx(t), sendReq("SlaveGrpc", []byte("x"), "ID-slave"))
	if err != nil || resp.Status.Code != v2.Code_INTERNAL_SERVER_ERROR ||
		!strings.HasPrefix(resp.Status.Message, "service not available now.") {
		t.Fatalf("send: %v %v", resp, err)
	}
	if got := sum(ts.queueCounts("SlaveGrpc", 1)); got != 0 {
		t.Fatalf("%d messages stored", got)
	}
}
