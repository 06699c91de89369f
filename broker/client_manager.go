package broker

// ConsumerManager tracks consumer groups from heartbeats. Owned by the broker-clients work.
type ConsumerManager struct{}

// ProducerManager tracks producer groups from heartbeats. Owned by the broker-clients work.
type ProducerManager struct{}

// ConsumerOffsetManager stores committed offsets (consumerOffset.json). Owned by the broker-clients work.
type ConsumerOffsetManager struct{}

// SubscriptionGroupManager stores group configs (subscriptionGroup.json). Owned by the broker-clients work.
type SubscriptionGroupManager struct{}

// RebalanceLockManager holds orderly-consumer queue locks. Owned by the broker-clients work.
type RebalanceLockManager struct{}
