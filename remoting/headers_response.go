package remoting

// Response headers the admin client reads (admin/*.go). A required field
// that is absent or not a number fails the decode as it does for a request
// (the client reports it as a bad answer).

// SendMessageResponseHeader is the header of a SEND_MESSAGE answer:
// MsgID is the offsetMsgId; RecallHandle (5.x timer messages) and
// TransactionID may be absent.
type SendMessageResponseHeader struct {
	MsgID         string
	QueueID       int32
	QueueOffset   int64
	RecallHandle  string
	TransactionID string
}

func (r *SendMessageResponseHeader) decodeHeader(h *Header) {
	r.MsgID = h.Str("msgId", true)
	r.QueueID = h.Int32("queueId", true, 0)
	r.QueueOffset = h.Int64("queueOffset", true, 0)
	r.RecallHandle = h.Str("recallHandle", false)
	r.TransactionID = h.Str("transactionId", false)
}

// PullMessageResponseHeader is the header of a PULL_MESSAGE answer (the
// fields the admin client uses).
type PullMessageResponseHeader struct {
	NextBeginOffset, MinOffset, MaxOffset int64
}

func (r *PullMessageResponseHeader) decodeHeader(h *Header) {
	r.NextBeginOffset = h.Int64("nextBeginOffset", true, 0)
	r.MinOffset = h.Int64("minOffset", true, 0)
	r.MaxOffset = h.Int64("maxOffset", true, 0)
}

// OffsetResponseHeader is the answer of GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP (Get{Max,Min}OffsetResponseHeader,
// SearchOffsetResponseHeader).
type OffsetResponseHeader struct{ Offset int64 }

func (r *OffsetResponseHeader) decodeHeader(h *Header) { r.Offset = h.Int64("offset", true, 0) }

// FastForwardResponseHeader answers rmq's clock fast-forward.
type FastForwardResponseHeader struct{ BrokerTime, ClockOffsetMs int64 }

func (r *FastForwardResponseHeader) decodeHeader(h *Header) {
	r.BrokerTime = h.Int64("brokerTime", true, 0)
	r.ClockOffsetMs = h.Int64("clockOffsetMs", true, 0)
}

// RecallMessageResponseHeader answers RECALL_MESSAGE.
type RecallMessageResponseHeader struct{ MsgID string }

func (r *RecallMessageResponseHeader) decodeHeader(h *Header) { r.MsgID = h.Str("msgId", false) }

// GetKVConfigResponseHeader answers GET_KV_CONFIG.
type GetKVConfigResponseHeader struct{ Value string }

func (r *GetKVConfigResponseHeader) decodeHeader(h *Header) { r.Value = h.Str("value", false) }

// GetBrokerAclConfigResponseHeader answers GET_BROKER_CLUSTER_ACL_INFO:
// Version and AllAclFileVersion are JSON (a DataVersion, a map of file path
// to DataVersion).
type GetBrokerAclConfigResponseHeader struct {
	Version, AllAclFileVersion          string
	BrokerName, BrokerAddr, ClusterName string
}

func (r *GetBrokerAclConfigResponseHeader) decodeHeader(h *Header) {
	r.Version = h.Str("version", false)
	r.AllAclFileVersion = h.Str("allAclFileVersion", false)
	r.BrokerName = h.Str("brokerName", false)
	r.BrokerAddr = h.Str("brokerAddr", false)
	r.ClusterName = h.Str("clusterName", false)
}
