package broker

// TopicConfigManager owns topic configs (topics.json). Owned by the broker-core work.
type TopicConfigManager struct{}
