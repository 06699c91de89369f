// Package controller is rmq's RocketMQ 5 controller: the broker registry,
// master election and sync state sets of a controller-mode broker group
// (RIP-44), served with the stock 5.3.3 controller request codes
// (ControllerRequestProcessor) so that Java 5.3.3 brokers in controller
// mode, mqadmin and rmq's own tools use it unchanged.
//
// The state is 5.3.3 ReplicasInfoManager's (state.go: every broker set's
// members by controller-assigned id, its master, master epoch, sync state
// set and its epoch). It changes only through events replicated by a
// hashicorp/raft log (controller.go: propose, fsm): the leader checks a
// request against the state as stock does (replicas.go), appends the
// events it implies, and answers once they are applied. Three nodes
// survive the loss of one. Broker liveness (heartbeat.go) is each node's
// own, as in stock: brokers heartbeat every controller.
//
// Differences from stock, by design: the Raft transport listens on the
// peer address of controllerDLegerPeers (or jRaftInitConf) and the
// remoting server on listenPort (stock DLedger serves both on the peer
// port), so brokers' controllerAddr names listenPort; the leader announces
// its remoting address through the log so that every node can answer
// GET_METADATA_INFO with it. The log is rmq's own JSON, not stock's
// Hessian events, so a node cannot join a Java controller group.
package controller
