// Package clients is the broker's view of its clients: who is connected in
// which producer and consumer group, what the groups subscribe to, their
// committed offsets, subscription-group configs and orderly-queue locks, and
// the requests that read or change them.
//
//	ConsumerManager           HEART_BEAT consumer data, UNREGISTER_CLIENT, expiry
//	ProducerManager           HEART_BEAT producer data, transaction check targets
//	ConsumerOffsetManager     <root>/config/consumerOffset.json
//	SubscriptionGroupManager  <root>/config/subscriptionGroup.json
//	RebalanceLockManager      LOCK_BATCH_MQ / UNLOCK_BATCH_MQ
//	Service                   the request processors over all five (channel.go
//	                          shows how they relate)
//
// # Request codes (Service.Processors)
//
//	HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
//	UPDATE_CONSUMER_OFFSET, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, CHECK_CLIENT_CONFIG,
//	GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST,
//	UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//	GET_SUBSCRIPTIONGROUP_CONFIG, DELETE_SUBSCRIPTIONGROUP,
//	QUERY_TOPIC_CONSUME_BY_WHO, GET_ALL_CONSUMER_OFFSET, GET_CONSUME_STATS,
//	GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY (forwarded to the
//	client, call.go)
//
// The broker core reads the managers directly on its hot paths (a pull looks
// up the group config and subscription and commits the offset; a send to a
// %RETRY% topic reads the retry limit), through the exported Service fields.
//
// # Imports
//
// clients imports store (read-only lookups for consume stats and
// CONSUME_MESSAGE_DIRECTLY, WriteFileAtomic), remoting and internal/clock. It
// never imports package broker: the topic table it needs is the Topics
// interface, which the broker's TopicConfigManager satisfies.
package clients
