// Package replicas is the broker's side of 5.3.3 controller mode
// (enableControllerMode; broker/controller/ReplicasManager.java): it finds
// the controller leader (CONTROLLER_GET_METADATA_INFO, 1005), registers
// the broker in its broker set in persisted steps (GET_NEXT_BROKER_ID
// 1012, a temporary identity file, APPLY_BROKER_ID 1013, the identity
// file, REGISTER_BROKER 1003), heartbeats every controller (904), follows
// the set's master (GET_REPLICA_INFO 1004, ELECT_MASTER 1002,
// NOTIFY_BROKER_ROLE_CHANGED 1008) and, on the master, reports the sync
// state set the HA service proposes (ALTER_SYNC_STATE_SET 1001).
//
// Role changes happen only for a master epoch higher than the one the
// broker follows. To master: the HA service opens the new epoch before the
// broker takes writes, then the broker becomes brokerId 0, SYNC_MASTER
// with its master-only services, and registers with the name servers. To
// slave: the broker stops taking writes and its master-only services, then
// the HA service follows the new master, whose HA address the broker
// learns from the name server's register answer.
//
// The package declares what it needs: Transport (a remoting client), HA
// (the AutoSwitch HA service) and Broker (the broker's role switch); the
// broker implements them and serves 1007 and 1008 through the Manager.
package replicas
