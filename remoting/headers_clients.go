package remoting

// Broker request headers of the client-management, group and consumer-admin
// codes (broker/clients and broker/brokeradmin serve them).

// UnregisterClientRequestHeader is UNREGISTER_CLIENT's; a group that is
// absent is nil (the client was not in that role).
type UnregisterClientRequestHeader struct {
	ClientID      string
	ProducerGroup *string
	ConsumerGroup *string
}

func (r *UnregisterClientRequestHeader) decodeHeader(h *Header) {
	r.ClientID = h.Str("clientID", true)
	r.ProducerGroup = h.OptStr("producerGroup")
	r.ConsumerGroup = h.OptStr("consumerGroup")
}

// ConsumerGroupRequestHeader is the required consumerGroup of
// GET_CONSUMER_LIST_BY_GROUP (GetConsumerListByGroupRequestHeader) and
// GET_CONSUMER_CONNECTION_LIST (GetConsumerConnectionListRequestHeader).
type ConsumerGroupRequestHeader struct{ ConsumerGroup string }

func (r *ConsumerGroupRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
}

// GetProducerConnectionListRequestHeader is GET_PRODUCER_CONNECTION_LIST's.
type GetProducerConnectionListRequestHeader struct{ ProducerGroup string }

func (r *GetProducerConnectionListRequestHeader) decodeHeader(h *Header) {
	r.ProducerGroup = h.Str("producerGroup", true)
}

// GetSubscriptionGroupConfigRequestHeader is GET_SUBSCRIPTIONGROUP_CONFIG's (5.x).
type GetSubscriptionGroupConfigRequestHeader struct{ Group string }

func (r *GetSubscriptionGroupConfigRequestHeader) decodeHeader(h *Header) {
	r.Group = h.Str("group", true)
}

// DeleteSubscriptionGroupRequestHeader is DELETE_SUBSCRIPTIONGROUP's.
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName    string
	RemoveOffset bool
}

func (r *DeleteSubscriptionGroupRequestHeader) decodeHeader(h *Header) {
	r.GroupName = h.Str("groupName", true)
	r.RemoveOffset = h.Bool("removeOffset")
}

// GetConsumerRunningInfoRequestHeader is GET_CONSUMER_RUNNING_INFO's.
type GetConsumerRunningInfoRequestHeader struct{ ConsumerGroup, ClientID string }

func (r *GetConsumerRunningInfoRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
	r.ClientID = h.Str("clientId", true)
}

// ConsumeMessageDirectlyResultRequestHeader is CONSUME_MESSAGE_DIRECTLY's.
type ConsumeMessageDirectlyResultRequestHeader struct{ ConsumerGroup, ClientID, MsgID string }

func (r *ConsumeMessageDirectlyResultRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
	r.ClientID = h.Str("clientId", false)
	r.MsgID = h.Str("msgId", false)
}

// GetConsumeStatsRequestHeader is GET_CONSUME_STATS's.
type GetConsumeStatsRequestHeader struct{ ConsumerGroup, Topic string }

func (r *GetConsumeStatsRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
	r.Topic = h.Str("topic", false)
}

// ResetOffsetRequestHeader is INVOKE_BROKER_TO_RESET_OFFSET's.
type ResetOffsetRequestHeader struct {
	Topic, Group string
	Timestamp    int64
	IsForce      bool
}

func (r *ResetOffsetRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.Group = h.Str("group", true)
	r.Timestamp = h.Int64("timestamp", true, 0)
	r.IsForce = h.Bool("isForce")
}

// GetConsumerStatusRequestHeader is INVOKE_BROKER_TO_GET_CONSUMER_STATUS's.
type GetConsumerStatusRequestHeader struct{ Topic, Group, ClientAddr string }

func (r *GetConsumerStatusRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.Group = h.Str("group", true)
	r.ClientAddr = h.Str("clientAddr", false)
}

// QueryConsumeTimeSpanRequestHeader is QUERY_CONSUME_TIME_SPAN's.
type QueryConsumeTimeSpanRequestHeader struct{ Topic, Group string }

func (r *QueryConsumeTimeSpanRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.Group = h.Str("group", true)
}

// QueryCorrectionOffsetHeader is QUERY_CORRECTION_OFFSET's.
type QueryCorrectionOffsetHeader struct{ FilterGroups, CompareGroup, Topic string }

func (r *QueryCorrectionOffsetHeader) decodeHeader(h *Header) {
	r.FilterGroups = h.Str("filterGroups", false)
	r.CompareGroup = h.Str("compareGroup", true)
	r.Topic = h.Str("topic", true)
}

// CloneGroupOffsetRequestHeader is CLONE_GROUP_OFFSET's.
type CloneGroupOffsetRequestHeader struct {
	SrcGroup, DestGroup, Topic string
	Offline                    bool
}

func (r *CloneGroupOffsetRequestHeader) decodeHeader(h *Header) {
	r.SrcGroup = h.Str("srcGroup", true)
	r.DestGroup = h.Str("destGroup", true)
	r.Topic = h.Str("topic", false)
	r.Offline = h.Bool("offline")
}

// QueryConsumeQueueRequestHeader is QUERY_CONSUME_QUEUE's; ConsumerGroup is
// nil when absent (no filter is evaluated then).
type QueryConsumeQueueRequestHeader struct {
	Topic         string
	QueueID       int32
	Index         int64
	Count         int32
	ConsumerGroup *string
}

func (r *QueryConsumeQueueRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", false)
	r.QueueID = h.Int32("queueId", false, 0)
	r.Index = h.Int64("index", false, 0)
	r.Count = h.Int32("count", false, 0)
	r.ConsumerGroup = h.OptStr("consumerGroup")
}

// NotifyConsumerIdsChangedRequestHeader is NOTIFY_CONSUMER_IDS_CHANGED's,
// which the broker sends to a group's consumers.
type NotifyConsumerIdsChangedRequestHeader struct{ ConsumerGroup string }

func (r *NotifyConsumerIdsChangedRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup = h.Str("consumerGroup", true)
}

// Fields returns the header as extFields.
func (r *NotifyConsumerIdsChangedRequestHeader) Fields() map[string]string {
	return map[string]string{"consumerGroup": r.ConsumerGroup}
}
