// Package brokeradmin serves the broker's admin requests about topics, its
// own runtime and stored messages (J4 AdminBrokerProcessor and
// QueryMessageProcessor), the requests mqadmin's topic, cluster and message
// commands send. Its name keeps it apart from rmq/admin, the client side of
// the same requests.
//
//	topic.go          topic admin, topic stats, runtime info and its rates
//	query_message.go  QUERY_MESSAGE through the store's key index
//	service.go        Service, Options, Stats and the interfaces it needs
//
// # Request codes (Service.Processors)
//
//	UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
//	GET_ALL_TOPIC_CONFIG (21), GET_TOPIC_CONFIG (351),
//	GET_TOPIC_STATS_INFO (202), GET_BROKER_RUNTIME_INFO (28),
//	QUERY_MESSAGE (12)
//
// The admin requests about groups live in package clients, the transaction
// ones (RESUME_CHECK_HALF_MESSAGE) in package transaction, and
// GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG in package broker
// (runtime_config.go), which owns the options they print and change.
//
// # Imports
//
// brokeradmin imports store, remoting and internal/clock. It never imports
// package broker or its other subpackages: the broker passes the topic table
// (Topics), the offset manager (Offsets), its topic-name check and timer
// runtime info as functions, and counts sends and pulls into Stats.
package brokeradmin
