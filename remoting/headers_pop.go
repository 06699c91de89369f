package remoting

// POP request headers (broker/pop serves them).

// PopMessageRequestHeader is POP_MESSAGE's.
type PopMessageRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	MaxMsgNums           int32
	InvisibleTime        int64
	InitMode             int32
	Order                bool
	PollTime, BornTime   int64
	ExpType, Exp         string
}

func (r *PopMessageRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.MaxMsgNums = h.Int32("maxMsgNums", true, 0)
	r.InvisibleTime = h.Int64("invisibleTime", true, 0)
	r.InitMode = h.Int32("initMode", true, 0)
	r.Order = h.Bool("order")
	r.PollTime = h.Int64("pollTime", true, 0)
	r.BornTime = h.Int64("bornTime", true, 0)
	r.ExpType, r.Exp = h.Str("expType", false), h.Str("exp", false)
}

// AckMessageRequestHeader is ACK_MESSAGE's.
type AckMessageRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	ExtraInfo            string
	Offset               int64
}

func (r *AckMessageRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.ExtraInfo = h.Str("extraInfo", true)
	r.Offset = h.Int64("offset", true, 0)
}

// ChangeInvisibleTimeRequestHeader is CHANGE_MESSAGE_INVISIBLETIME's.
type ChangeInvisibleTimeRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	ExtraInfo            string
	Offset               int64
	InvisibleTime        int64
}

func (r *ChangeInvisibleTimeRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.ExtraInfo = h.Str("extraInfo", true)
	r.Offset = h.Int64("offset", true, 0)
	r.InvisibleTime = h.Int64("invisibleTime", true, 0)
}

// PeekMessageRequestHeader is PEEK_MESSAGE's.
type PeekMessageRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	MaxMsgNums           int32
}

func (r *PeekMessageRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.MaxMsgNums = h.Int32("maxMsgNums", true, 0)
}

// NotificationRequestHeader is NOTIFICATION's.
type NotificationRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
	PollTime, BornTime   int64
}

func (r *NotificationRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.PollTime = h.Int64("pollTime", true, 0)
	r.BornTime = h.Int64("bornTime", true, 0)
}

// PollingInfoRequestHeader is POLLING_INFO's.
type PollingInfoRequestHeader struct {
	ConsumerGroup, Topic string
	QueueID              int32
}

func (r *PollingInfoRequestHeader) decodeHeader(h *Header) {
	r.ConsumerGroup, r.Topic = h.Str("consumerGroup", true), h.Str("topic", true)
	r.QueueID = h.Int32("queueId", true, 0)
}
