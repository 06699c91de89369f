package grpcapi

import (
	"testing"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
)

// A SYNC_MASTER without a slave stores the message and answers as the 5.x
// proxy answers the client's SLAVE_NOT_AVAILABLE: HA_NOT_AVAILABLE.
func TestSendSyncMasterWithoutSlave(t *testing.T) {
	ts := startServer(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	ts.createTopic("HaGrpc", 1)
	c := dial(t, ts, false)
	resp, err := c.SendMessage(callCtx(t), sendReq("HaGrpc", []byte("x"), "ID-ha"))
	if err != nil || len(resp.Entries) != 1 || resp.Entries[0].Status.Code != v2.Code_HA_NOT_AVAILABLE ||
		resp.Entries[0].Status.Message != "send message failed, sendStatus=SLAVE_NOT_AVAILABLE" {
		t.Fatalf("send: %v %v", resp, err)
	}
	ts.waitCount(t, "HaGrpc", 1, 1)
}
