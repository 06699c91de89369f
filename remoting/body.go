package remoting

import (
	"bytes"
	"strconv"

	"github.com/rmqio/rmq/topicgroup"
)

// JSON bodies exchanged with clients, tools and brokers. Field names are the
// Java getter names (fastjson); see shared/reference/remoting-protocol.md §4.

// DataVersion orders registrations and config snapshots.
type DataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
}

// TopicConfigSerializeWrapper is the GET_ALL_TOPIC_CONFIG body and part of registration.
type TopicConfigSerializeWrapper struct {
	DataVersion      DataVersion                        `json:"dataVersion"`
	TopicConfigTable map[string]*topicgroup.TopicConfig `json:"topicConfigTable"`
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

// SubscriptionGroupWrapper is the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupWrapper struct {
	DataVersion DataVersion `json:"dataVersion"`
	// ForbiddenTable (5.x) is group -> topic -> forbidden permission bits
	// (UPDATE_AND_GET_GROUP_FORBIDDEN); absent while empty, as a 4.x broker
	// writes the file.
	ForbiddenTable         map[string]map[string]int32                    `json:"forbiddenTable,omitempty"`
	SubscriptionGroupTable map[string]*topicgroup.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
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
