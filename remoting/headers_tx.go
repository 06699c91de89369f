package remoting

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
