package transaction

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Remarks of EndTransactionProcessor and AdminBrokerProcessor.resumeCheckHalfMessage.
const (
	txRemarkNotFound     = "Find prepared transaction message failed"
	txRemarkGroup        = "The producer group wrong"
	txRemarkTableOffset  = "The transaction state table offset wrong"
	txRemarkCommitOffset = "The commit log offset wrong"
	txRemarkBadDecision  = "commitOrRollback field wrong"
	txRemarkResumeFailed = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
	txRemarkResumeError  = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
	// txRemarkSlave is End's (the gRPC front end needs a message; the
	// remoting answer has none, as stock).
	txRemarkSlave = "the broker is a slave, so end transaction is forbidden"
)

// endTxHeader is EndTransactionRequestHeader.
type endTxHeader struct {
	group     string
	tranOff   int64 // tranStateTableOffset: queue offset of the half message
	phyOff    int64 // commitLogOffset of the half message
	decision  int32 // commitOrRollback: a transaction type
	fromCheck bool
	msgID     string
}

// processEndTransaction serves END_TRANSACTION (sent oneway by producers,
// so nobody reads the reply): commit re-stores the half message on its real
// topic and queue, rollback stores nothing; both record an op entry. An
// UNKNOW answer leaves the message to the checks and gets no reply, as stock.
func (s *Service) processEndTransaction(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.EndTransactionRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if s.isSlave() {
		// As stock: the role is checked right after the header is read,
		// and the answer has no remark.
		s.refusals.Warn(&s.log, "end_transaction_on_slave", remoting.SlaveNotAvailable).Object("client", c).
			Msg("transaction: the broker is a slave, so end transaction is forbidden")
		return remoting.NewResponse(req, remoting.SlaveNotAvailable, "")
	}
	eh := endTxHeader{
		group:     rh.ProducerGroup,
		tranOff:   rh.TranStateTableOffset,
		phyOff:    rh.CommitLogOffset,
		decision:  rh.CommitOrRollback,
		fromCheck: rh.FromTransactionCheck,
		msgID:     rh.MsgID,
	}
	switch eh.decision {
	case message.TransactionNotType, message.TransactionCommitType, message.TransactionRollbackType:
	default:
		return remoting.NewResponse(req, remoting.SystemError, txRemarkBadDecision)
	}
	log := s.log.With().Str("group", eh.group).Str("msgId", eh.msgID).Int64("commitLogOffset", eh.phyOff).
		Int64("tranStateTableOffset", eh.tranOff).Bool("fromCheck", eh.fromCheck).Object("client", c).
		Str("remark", req.Remark).Logger()
	if eh.decision == message.TransactionNotType {
		s.refusals.Warn(&log, "end_transaction_unknown", 0).Msg("transaction: producer reports the transaction still unknown")
		return nil
	}
	code, remark, commit := s.end(&eh)
	if code != remoting.Success {
		s.refusals.Warn(&log, "end_transaction_refused", code).Str("refusal", remark).Int32("decision", eh.decision).Msg("transaction: end transaction refused")
	} else if eh.fromCheck || eh.decision == message.TransactionRollbackType {
		log.Info().Int32("decision", eh.decision).Msg("transaction: ended")
	}
	resp := remoting.NewResponse(req, code, remark)
	if code == remoting.Success {
		resp.Remark = ""
		if commit != nil && s.answer != nil {
			return s.answer.AnswerCommitted(c, req, resp, commit.m, commit.res)
		}
	}
	return resp
}

// committed is the message a commit stored and where.
type committed struct {
	m   *message.Message
	res *store.PutResult
}

// end applies a commit or rollback to the half message eh names, once per
// chain (EndTransactionProcessor.processRequest).
func (s *Service) end(eh *endTxHeader) (int32, string, *committed) {
	half, code, remark := s.preparedMessage(eh)
	if code != remoting.Success {
		return code, remark, nil
	}
	origin := txOrigin(half)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decided[origin] != nil {
		s.log.Debug().Int64("origin", origin).Int64("halfOffset", half.QueueOffset).Msg("transaction: already decided, end transaction ignored")
		return remoting.Success, "", nil
	}
	if !s.pending(origin, half.QueueOffset) {
		// Decided and released since, or discarded: answered as stock
		// answers, without storing anything.
		s.log.Debug().Int64("origin", origin).Int64("halfOffset", half.QueueOffset).Msg("transaction: half message already finished, end transaction ignored")
		return remoting.Success, "", nil
	}
	var commit *committed
	if eh.decision == message.TransactionCommitType {
		m, err := txCommitMessage(half)
		if err != nil {
			return remoting.SystemError, err.Error(), nil
		}
		res, err := s.put.PutMessage(m)
		if err != nil {
			code, remark := s.finalPutFailure(err)
			return code, remark, nil
		}
		commit = &committed{m: m, res: res}
	}
	s.putOp(half)
	now := s.clock.Now().UnixMilli()
	s.decided[origin] = &txDecision{atMs: now, fence: -1}
	delete(s.copies, origin)
	s.ends.record(half.Properties[message.PropRealTopic], eh.decision == message.TransactionCommitType, now-half.BornTimestamp)
	return remoting.Success, "", commit
}

// preparedMessage looks up the half message at commitLogOffset and checks it
// against the header (checkPrepareMessage). Unlike stock, a record that is
// not on the half topic is not "found".
func (s *Service) preparedMessage(eh *endTxHeader) (*message.MessageExt, int32, string) {
	raw, err := s.store.LookMessageByOffset(eh.phyOff)
	if err != nil {
		return nil, remoting.SystemError, txRemarkNotFound
	}
	half, err := message.DecodeRecord(raw)
	if err != nil || half.Topic != message.TopicTransHalf {
		return nil, remoting.SystemError, txRemarkNotFound
	}
	switch {
	case half.Properties[message.PropProducerGroup] != eh.group:
		return nil, remoting.SystemError, txRemarkGroup
	case half.QueueOffset != eh.tranOff:
		return nil, remoting.SystemError, txRemarkTableOffset
	case half.PhysicalOffset != eh.phyOff:
		return nil, remoting.SystemError, txRemarkCommitOffset
	}
	return half, remoting.Success, ""
}

// errNoRealTopic marks a half message that lost its destination.
var errNoRealTopic = errors.New("broker: half message has no REAL_TOPIC/REAL_QID")

// txCommitMessage is the committed form of a half message
// (endMessageTransaction): real topic and queue, COMMIT transaction type,
// preparedTransactionOffset = the half message's commitlog offset, and
// REAL_TOPIC, REAL_QID and TRAN_MSG removed. It goes through the put hooks,
// so a DELAY it carries delays it now.
func txCommitMessage(half *message.MessageExt) (*message.Message, error) {
	topic := half.Properties[message.PropRealTopic]
	qid, err := strconv.ParseInt(half.Properties[message.PropRealQueueID], 10, 32)
	if topic == "" || err != nil {
		return nil, fmt.Errorf("%w (offset %d)", errNoRealTopic, half.PhysicalOffset)
	}
	props := maps.Clone(half.Properties)
	delete(props, message.PropRealTopic)
	delete(props, message.PropRealQueueID)
	delete(props, message.PropTranMsg)
	return &message.Message{
		Topic: topic, QueueID: int32(qid), Flag: half.Flag, Body: half.Body, Properties: props,
		SysFlag:       half.SysFlag&^message.TransactionRollbackType | message.TransactionCommitType,
		BornTimestamp: half.BornTimestamp, BornHost: half.BornHost, ReconsumeTimes: half.ReconsumeTimes,
		PreparedTransactionOffset: half.PhysicalOffset,
		SkipFlushWait:             true,
	}, nil
}

// finalPutFailure maps a failed commit put to sendFinalMessage's reply.
func (s *Service) finalPutFailure(err error) (int32, string) {
	ce := remoting.AsRefusal(err)
	switch {
	case ce != nil:
		return ce.Code, ce.Remark
	case errors.Is(err, store.ErrMessageTooLarge), errors.Is(err, store.ErrPropertiesTooLarge), errors.Is(err, store.ErrTopicTooLong),
		errors.Is(err, store.ErrInvalidTopic):
		return remoting.MessageIllegal, fmt.Sprintf("The message is illegal, maybe msg body or properties length not matched. msg body length limit %dB, msg properties length limit 32KB.", s.maxMessageSize)
	case errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrNotWritable):
		return remoting.ServiceNotAvailable, "Service not available now."
	}
	return remoting.SystemError, "UNKNOWN_ERROR"
}

// putOp records the decision of the half message in the op queue of its
// queue: tag "d", body its queue offset (addRemoveTagInTransactionOp).
func (s *Service) putOp(half *message.MessageExt) {
	_, err := s.store.PutMessage(&message.Message{
		Topic: message.TopicTransOpHalf, QueueID: half.QueueID, Body: []byte(strconv.FormatInt(half.QueueOffset, 10)),
		Properties:    map[string]string{message.PropTags: txOpRemoveTag},
		BornTimestamp: s.clock.Now().UnixMilli(), BornHost: s.storeHost, SkipFlushWait: true,
	})
	if err != nil {
		// The decision holds in memory; after a restart the message is checked again.
		s.log.Error().Err(err).Int64("halfOffset", half.QueueOffset).Msg("transaction: op record write failed")
	}
}

// processResumeCheckHalfMessage serves RESUME_CHECK_HALF_MESSAGE (mqadmin
// resumeCheckHalfMessage): the message with offsetMsgId msgId, typically one
// discarded to TRANS_CHECK_MAX_TIME_TOPIC, goes back to the half queue with
// TRANSACTION_CHECK_TIMES=0 and is checked again.
func (s *Service) processResumeCheckHalfMessage(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	// msgId is a nullable String: the decode cannot fail.
	rh, _ := remoting.DecodeHeader[remoting.ResumeCheckHalfMessageRequestHeader](req)
	msgID := rh.MsgID
	resp := remoting.NewResponse(req, remoting.Success, "")
	_, phy, err := message.DecodeMessageID(msgID)
	if err != nil {
		resp.Code, resp.Remark = remoting.SystemError, txRemarkResumeError
		return resp
	}
	raw, err := s.store.LookMessageByOffset(phy)
	if err != nil {
		resp.Code, resp.Remark = remoting.SystemError, txRemarkResumeError
		return resp
	}
	m, err := message.DecodeRecord(raw)
	if err != nil {
		resp.Code, resp.Remark = remoting.SystemError, txRemarkResumeError
		return resp
	}
	props := maps.Clone(m.Properties)
	props[message.PropTransactionCheckTimes] = "0"
	if _, ok := props[message.PropTranPreparedQueueOffset]; !ok && m.Topic == message.TopicTransHalf {
		props[message.PropTranPreparedQueueOffset] = strconv.FormatInt(m.QueueOffset, 10)
	}
	res, err := s.store.PutMessage(&message.Message{
		Topic: message.TopicTransHalf, QueueID: txHalfQueueID, Flag: m.Flag, Body: m.Body, Properties: props,
		SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes, SkipFlushWait: true,
	})
	if err != nil {
		s.log.Error().Err(err).Str("msgId", msgID).Msg("transaction: put message back to the half queue failed")
		resp.Code, resp.Remark = remoting.SystemError, txRemarkResumeFailed
		return resp
	}
	if origin, err := strconv.ParseInt(props[message.PropTranPreparedQueueOffset], 10, 64); err == nil && origin >= 0 {
		s.noteCopy(origin, res.QueueOffset)
	}
	s.log.Info().Str("msgId", msgID).Str("realTopic", props[message.PropRealTopic]).Msg("transaction: half message put back to be checked again")
	return resp
}
