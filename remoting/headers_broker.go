package remoting

// Broker request headers of the pull, offset and query paths, the timer's
// recall, the stats views and rmq's clock control (broker/*.go serve them;
// the admin client sends them).

// PullMessageRequestHeader is PULL_MESSAGE's.
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string
	SubVersion           int64
	ExpressionType       string
}

func (r *PullMessageRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
	r.Topic = h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.QueueOffset = h.Int64("queueOffset", true, 0)
	r.MaxMsgNums = h.Int32("maxMsgNums", true, 0)
	r.SysFlag = h.Int32("sysFlag", true, 0)
	r.CommitOffset = h.Int64("commitOffset", true, 0)
	r.SuspendTimeoutMillis = h.Int64("suspendTimeoutMillis", true, 0)
	r.Subscription = h.Str("subscription", false)
	r.SubVersion = h.Int64("subVersion", true, 0)
	r.ExpressionType = h.Str("expressionType", false)
}

// QueueRequestHeader is the required topic and queueId of GET_MAX_OFFSET
// (GetMaxOffsetRequestHeader), GET_MIN_OFFSET (GetMinOffsetRequestHeader)
// and GET_EARLIEST_MSG_STORETIME (GetEarliestMsgStoretimeRequestHeader).
type QueueRequestHeader struct {
	Topic   string
	QueueID int32
}

func (r *QueueRequestHeader) decodeHeader(h *Header) {
	r.Topic, r.QueueID = h.Str("topic", true), h.Int32("queueId", true, 0)
}

// SearchOffsetRequestHeader is SEARCH_OFFSET_BY_TIMESTAMP's.
type SearchOffsetRequestHeader struct {
	Topic     string
	QueueID   int32
	Timestamp int64
}

func (r *SearchOffsetRequestHeader) decodeHeader(h *Header) {
	r.Topic, r.QueueID = h.Str("topic", true), h.Int32("queueId", true, 0)
	r.Timestamp = h.Int64("timestamp", true, 0)
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID's.
type ViewMessageRequestHeader struct{ Offset int64 }

func (r *ViewMessageRequestHeader) decodeHeader(h *Header) { r.Offset = h.Int64("offset", true, 0) }

// QueryConsumerOffsetRequestHeader is QUERY_CONSUMER_OFFSET's.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
}

func (r *QueryConsumerOffsetRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
}

// UpdateConsumerOffsetRequestHeader is UPDATE_CONSUMER_OFFSET's.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	CommitOffset         int64
}

func (r *UpdateConsumerOffsetRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.CommitOffset = h.Int64("commitOffset", true, 0)
}

// UniqueKeyQueryFlag is MixAll.UNIQUE_MSG_QUERY_FLAG, the ext field a client
// sets when it looks a message up by its client id (UNIQ_KEY).
const UniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// QueryMessageRequestHeader is QUERY_MESSAGE's; UniqueKeyFlag is the
// _UNIQUE_KEY_QUERY field a query by message id adds (exactly "true" turns
// it on, as the stock processor's equals test).
type QueryMessageRequestHeader struct {
	Topic                        string
	Key                          string
	MaxNum                       int32
	BeginTimestamp, EndTimestamp int64
	UniqueKeyFlag                bool
}

func (r *QueryMessageRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.Key = h.Str("key", true)
	r.MaxNum = h.Int32("maxNum", true, 0)
	r.BeginTimestamp = h.Int64("beginTimestamp", true, 0)
	r.EndTimestamp = h.Int64("endTimestamp", true, 0)
	r.UniqueKeyFlag = h.Str(UniqueKeyQueryFlag, false) == "true"
}

// RecallMessageRequestHeader is RECALL_MESSAGE's (5.x); BrokerName is
// RpcRequestHeader's bname, the broker the handle names.
type RecallMessageRequestHeader struct{ Topic, RecallHandle, ProducerGroup, BrokerName string }

func (r *RecallMessageRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.RecallHandle = h.Str("recallHandle", true)
	r.ProducerGroup = h.Str("producerGroup", false)
	r.BrokerName = h.Str("bname", false)
}

// ViewBrokerStatsDataRequestHeader is VIEW_BROKER_STATS_DATA's.
type ViewBrokerStatsDataRequestHeader struct{ StatsName, StatsKey string }

func (r *ViewBrokerStatsDataRequestHeader) decodeHeader(h *Header) {
	r.StatsName, r.StatsKey = h.Str("statsName", true), h.Str("statsKey", true)
}

// GetConsumeStatsInBrokerHeader is GET_BROKER_CONSUME_STATS's.
type GetConsumeStatsInBrokerHeader struct{ IsOrder bool }

func (r *GetConsumeStatsInBrokerHeader) decodeHeader(h *Header) { r.IsOrder = h.Bool("isOrder") }

// FastForwardRequestHeader is rmq's clock fast-forward request
// (broker/delivery.go); TimeoutMs is nil when absent or empty, so the
// broker applies its default.
type FastForwardRequestHeader struct {
	DurationMs int64
	TimeoutMs  *int64
}

func (r *FastForwardRequestHeader) decodeHeader(h *Header) {
	r.DurationMs = h.Int64("durationMs", true, 0)
	r.TimeoutMs = h.OptInt64("timeoutMs")
}
