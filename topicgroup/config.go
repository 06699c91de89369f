package topicgroup

// Permission bits (PermName.java).
const (
	PermPriority = 8
	PermRead     = 4
	PermWrite    = 2
	PermInherit  = 1
)

// PermString renders perm as PermName.perm2String: "RW-", "R--", "RWX" (the
// priority bit is not shown).
func PermString(perm int32) string {
	b := []byte("---")
	if perm&PermRead != 0 {
		b[0] = 'R'
	}
	if perm&PermWrite != 0 {
		b[1] = 'W'
	}
	if perm&PermInherit != 0 {
		b[2] = 'X'
	}
	return string(b)
}

// TopicConfig is a broker's configuration of one topic.
type TopicConfig struct {
	// Attributes are the 5.x topic attributes (message.type), absent from
	// the JSON when there are none, as a 4.x broker writes it. A map is
	// replaced, never modified in place, so copies of a config may share it.
	Attributes      map[string]string `json:"attributes,omitempty"`
	Order           bool              `json:"order"`
	Perm            int32             `json:"perm"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
}

// SubscriptionGroupConfig is a consumer group's broker-side configuration.
type SubscriptionGroupConfig struct {
	BrokerID               int64 `json:"brokerId"`
	ConsumeBroadcastEnable bool  `json:"consumeBroadcastEnable"`
	ConsumeEnable          bool  `json:"consumeEnable"`
	ConsumeFromMinEnable   bool  `json:"consumeFromMinEnable"`
	// ConsumeMessageOrderly (5.x) makes the group's 5.x consumers FIFO:
	// orderly pops, one batch of a queue in flight at a time.
	ConsumeMessageOrderly bool `json:"consumeMessageOrderly,omitempty"`
	// GroupRetryPolicy (5.x) spaces the redeliveries of the group's 5.x
	// consumers; nil is the stock default (CUSTOMIZED, default levels).
	GroupRetryPolicy               *GroupRetryPolicy `json:"groupRetryPolicy,omitempty"`
	GroupName                      string            `json:"groupName"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int32             `json:"retryMaxTimes"`
	RetryQueueNums                 int32             `json:"retryQueueNums"`
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
}

// GroupRetryPolicy is the 5.x SubscriptionGroupConfig groupRetryPolicy
// (org.apache.rocketmq.remoting.protocol.subscription.GroupRetryPolicy):
// Type "EXPONENTIAL" uses Exponential, anything else Customized; a nil
// policy means the stock defaults of its type.
type GroupRetryPolicy struct {
	Type        string                  `json:"type,omitempty"`
	Exponential *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	Customized  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
}

// ExponentialRetryPolicy is initial * multiplier^reconsumeTimes ms, at most
// max ms.
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// CustomizedRetryPolicy lists the delays in ms.
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// NewTopicConfig returns a topic config with the Java TopicConfig field
// initialisers (16 queues each way, read-write, SINGLE_TAG): what a config
// in a JSON list (UPDATE_AND_CREATE_TOPIC_LIST, mqadmin updateTopicList's
// file) has for the fields it leaves out.
func NewTopicConfig(topic string) *TopicConfig {
	return &TopicConfig{
		TopicName: topic, ReadQueueNums: 16, WriteQueueNums: 16, Perm: PermRead | PermWrite,
		TopicFilterType: "SINGLE_TAG",
	}
}

// NewSubscriptionGroupConfig returns a group config with the J4 defaults.
func NewSubscriptionGroupConfig(group string) *SubscriptionGroupConfig {
	return &SubscriptionGroupConfig{
		ConsumeBroadcastEnable: true, ConsumeEnable: true, ConsumeFromMinEnable: true,
		GroupName: group, NotifyConsumerIdsChangedEnable: true, RetryMaxTimes: 16,
		RetryQueueNums: 1, WhichBrokerWhenConsumeSlowly: 1,
	}
}

// SyncBrokerMemberTopicPrefix starts the topic every 5.x broker creates for
// its group, rmq_sys_SYNC_BROKER_MEMBER_<brokerName> (TopicValidator.
// SYNC_BROKER_MEMBER_GROUP_PREFIX): with compatibleWithOldNameSrv a broker
// reads its group's members from that topic's route, which a name server
// never rewrites for an acting master.
const SyncBrokerMemberTopicPrefix = "rmq_sys_SYNC_BROKER_MEMBER_"
