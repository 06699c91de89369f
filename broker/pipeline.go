package broker

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// The send pipeline. A message enters the store by many doors: a remoting
// send (served inline on the event loop, or on the pool), a batch, the
// gRPC SendMessage, SEND_REPLY with storeReplyMessageEnable, a consumer's
// send-back, a transaction's commit, a POP revive, and the delay and timer
// services delivering what fell due. They used to re-check permissions,
// topic existence, message type, size and the delay/timer rewrite each on
// their own, kept equal by comments only; now each front end translates its
// request into the stages below and their result back, and the stages are
// written once, here (an ACL check, which authenticates the caller, runs
// before them at each front end's door: ServeRemoting for remoting, whose
// inline mode then declines every send, and grpcapi's interceptor):
//
//	validate+authorize  admitSend: the broker's and the topic's write
//	                    permission, topic name and auto-creation, queue id
//	                    bound (checkSendFrom), then body and properties
//	                    size and the topic's message type; picks the queue
//	                    and the stored sysFlag. A refusal is a
//	                    *remoting.Refusal every front end answers as is.
//	route               retry/DLQ routing (routeRetry), then the put hooks
//	                    (transaction half, delay level, timer wheel) on a
//	                    map - the map mode - or, for a single send only
//	                    the delay or timer hook acts on, the same decisions
//	                    on the producer's properties text (plainProperties,
//	                    wheelText, delayText) - the text mode, which is the
//	                    only one the event loop runs. FuzzTextModeMatchesMapMode
//	                    holds the two modes equal.
//	put                 putMessage / putMessages (hooks, then the store), or
//	                    putText, the text mode's store call, which may run
//	                    on the event loop (PutMessageInline).
//	account             accountPut for a producer's message, deliveryStore
//	                    for what the delay and timer services deliver.
//	reply               setSendReply fills a remoting answer; Put returns a
//	                    PutReply the gRPC front end translates.
//
// The inline mode is not a copy of the pipeline but a way through it: the
// event loop runs the same admitSend and the same text route, and only the
// store call differs (it refuses to wait for the disk, and the pool then
// serves the request from the start, nothing stored).

// sendIn is a send as a front end hands it to admitSend.
type sendIn struct {
	// client and from name the producer in logs and remarks.
	client zerolog.LogObjectMarshaler
	from   string
	sh     *remoting.SendMessageRequestHeader
	// bodyLen and propsLen are checked against maxMessageSize and 32 KiB;
	// a front end that stores nothing of its own (a reply pushed to the
	// requester) sets skipSize.
	bodyLen, propsLen int
	skipSize          bool
	// typeCheck asks for the message type check (a batch checks each
	// member as it decodes it) on props, or, when props is nil, on
	// propsText parsed (only when enableTopicMessageTypeCheck is on: the
	// inline mode keeps the text and allocates no map).
	typeCheck bool
	// forceTypeCheck runs the type check whatever the broker's
	// enableTopicMessageTypeCheck: the gRPC front end's own key of that
	// name (the proxy's, on by default) asked for it.
	forceTypeCheck bool
	props          map[string]string
	propsText      string
}

// admitted is what admitSend decided: the topic's config, the queue the
// message goes to (picked at random when the producer left it to the
// broker) and its stored sysFlag.
type admitted struct {
	tc      topicgroup.TopicConfig
	queueID int32
	sysFlag int32
}

// admitSend is the validate and authorize stages (see above).
func (b *Broker) admitSend(in *sendIn) (admitted, *remoting.Refusal) {
	sh := in.sh
	tc, code, remark := b.checkSendFrom(in.client, in.from, sh)
	if code != remoting.Success {
		return admitted{}, remoting.Refuse(code, remark)
	}
	if !in.skipSize && (in.bodyLen > b.opts.MaxMessageSize || in.propsLen > maxPropsLength) {
		return admitted{}, remoting.Refuse(remoting.MessageIllegal, b.illegalMessageRemark())
	}
	if in.typeCheck && (b.opts.EnableTopicMessageTypeCheck || in.forceTypeCheck) {
		props := in.props
		if props == nil {
			props = message.ParseProperties(in.propsText)
		}
		if remark := b.messageTypeConflict(&tc, props, in.forceTypeCheck); remark != "" {
			return admitted{}, &remoting.Refusal{Code: remoting.MessageIllegal, Remark: remark, Cause: ErrTopicMessageType}
		}
	}
	a := admitted{tc: tc, queueID: sh.QueueID}
	if a.queueID < 0 {
		if tc.WriteQueueNums <= 0 {
			return admitted{}, remoting.Refusef(remoting.SystemError, "topic[%s] has no write queue", sh.Topic)
		}
		a.queueID = rand.Int32N(tc.WriteQueueNums)
	}
	a.sysFlag = sh.SysFlag &^ msgSysFlagHostV6Mask
	if tc.TopicFilterType == filterTypeMultiTag {
		a.sysFlag |= msgSysFlagMultiTags
	}
	return a, nil
}

// accountPut is the account stage of a producer's message (a send, a
// batch, a reply, a send-back, a commit, a revive): topic is the topic it
// was stored on.
func (b *Broker) accountPut(topic string, res *store.PutResult) {
	b.stats.PutMsgs.Add(int64(res.Count))
	b.bstats.RecordPut(topic, res.Count, res.WroteBytes)
}

// putText is the put stage of the text mode: m carries RawProperties; on
// the event loop (inline) the store refuses to wait for the disk with
// store.ErrWouldBlock, which the caller hands to the pool.
func (b *Broker) putText(m *message.Message, inline bool) (*store.PutResult, error) {
	var res *store.PutResult
	var err error
	if inline {
		res, err = b.store.PutMessageInline(m)
	} else {
		res, err = b.store.PutMessage(m)
	}
	if err == nil {
		b.accountPut(m.Topic, res)
	}
	return res, err
}

// setSendReply is the reply stage of a remoting send: the stored message's
// id(s), the queue the producer addressed and its offset.
func setSendReply(resp *remoting.Command, res *store.PutResult, queueID int32) {
	if res.Status == store.PutFlushDiskTimeout {
		resp.Code = remoting.FlushDiskTimeout
	}
	resp.SetExt("msgId", res.MsgIDList())
	resp.SetExt("queueId", strconv.FormatInt(int64(queueID), 10))
	resp.SetExt("queueOffset", strconv.FormatInt(res.QueueOffset, 10))
}

// deliveryStore is the store as the delay and timer services write to it:
// the account stage of a delivery. A due message stored on its real topic
// counts as J4 ScheduleMessageService's delivery (RecordScheduleDelivery)
// or 5.x TimerMessageStore.doPut's (RecordTimerDelivery) does, so
// VIEW_BROKER_STATS_DATA shows the put of a consumer's retry topic when the
// retry falls due. A message moved to a DLQ is no delivery, nor is what the
// timer stores on its own topic (a roll, a recall marker).
type deliveryStore struct {
	*store.Store
	record func(topic string, msgs, bytes int)
	escape escaper
}

// escaper is the escape bridge (acting_master.go escapePut): the store on
// a master, another group's master for an acting slave.
type escaper interface {
	escapePut(m *message.Message) (*store.PutResult, error)
}

func (s deliveryStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	res, err := s.escape.escapePut(m)
	if err == nil && m.Topic != message.TopicWheelTimer && !strings.HasPrefix(m.Topic, message.DLQTopicPrefix) {
		s.record(m.Topic, res.Count, res.WroteBytes)
	}
	return res, err
}

// scheduleStore and timerStore are the delivery stores of the two services.
// escape (the Broker) runs only once messages are delivered, after New.
func scheduleStore(s *store.Store, stats *brokerstats.Manager, escape escaper) deliveryStore {
	return deliveryStore{s, stats.RecordScheduleDelivery, escape}
}

func timerStore(s *store.Store, stats *brokerstats.Manager, escape escaper) deliveryStore {
	return deliveryStore{s, stats.RecordTimerDelivery, escape}
}

// sendPath is the send path as the transaction and POP services use it
// (transaction.Putter and CommitAnswerer, pop.Putter): a commit and a
// revive trigger are put through the put hooks, as a send would be, and a
// commit is answered once its waits end, as a send's.
type sendPath struct{ b *Broker }

func (p sendPath) PutMessage(m *message.Message) (*store.PutResult, error) {
	return p.b.putMessage(m)
}

func (p sendPath) AnswerCommitted(c *remoting.Conn, req, resp *remoting.Command, m *message.Message, res *store.PutResult) *remoting.Command {
	return p.b.answerCommitted(c, req, resp, m, res)
}
