package broker_test

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// A controller-mode slave refuses END_TRANSACTION with SLAVE_NOT_AVAILABLE,
// as 5.3.3 (EndTransactionProcessor reads the role changeToSlave set): its
// role comes from the controller at run time, not from brokerRole. Before,
// the configured role decided, and a controller-mode slave looked the half
// message up and answered SYSTEM_ERROR (seen in the failover soak: the
// stock proxy sent a commit to the old master, restarted as a slave).
func TestControllerSlaveRefusesEndTransaction(t *testing.T) {
	_, slave := testbroker.StartControllerPair(t)
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	req := remoting.NewRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "pg", "tranStateTableOffset": "0", "commitLogOffset": "0",
		"commitOrRollback": "8", "fromTransactionCheck": "false", "msgId": "00",
	}, nil)
	resp, err := cl.InvokeTimeout(slave.Broker.Addr(), req, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.SlaveNotAvailable {
		t.Fatalf("END_TRANSACTION on a controller-mode slave: code %d %q, want SLAVE_NOT_AVAILABLE (%d)", resp.Code, resp.Remark, remoting.SlaveNotAvailable)
	}
}
