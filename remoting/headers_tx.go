package remoting

import "strconv"

// Transaction request headers (broker/transaction serves them).

// EndTransactionRequestHeader is END_TRANSACTION's.
type EndTransactionRequestHeader struct {
	ProducerGroup        string
	TranStateTableOffset int64 // queue offset of the half message
	CommitLogOffset      int64 // of the half message
	CommitOrRollback     int32 // a transaction type
	FromTransactionCheck bool
	MsgID                string
}

func (r *EndTransactionRequestHeader) decodeHeader(h *Header) {
	r.ProducerGroup = h.Str("producerGroup", true)
	r.TranStateTableOffset = h.Int64("tranStateTableOffset", true, 0)
	r.CommitLogOffset = h.Int64("commitLogOffset", true, 0)
	r.CommitOrRollback = h.Int32("commitOrRollback", true, 0)
	r.FromTransactionCheck = h.Bool("fromTransactionCheck")
	r.MsgID = h.Str("msgId", true)
}

// ResumeCheckHalfMessageRequestHeader is RESUME_CHECK_HALF_MESSAGE's.
type ResumeCheckHalfMessageRequestHeader struct{ MsgID string }

func (r *ResumeCheckHalfMessageRequestHeader) decodeHeader(h *Header) {
	r.MsgID = h.Str("msgId", false)
}

// CheckTransactionStateRequestHeader is CHECK_TRANSACTION_STATE's, which
// the broker sends to a producer: MsgID and TransactionID are the half
// message's UNIQ_KEY, left out when it has none.
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
}

func (r *CheckTransactionStateRequestHeader) decodeHeader(h *Header) {
	r.TranStateTableOffset = h.Int64("tranStateTableOffset", true, 0)
	r.CommitLogOffset = h.Int64("commitLogOffset", true, 0)
	r.MsgID = h.Str("msgId", false)
	r.TransactionID = h.Str("transactionId", false)
	r.OffsetMsgID = h.Str("offsetMsgId", false)
}

// Fields returns the header as extFields.
func (r *CheckTransactionStateRequestHeader) Fields() map[string]string {
	m := map[string]string{
		"tranStateTableOffset": strconv.FormatInt(r.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(r.CommitLogOffset, 10),
		"offsetMsgId":          r.OffsetMsgID,
	}
	setIf(m, "msgId", r.MsgID)
	setIf(m, "transactionId", r.TransactionID)
	return m
}
