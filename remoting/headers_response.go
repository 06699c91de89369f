package remoting

import "strconv"

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

// PullMessageResponseHeader is the header of a PULL_MESSAGE answer. The
// admin client does not need suggestWhichBrokerId (rmq always suggests the
// master), so its decode does not require it.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID                  int64
	NextBeginOffset, MinOffset, MaxOffset int64
}

func (r *PullMessageResponseHeader) decodeHeader(h *Header) {
	r.SuggestWhichBrokerID = h.Int64("suggestWhichBrokerId", false, 0)
	r.NextBeginOffset = h.Int64("nextBeginOffset", true, 0)
	r.MinOffset = h.Int64("minOffset", true, 0)
	r.MaxOffset = h.Int64("maxOffset", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *PullMessageResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("suggestWhichBrokerId", r.SuggestWhichBrokerID)
	resp.SetExtInt("nextBeginOffset", r.NextBeginOffset)
	resp.SetExtInt("minOffset", r.MinOffset)
	resp.SetExtInt("maxOffset", r.MaxOffset)
}

// OffsetResponseHeader is the answer of GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP (Get{Max,Min}OffsetResponseHeader,
// SearchOffsetResponseHeader).
type OffsetResponseHeader struct{ Offset int64 }

func (r *OffsetResponseHeader) decodeHeader(h *Header) { r.Offset = h.Int64("offset", true, 0) }

// Encode writes the header into resp's custom fields.
func (r *OffsetResponseHeader) Encode(resp *Command) { resp.SetExtInt("offset", r.Offset) }

// GetEarliestMsgStoretimeResponseHeader answers GET_EARLIEST_MSG_STORETIME.
type GetEarliestMsgStoretimeResponseHeader struct{ Timestamp int64 }

func (r *GetEarliestMsgStoretimeResponseHeader) decodeHeader(h *Header) {
	r.Timestamp = h.Int64("timestamp", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *GetEarliestMsgStoretimeResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("timestamp", r.Timestamp)
}

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

// Encode writes the header into resp's custom fields.
func (r *FastForwardResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("brokerTime", r.BrokerTime)
	resp.SetExtInt("clockOffsetMs", r.ClockOffsetMs)
}

// Encode writes the header into resp's custom fields.
func (r *RecallMessageResponseHeader) Encode(resp *Command) { resp.SetExt("msgId", r.MsgID) }

// Encode writes the header into resp's custom fields.
func (r *GetKVConfigResponseHeader) Encode(resp *Command) { resp.SetExt("value", r.Value) }

// Encode writes the header into resp's custom fields.
func (r *GetBrokerAclConfigResponseHeader) Encode(resp *Command) {
	resp.SetExt("version", r.Version)
	resp.SetExt("allAclFileVersion", r.AllAclFileVersion)
	resp.SetExt("brokerName", r.BrokerName)
	resp.SetExt("brokerAddr", r.BrokerAddr)
	resp.SetExt("clusterName", r.ClusterName)
}

// QueryMessageResponseHeader answers QUERY_MESSAGE: how far the index
// reaches.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp, IndexLastUpdatePhyoffset int64
}

func (r *QueryMessageResponseHeader) decodeHeader(h *Header) {
	r.IndexLastUpdateTimestamp = h.Int64("indexLastUpdateTimestamp", true, 0)
	r.IndexLastUpdatePhyoffset = h.Int64("indexLastUpdatePhyoffset", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *QueryMessageResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("indexLastUpdateTimestamp", r.IndexLastUpdateTimestamp)
	resp.SetExtInt("indexLastUpdatePhyoffset", r.IndexLastUpdatePhyoffset)
}

// RegisterBrokerResponseHeader answers REGISTER_BROKER; an empty address
// is left out.
type RegisterBrokerResponseHeader struct{ HAServerAddr, MasterAddr string }

func (r *RegisterBrokerResponseHeader) decodeHeader(h *Header) {
	r.HAServerAddr, r.MasterAddr = h.Str("haServerAddr", false), h.Str("masterAddr", false)
}

// Encode writes the header into resp's custom fields.
func (r *RegisterBrokerResponseHeader) Encode(resp *Command) {
	if r.MasterAddr != "" {
		resp.SetExt("masterAddr", r.MasterAddr)
	}
	if r.HAServerAddr != "" {
		resp.SetExt("haServerAddr", r.HAServerAddr)
	}
}

// QueryDataVersionResponseHeader answers QUERY_DATA_VERSION.
type QueryDataVersionResponseHeader struct{ Changed bool }

func (r *QueryDataVersionResponseHeader) decodeHeader(h *Header) { r.Changed = h.Bool("changed") }

// Encode writes the header into resp's custom fields.
func (r *QueryDataVersionResponseHeader) Encode(resp *Command) {
	resp.SetExt("changed", strconv.FormatBool(r.Changed))
}

// WipeWritePermOfBrokerResponseHeader answers WIPE_WRITE_PERM_OF_BROKER.
type WipeWritePermOfBrokerResponseHeader struct{ WipeTopicCount int32 }

func (r *WipeWritePermOfBrokerResponseHeader) decodeHeader(h *Header) {
	r.WipeTopicCount = h.Int32("wipeTopicCount", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *WipeWritePermOfBrokerResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("wipeTopicCount", int64(r.WipeTopicCount))
}

// AddWritePermOfBrokerResponseHeader answers ADD_WRITE_PERM_OF_BROKER.
type AddWritePermOfBrokerResponseHeader struct{ AddTopicCount int32 }

func (r *AddWritePermOfBrokerResponseHeader) decodeHeader(h *Header) {
	r.AddTopicCount = h.Int32("addTopicCount", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *AddWritePermOfBrokerResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("addTopicCount", int64(r.AddTopicCount))
}

// ChangeInvisibleTimeResponseHeader answers CHANGE_MESSAGE_INVISIBLETIME.
type ChangeInvisibleTimeResponseHeader struct {
	PopTime, InvisibleTime int64
	ReviveQid              int32
}

func (r *ChangeInvisibleTimeResponseHeader) decodeHeader(h *Header) {
	r.PopTime = h.Int64("popTime", true, 0)
	r.InvisibleTime = h.Int64("invisibleTime", true, 0)
	r.ReviveQid = h.Int32("reviveQid", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *ChangeInvisibleTimeResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("popTime", r.PopTime)
	resp.SetExtInt("invisibleTime", r.InvisibleTime)
	resp.SetExtInt("reviveQid", int64(r.ReviveQid))
}

// NotificationResponseHeader answers NOTIFICATION.
type NotificationResponseHeader struct{ HasMsg, PollingFull bool }

func (r *NotificationResponseHeader) decodeHeader(h *Header) {
	r.HasMsg, r.PollingFull = h.Bool("hasMsg"), h.Bool("pollingFull")
}

// Encode writes the header into resp's custom fields.
func (r *NotificationResponseHeader) Encode(resp *Command) {
	resp.SetExt("hasMsg", strconv.FormatBool(r.HasMsg))
	resp.SetExt("pollingFull", strconv.FormatBool(r.PollingFull))
}

// PollingInfoResponseHeader answers POLLING_INFO.
type PollingInfoResponseHeader struct{ PollingNum int32 }

func (r *PollingInfoResponseHeader) decodeHeader(h *Header) {
	r.PollingNum = h.Int32("pollingNum", true, 0)
}

// Encode writes the header into resp's custom fields.
func (r *PollingInfoResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("pollingNum", int64(r.PollingNum))
}

// PopMessageResponseHeader answers POP_MESSAGE and PEEK_MESSAGE. The
// offset-info fields are nullable: nil is left out (a peek writes none, a
// pop always the start and message offsets, the order counts only for an
// orderly pop).
type PopMessageResponseHeader struct {
	PopTime, InvisibleTime int64
	ReviveQid              int32
	RestNum                int64
	StartOffsetInfo        *string
	MsgOffsetInfo          *string
	OrderCountInfo         *string
}

func (r *PopMessageResponseHeader) decodeHeader(h *Header) {
	r.PopTime = h.Int64("popTime", true, 0)
	r.InvisibleTime = h.Int64("invisibleTime", true, 0)
	r.ReviveQid = h.Int32("reviveQid", true, 0)
	r.RestNum = h.Int64("restNum", true, 0)
	r.StartOffsetInfo = h.OptStr("startOffsetInfo")
	r.MsgOffsetInfo = h.OptStr("msgOffsetInfo")
	r.OrderCountInfo = h.OptStr("orderCountInfo")
}

// Encode writes the header into resp's custom fields.
func (r *PopMessageResponseHeader) Encode(resp *Command) {
	resp.SetExtInt("popTime", r.PopTime)
	resp.SetExtInt("invisibleTime", r.InvisibleTime)
	resp.SetExtInt("reviveQid", int64(r.ReviveQid))
	resp.SetExtInt("restNum", r.RestNum)
	for _, f := range [...]struct {
		key string
		v   *string
	}{{"startOffsetInfo", r.StartOffsetInfo}, {"msgOffsetInfo", r.MsgOffsetInfo}, {"orderCountInfo", r.OrderCountInfo}} {
		if f.v != nil {
			resp.SetExt(f.key, *f.v)
		}
	}
}
