package remoting

import (
	"bytes"
	"strconv"
)

// JSON bodies exchanged with clients, tools and brokers. Field names are the
// Java getter names (fastjson); see shared/reference/remoting-protocol.md §4.

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

// DataVersion orders registrations and config snapshots.
type DataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
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

// TopicConfigSerializeWrapper is the GET_ALL_TOPIC_CONFIG body and part of registration.
type TopicConfigSerializeWrapper struct {
	DataVersion      DataVersion             `json:"dataVersion"`
	TopicConfigTable map[string]*TopicConfig `json:"topicConfigTable"`
}

// RegisterBrokerBody is the uncompressed REGISTER_BROKER body.
type RegisterBrokerBody struct {
	FilterServerList            []string                    `json:"filterServerList"`
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
}

// QueueData is one broker's queues of a topic in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int32  `json:"perm"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
	WriteQueueNums int32  `json:"writeQueueNums"`
}

// BrokerData is one broker group: brokerId → address, 0 being the master.
// encoding/json writes the int64 keys quoted and sorted, with no whitespace,
// which both the Java (fastjson) and Go client parsers accept.
type BrokerData struct {
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
	BrokerName  string           `json:"brokerName"`
	Cluster     string           `json:"cluster"`
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC body.
type TopicRouteData struct {
	BrokerDatas       []*BrokerData       `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []*QueueData        `json:"queueDatas"`
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO body.
type ClusterInfo struct {
	BrokerAddrTable  map[string]*BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string    `json:"clusterAddrTable"`
}

// TopicList is the body of the topic-list requests.
type TopicList struct {
	BrokerAddr string   `json:"brokerAddr,omitempty"`
	TopicList  []string `json:"topicList"`
}

// KVTable is a string map body.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// MessageQueue names one queue.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// FlexInt64 decodes a JSON number or a quoted number (the Go client sends
// codeSet elements as strings).
type FlexInt64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (f *FlexInt64) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if len(b) == 0 || string(b) == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		fl, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil {
			return err
		}
		n = int64(fl)
	}
	*f = FlexInt64(n)
	return nil
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool        `json:"classFilterMode"`
	CodeSet         []FlexInt64 `json:"codeSet"`
	ExpressionType  string      `json:"expressionType"`
	SubString       string      `json:"subString"`
	SubVersion      int64       `json:"subVersion"`
	TagsSet         []string    `json:"tagsSet"`
	Topic           string      `json:"topic"`
}

// ConsumerData is one group's part of a heartbeat.
type ConsumerData struct {
	ConsumeFromWhere    string              `json:"consumeFromWhere"`
	ConsumeType         string              `json:"consumeType"`
	GroupName           string              `json:"groupName"`
	MessageModel        string              `json:"messageModel"`
	SubscriptionDataSet []*SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool                `json:"unitMode"`
}

// ProducerData is one producer group in a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// HeartbeatData is the HEART_BEAT body.
type HeartbeatData struct {
	ClientID        string          `json:"clientID"`
	ConsumerDataSet []*ConsumerData `json:"consumerDataSet"`
	ProducerDataSet []*ProducerData `json:"producerDataSet"`
}

// LockBatchRequestBody is the LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body.
type LockBatchRequestBody struct {
	ClientID       string          `json:"clientId"`
	ConsumerGroup  string          `json:"consumerGroup"`
	MqSet          []*MessageQueue `json:"mqSet"`
	OnlyThisBroker bool            `json:"onlyThisBroker,omitempty"`
}

// LockBatchResponseBody is the LOCK_BATCH_MQ response body.
type LockBatchResponseBody struct {
	LockOKMQSet []*MessageQueue `json:"lockOKMQSet"`
}

// ConsumerListBody is the GET_CONSUMER_LIST_BY_GROUP response body.
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// Connection describes one client connection (admin bodies).
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is the GET_CONSUMER_CONNECTION_LIST body.
type ConsumerConnection struct {
	ConnectionSet     []*Connection                `json:"connectionSet"`
	ConsumeFromWhere  string                       `json:"consumeFromWhere"`
	ConsumeType       string                       `json:"consumeType"`
	MessageModel      string                       `json:"messageModel"`
	SubscriptionTable map[string]*SubscriptionData `json:"subscriptionTable"`
}

// ProducerConnection is the GET_PRODUCER_CONNECTION_LIST body.
type ProducerConnection struct {
	ConnectionSet []*Connection `json:"connectionSet"`
}

// GroupList is the QUERY_TOPIC_CONSUME_BY_WHO body.
type GroupList struct {
	GroupList []string `json:"groupList"`
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

// SubscriptionGroupWrapper is the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper struct {
	DataVersion DataVersion `json:"dataVersion"`
	// ForbiddenTable (5.x) is group -> topic -> forbidden permission bits
	// (UPDATE_AND_GET_GROUP_FORBIDDEN); absent while empty, as a 4.x broker
	// writes the file.
	ForbiddenTable         map[string]map[string]int32         `json:"forbiddenTable,omitempty"`
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
}

// MarshalBody encodes v as compact JSON (the form every client parser accepts).
func MarshalBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("remoting: marshal body: " + err.Error())
	}
	return b
}

// UnmarshalBody decodes a JSON body leniently (unknown fields are ignored).
func UnmarshalBody(b []byte, v any) error { return json.Unmarshal(b, v) }
