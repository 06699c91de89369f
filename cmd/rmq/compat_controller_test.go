package main

import (
	"testing"

	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/internal/testutil"
)

// The controller's rows of docs/compatibility.md: its served codes (the
// dispatch table of a controller that is built, not started) and notes.

func controllerCodes(t *testing.T) []int32 {
	t.Helper()
	o := controller.DefaultOptions()
	o.Peers = "n0-" + testutil.FreeAddr(t)
	o.SelfID = "n0"
	o.ListenHost = "127.0.0.1"
	o.ListenPort = testutil.FreePort(t)
	c, err := controller.New(o)
	if err != nil {
		t.Fatalf("controller.New: %v", err)
	}
	return c.ServedCodes()
}

const ctlTests = "`controller/cluster_test.go`, `controller/failover_test.go`, `controller/replicas_test.go`; oracle: `make controller-oracle`"

var controllerCodeNotes = map[int32]codeNote{
	904: { // BROKER_HEARTBEAT
		does:  "controller: served by every node (its own live table, never replicated): refreshes the broker's liveness, epoch, max offset and election priority. Name server: one without brokerId (slave-acting-master) renews the broker's registration; one with brokerId goes to the controller of `enableControllerInNamesrv`",
		diff:  "a connection that closes makes the brokers that heartbeat over it inactive at once (stock drops the first one it finds); a stock name server with a controller hands every 904 to the controller, which refuses one without brokerId",
		tests: ctlTests + "; `namesrv/acting_master_test.go`",
	},
	1001: {does: "served on the leader: the stock checks in the stock order (2013, 2002, 2000, 2001, 2003, 2006), then through the Raft log", tests: ctlTests},
	1002: {
		does:  "served on the leader: first election to the asking broker, then DefaultElectPolicy (sync state set, alive, epoch, offset, priority; `enableElectUncleanMaster`), 2011 when the master stays; NOTIFY_BROKER_ROLE_CHANGED to the alive members",
		diff:  "candidates are ordered by comparing offsets as numbers (stock casts their difference to int); ties go to the lower id",
		tests: ctlTests,
	},
	1003: {does: "served on the leader: the master fields when the master is alive; a changed address goes through the log", tests: ctlTests},
	1004: {does: "served on the leader (2008 for an unknown set)", tests: ctlTests},
	1005: {
		does:  "served by every node: group, leader id, the leader's remoting address, isLeader, peers",
		diff:  "the leader address is the leader's `listenPort` address, which it announces through the log (stock DLedger serves remoting on the peer port)",
		tests: ctlTests,
	},
	1006: {does: "served on the leader: BrokerReplicasInfo of the listed sets", tests: ctlTests},
	1011: {does: "served on the leader: the whole set, or `brokerControllerIdsToClean`; living brokers only with `isCleanLivingBroker`", tests: ctlTests},
	1012: {does: "served on the leader", tests: ctlTests},
	1013: {does: "served on the leader: 2014 on a taken id with another register check code", tests: ctlTests},
}

func init() {
	for code, n := range controllerCodeNotes {
		codeNotes[code] = n
	}
}
