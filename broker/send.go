package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Send: every way a message enters the store, through the one pipeline
// described first (doc.go: Request paths):
//
//	the pipeline     admitSend, putMessage/putText, accountPut, deliveryStore
//	remoting sends   SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE (pool and inline)
//	checks, hooks    delay levels, the topic's message type, half
//	                 messages refused (rejectTransactionMessage)
//	send-back        CONSUMER_SEND_MSG_BACK (%RETRY%, %DLQ%)
//	reply            SEND_REPLY_MESSAGE(_V2), pushed to the requester
//	the Go API       Put for grpcapi, and the kinds of refusal it reads

// ----- The pipeline -----

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

// escapeBridge is the escape bridge as the transaction and POP services
// take it (their Putter): the store on a master, another group's master
// for an acting slave (acting_master.go escapePut).
type escapeBridge struct{ b *Broker }

func (e escapeBridge) PutMessage(m *message.Message) (*store.PutResult, error) {
	return e.b.escapePut(m)
}

func (p sendPath) AnswerCommitted(c *remoting.Conn, req, resp *remoting.Command, m *message.Message, res *store.PutResult) *remoting.Command {
	return p.b.answerCommitted(c, req, resp, m, res)
}

// ----- Remoting sends -----

// Property keys the send path reads or writes (MessageConst.java).
const (
	maxPropsLength = 32767
	// versionV3_4_9 is the first client version whose maxReconsumeTimes the
	// broker honours.
	versionV3_4_9 = 121
	dlqQueueNums  = 1
	// dlqPerm is the permission of %DLQ% topics created by the broker
	// (4.9.8 SendMessageProcessor: PERM_WRITE | PERM_READ).
	dlqPerm = permReadWrite

	msgSysFlagMultiTags  = 0x2
	msgSysFlagHostV6Mask = 0x10 | 0x20

	faqSuggestion = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
)

// parseSendHeader decodes the V1 header, or the V2 letters for the codes
// that use them (converted to V1 as AbstractSendMessageProcessor does).
func parseSendHeader(req *remoting.Command) (*remoting.SendMessageRequestHeader, error) {
	if req.Code == remoting.SendMessageV2 || req.Code == remoting.SendBatchMessage || req.Code == remoting.SendReplyMessageV2 {
		v2, err := remoting.DecodeHeader[remoting.SendMessageRequestHeaderV2](req)
		if err != nil {
			return nil, err
		}
		sh := remoting.SendMessageRequestHeader(v2)
		return &sh, nil
	}
	sh, err := remoting.DecodeHeader[remoting.SendMessageRequestHeader](req)
	if err != nil {
		return nil, err
	}
	return &sh, nil
}

// hookFree reports whether no put hook and no retry routing acts on a
// single send with header sh: not a retry or system topic the hooks handle,
// and no property a hook reads in the text (hookProperties).
func (b *Broker) hookFree(sh *remoting.SendMessageRequestHeader) bool {
	return b.hooksDecideByText(sh.Topic) && !hookProperties(sh.Properties)
}

// hooksDecideByText reports whether every put hook is a keyed one and topic
// is none the hooks handle by its name (a retry topic, the schedule, wheel
// and half topics): whether a hook acts on a send is then up to its
// properties text (hookFree, timerSend, delaySend).
func (b *Broker) hooksDecideByText(topic string) bool {
	return len(b.putHooks) == b.keyedHooks && !strings.HasPrefix(topic, message.RetryTopicPrefix) &&
		topic != message.TopicSchedule && topic != message.TopicWheelTimer && topic != message.TopicTransHalf
}

// plainText is the properties text to store for a send no put hook acts on,
// and whether its WAIT asked not to wait for the flush.
type plainText struct {
	text     string
	skipWait bool
	// inline: send stores with PutMessageInline (on the event loop) and
	// sets wouldBlock, answering nothing, when the store refuses to wait.
	inline, wouldBlock bool
	// wheel: a timer message the timer hook would move into the wheel, due
	// at deliverMs (timerSend); text is then made by send (wheelText),
	// which knows the queue.
	wheel     bool
	deliverMs int64
	// level: a delay-level message the delay hook would move to that level
	// (delaySend, clamped as it says); text is then made by send
	// (delayText), which knows the queue.
	level   int
	clamped bool
}

// plainProperties returns the properties text to store for a single send
// that no put hook and no retry routing acts on: the producer's pairs without
// WAIT, then CLUSTER (which, last, wins over a producer's own), and whether
// WAIT asked not to wait for the flush. ok is false when the topic is a
// retry or system topic the hooks handle, or the text may carry a property a
// hook reads (hookProperties); the caller then takes the map path. The one
// exceptions are a timer message only the timer hook acts on (timerSend):
// ok, with wheel set and the text left to send (wheelText), and a
// delay-level message only the delay hook acts on (delaySend): ok, with
// level set and the text left to send (delayText).
func (b *Broker) plainProperties(sh *remoting.SendMessageRequestHeader) (p plainText, ok bool) {
	if !b.hookFree(sh) {
		if p.deliverMs, p.wheel = b.timerSend(sh); !p.wheel {
			if p.level, p.clamped = b.delaySend(sh); p.level == 0 {
				return plainText{}, false
			}
		}
	}
	p.skipWait = noWaitText(sh.Properties)
	if !p.wheel && p.level == 0 {
		p.text = message.EditProperties(sh.Properties, []string{message.PropWait}, [2]string{message.PropCluster, b.opts.BrokerClusterName})
	}
	return p, true
}

// hookProperties reports text that may carry a property some put hook reads:
// a delay level, a transaction flag or a timer property (any TIMER_ text, even
// inside a value, counts: the map path is always correct).
// FuzzTextModeMatchesMapMode holds the text mode to what putHooks
// (lifecycle.go) do on the map.
func hookProperties(text string) bool {
	p := message.Props(text)
	if _, ok := p.Lookup(message.PropDelay); ok {
		return true
	}
	if _, ok := p.Lookup(transaction.HookProperty); ok {
		return true
	}
	return strings.Contains(text, message.PropTimerPrefix)
}

// noWait reports WAIT=false: the producer does not wait for a SYNC_FLUSH
// fsync (absent means wait, as stock).
func noWait(props map[string]string) bool {
	v, ok := props[message.PropWait]
	return ok && !strings.EqualFold(v, "true")
}

// noWaitText is noWait on a properties text.
func noWaitText(text string) bool {
	v, ok := message.Props(text).Lookup(message.PropWait)
	return ok && !strings.EqualFold(v, "true")
}

// putHook sees every message before it is stored. It may rewrite the
// message (delay levels, timer messages, transactions) or refuse it; a
// *remoting.Refusal chooses the response code, any other error answers
// SYSTEM_ERROR.
type putHook func(m *message.Message) error

// putMessage is the route and put stages of the map mode:
// the put hooks, then the store, then accountPut. Every producer-facing
// write that carries a map goes through it, so the hooks apply in one place.
func (b *Broker) putMessage(m *message.Message) (*store.PutResult, error) {
	for _, h := range b.putHooks {
		if err := h(m); err != nil {
			return nil, err
		}
	}
	res, err := b.store.PutMessage(m)
	if err == nil {
		b.accountPut(m.Topic, res)
	}
	return res, err
}

// putMessages stores a batch on one topic/queue; hooks see each message.
func (b *Broker) putMessages(msgs []*message.Message) (*store.PutResult, error) {
	if err := checkBatch(msgs); err != nil {
		return nil, err
	}
	for _, m := range msgs {
		for _, h := range b.putHooks {
			if err := h(m); err != nil {
				return nil, err
			}
		}
	}
	if err := checkBatchTimers(msgs); err != nil {
		return nil, err
	}
	res, err := b.store.PutMessages(msgs)
	if err == nil {
		b.accountPut(msgs[0].Topic, res)
	}
	return res, err
}

// processSend serves SEND_MESSAGE(_V2) and SEND_BATCH_MESSAGE (replies:
// processReply below).
func (b *Broker) processSend(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	sh, err := parseSendHeader(req)
	if err != nil {
		resp := b.sendResponse(req)
		resp.Code, resp.Remark = remoting.SystemError, err.Error()
		return resp
	}
	return b.send(c, req, sh, nil)
}

// ServeInline implements remoting.InlineHandler: a single-message send to
// an existing topic that no put hook acts on, or only the timer hook moving
// it into the wheel (timerSend) or the delay hook moving it to a delay
// level (delaySend), is served on the event loop.
// Everything else, and every send that would have to create a topic
// (persisted, and announced to the name servers), goes to the pool. What
// is left can wait only for the store's put lock; a put that would wait for
// the disk (store.ErrWouldBlock: the next commitlog file is not ready) is
// left to the pool having stored nothing.
func (b *Broker) ServeInline(c *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	if req.Code == remoting.PullMessage || req.Code == remoting.LitePullMessage {
		return b.servePullInline(c, req)
	}
	if (req.Code != remoting.SendMessageV2 && req.Code != remoting.SendMessage) || b.acl != nil || b.auth.Checks() {
		return nil, false // with ACL on, sends are checked on the pool (ServeRemoting)
	}
	if req.IsOneway() && b.opts.FlushDiskType == "SYNC_FLUSH" {
		return nil, false // the store would wait for the flush
	}
	sh, err := parseSendHeader(req)
	if err != nil || sh.Batch || !b.topics.Has(sh.Topic) {
		return nil, false
	}
	plain, ok := b.plainProperties(sh)
	if !ok {
		return nil, false
	}
	if !b.enter() {
		return nil, false
	}
	defer b.inflight.Done()
	plain.inline = true
	var begin time.Time
	d := b.bstats.Detail()
	if d != nil {
		begin = b.clock.Now()
	}
	resp := b.send(c, req, sh, &plain)
	if plain.wouldBlock {
		return nil, false // the store would wait for the disk: the pool serves it
	}
	if d != nil && resp != nil {
		d.RecordRPC(req.Code, resp.Code, b.clock.Now().Sub(begin))
	}
	return resp, true
}

// sendResponse starts the answer to a send.
func (b *Broker) sendResponse(req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	rc := b.runtime()
	resp.SetExt(message.PropMsgRegion, rc.RegionID)
	resp.SetExt(message.PropTraceOn, strconv.FormatBool(rc.TraceOn))
	return resp
}

// send stores the message(s) of a send whose header parsed. plain is what
// plainProperties returned for sh when the caller asked already (nil: not
// asked yet).
func (b *Broker) send(c *remoting.Conn, req *remoting.Command, sh *remoting.SendMessageRequestHeader, plain *plainText) *remoting.Command {
	resp := b.sendResponse(req)
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}

	a, refusal := b.admitSend(&sendIn{client: c, from: c.RemoteAddr(), sh: sh, bodyLen: len(req.Body),
		propsLen: len(sh.Properties), typeCheck: !sh.Batch, propsText: sh.Properties})
	if refusal != nil {
		return fail(refusal.Code, refusal.Remark)
	}
	b.requesters.noteRequest(sh.Properties, c)
	queueID := a.queueID
	bornHost := connHost(c)
	// Under SYNC_FLUSH the answer waits for the fsync of the message, but not
	// on this goroutine: the store returns after the append and the
	// group-commit flusher sends the answer (answerAfterStore).
	deferFlush := b.opts.FlushDiskType == "SYNC_FLUSH" && !req.IsOneway()
	// On a SYNC_MASTER the answer also waits for a slave's ack (ha.go),
	// written from the HA service's callback in the same way.
	syncMaster := b.isSyncMaster() && !req.IsOneway()
	awaitFlush, awaitReplica := false, false
	half := false // a transaction half message (its answer Holds it from the checks)

	if plain == nil && !sh.Batch {
		if p, ok := b.plainProperties(sh); ok {
			plain = &p
		}
	}
	var res *store.PutResult
	var err error
	switch {
	case sh.Batch:
		msgs, skipWait, refusal := b.batchMessages(sh, req.Body, &a, bornHost, deferFlush)
		if refusal == nil {
			refusal = b.inSyncRefusal(!skipWait) // role.go, controller mode
		}
		if refusal != nil {
			return fail(refusal.Code, refusal.Remark)
		}
		awaitFlush, awaitReplica = deferFlush && !skipWait, syncMaster && !skipWait
		if res, err = b.putMessages(msgs); err != nil {
			return b.putFailure(resp, err)
		}
	case plain != nil:
		// m stays on this goroutine's stack: the store copies it.
		if r := b.inSyncRefusal(!plain.skipWait); r != nil {
			return fail(r.Code, r.Remark)
		}
		var mv message.Message
		m := &mv
		b.textMessage(m, sh, req.Body, &a, bornHost, plain)
		m.SkipFlushWait = plain.skipWait || deferFlush
		awaitFlush, awaitReplica = deferFlush && !plain.skipWait, syncMaster && !plain.skipWait
		res, err = b.putText(m, plain.inline)
		if plain.inline && errors.Is(err, store.ErrWouldBlock) {
			plain.wouldBlock = true
			return nil
		}
		if err != nil {
			return b.putFailure(resp, err)
		}
		if plain.wheel {
			if h := b.wheelRecallHandle(sh, m, plain.deliverMs); h != "" {
				resp.SetExt("recallHandle", h)
			}
		}
	default:
		m, refusal := b.mapMessage(req, sh, &a, bornHost)
		if refusal != nil {
			return fail(refusal.Code, refusal.Remark)
		}
		skipWait := m.SkipFlushWait
		if r := b.inSyncRefusal(!skipWait); r != nil {
			return fail(r.Code, r.Remark)
		}
		m.SkipFlushWait = skipWait || deferFlush
		awaitFlush, awaitReplica = deferFlush && !skipWait, syncMaster && !skipWait
		// The reply names the queue the producer addressed (or the DLQ), not
		// the schedule or timer queue a hook may move the message to.
		queueID = m.QueueID
		if res, err = b.putMessage(m); err != nil {
			return b.putFailure(resp, err)
		}
		if id := transaction.IDFor(m, res); id != "" {
			resp.SetExt("transactionId", id)
			half = true
		}
		if req.Code != remoting.SendBatchMessage {
			if h := b.recallHandle(m); h != "" {
				resp.SetExt("recallHandle", h)
			}
		}
	}

	setSendReply(resp, res, queueID)
	if awaitFlush || awaitReplica {
		var answered func()
		if half && b.tx != nil {
			// The check walk leaves the half alone until its answer is
			// out (transaction.Service.Hold).
			phy := res.PhysicalOffset
			b.tx.Hold(phy)
			answered = func() { b.tx.Answered(phy) }
		}
		return b.answerAfterStore(c, resp, res.PhysicalOffset+int64(res.WroteBytes), awaitFlush, awaitReplica, answered)
	}
	return resp
}

// batchMessages is the validate and route stages of a batch: its body
// decoded, each member's properties with the batch-level ones (less WAIT,
// plus CLUSTER) and its message type checked; skipWait is WAIT=false on the
// batch. The put hooks then see each member (putMessages).
func (b *Broker) batchMessages(sh *remoting.SendMessageRequestHeader, body []byte, a *admitted, bornHost netip.AddrPort, deferFlush bool) ([]*message.Message, bool, *remoting.Refusal) {
	entries, err := message.DecodeBatchBody(body)
	if err != nil || len(entries) == 0 {
		if err == nil {
			err = errors.New("empty batch")
		}
		return nil, false, remoting.Refuse(remoting.MessageIllegal, "the batch body is malformed: "+err.Error())
	}
	batchProps := message.ParseProperties(sh.Properties)
	skipWait := noWait(batchProps)
	delete(batchProps, message.PropWait)
	batchProps[message.PropCluster] = b.opts.BrokerClusterName
	msgs := make([]*message.Message, len(entries))
	for i, e := range entries {
		props := e.Properties
		if props == nil {
			props = make(map[string]string, len(batchProps))
		}
		// Stock appends the batch-level string after each message's own,
		// so on a duplicate key the batch-level value is the one read back.
		for k, v := range batchProps {
			props[k] = v
		}
		delete(props, message.PropWait)
		if remark := b.messageTypeConflict(&a.tc, props, false); remark != "" {
			return nil, false, remoting.Refuse(remoting.MessageIllegal, remark)
		}
		msgs[i] = &message.Message{
			Topic: sh.Topic, QueueID: a.queueID, Flag: e.Flag, Body: e.Body, Properties: props,
			SysFlag: a.sysFlag, BornTimestamp: sh.BornTimestamp, BornHost: bornHost,
			ReconsumeTimes: sh.ReconsumeTimes, SkipFlushWait: skipWait || deferFlush,
		}
	}
	return msgs, skipWait, nil
}

// textMessage is the route stage of the text mode: no put hook acts on
// the message, or only the timer hook (plain.wheel) or the delay hook
// (plain.level), so the producer's properties text is stored as it came
// (less WAIT, plus CLUSTER, and the wheel's or the level's bookkeeping)
// without a map, on the topic and queue the hook would have chosen. It
// fills *m, which the caller owns (a send keeps it off the heap).
func (b *Broker) textMessage(m *message.Message, sh *remoting.SendMessageRequestHeader, body []byte, a *admitted, bornHost netip.AddrPort, plain *plainText) {
	*m = message.Message{
		Topic: sh.Topic, QueueID: a.queueID, Flag: sh.Flag, Body: body,
		RawProperties: plain.text, SysFlag: a.sysFlag,
		BornTimestamp: sh.BornTimestamp, BornHost: bornHost, ReconsumeTimes: sh.ReconsumeTimes,
	}
	switch {
	case plain.wheel:
		// What the timer hook does to the map (timer.Rewrite), on the text.
		m.RawProperties = b.wheelText(sh, a.queueID, plain.deliverMs)
		m.Topic, m.QueueID = message.TopicWheelTimer, 0
	case plain.level > 0:
		// What the delay hook does to the map (Levels.Rewrite), on the
		// text; the reply names the producer's queue, as on the map mode.
		m.RawProperties = b.delayText(sh, a.queueID, plain.level, plain.clamped)
		m.Topic, m.QueueID = message.TopicSchedule, int32(plain.level-1)
	}
}

// mapMessage is the first half of the map mode's route stage: the
// properties parsed, the %RETRY% limit applied (routeRetry: the message may
// move to the group's %DLQ%), CLUSTER set and WAIT dropped, with
// SkipFlushWait telling WAIT=false. The put hooks are the second half
// (putMessage).
func (b *Broker) mapMessage(req *remoting.Command, sh *remoting.SendMessageRequestHeader, a *admitted, bornHost netip.AddrPort) (*message.Message, *remoting.Refusal) {
	m := &message.Message{
		Topic: sh.Topic, QueueID: a.queueID, Flag: sh.Flag, Body: req.Body,
		Properties: message.ParseProperties(sh.Properties), SysFlag: a.sysFlag,
		BornTimestamp: sh.BornTimestamp, BornHost: bornHost, ReconsumeTimes: sh.ReconsumeTimes,
	}
	if m.Properties == nil {
		m.Properties = make(map[string]string, 1)
	}
	if code, remark, ok := b.routeRetry(req, sh, m); !ok {
		return nil, remoting.Refuse(code, remark)
	}
	m.Properties[message.PropCluster] = b.opts.BrokerClusterName
	m.SkipFlushWait = noWait(m.Properties)
	delete(m.Properties, message.PropWait)
	return m, nil
}

// answerAfterStore writes resp once the commitlog is durable up to end
// (flush) and a slave acked it (replica), with the outcome code afterPut
// gives (FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT),
// and returns nil (the reply is written later); a SLAVE_NOT_AVAILABLE
// known at once is returned as the answer. The pending reply counts as
// work in flight, so a shutdown waits for it.
// answered, when set, runs as the answer goes out.
func (b *Broker) answerAfterStore(c *remoting.Conn, resp *remoting.Command, end int64, flush, replica bool, answered func()) *remoting.Command {
	return b.answerAfterWaits(c, resp, end, flush, replica, true, answered)
}

// answerWhenStored is answerAfterStore for the puts whose answer does not
// report how the waits ended: 4.9.8's END_TRANSACTION commit
// (sendFinalMessage) and stored SEND_REPLY_MESSAGE (handlePutMessageResult)
// count FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE as
// stored. Their synchronous putMessage still returns only when the flush
// and the slave's ack (or the timeouts) come, so resp goes out unchanged
// then; at once when nothing is waited for.
func (b *Broker) answerWhenStored(c *remoting.Conn, resp *remoting.Command, end int64, flush, replica bool) *remoting.Command {
	if !flush && !replica {
		return resp
	}
	return b.answerAfterWaits(c, resp, end, flush, replica, false, nil)
}

// answerAfterWaits is both: outcome sets the response code from the waits.
func (b *Broker) answerAfterWaits(c *remoting.Conn, resp *remoting.Command, end int64, flush, replica, outcome bool, answered func()) *remoting.Command {
	if rw := b.replicas(); !flush && (rw == nil || !rw.IsSlaveOK(end)) {
		if outcome {
			resp.Code = remoting.SlaveNotAvailable
		}
		if answered != nil {
			answered()
		}
		return resp
	}
	b.inflight.Add(1) // inside the handler's own unit of work, so never after shutdown began
	b.afterPut(end, flush, replica, func(code int32) {
		defer b.inflight.Done()
		if outcome && code != remoting.Success {
			resp.Code = code
		}
		if answered != nil {
			answered()
		}
		_ = c.WriteResponse(resp)
	})
	return nil
}

// answerCommitted is transaction.Options.AnswerCommitted: a two-way
// END_TRANSACTION is answered once its commit is flushed and replicated
// (EndTransactionProcessor.sendFinalMessage), SUCCESS whatever the waits
// end with.
func (b *Broker) answerCommitted(c *remoting.Conn, req, resp *remoting.Command, m *message.Message, res *store.PutResult) *remoting.Command {
	flush, replica := b.storedPutWaits(req, !noWait(m.Properties))
	return b.answerWhenStored(c, resp, res.PhysicalOffset+int64(res.WroteBytes), flush, replica)
}

// storedPutWaits is what a two-way request's stored message m waits for
// before its answer, as 4.9.8's putMessage: the flush under SYNC_FLUSH
// and a slave's ack on a SYNC_MASTER, neither when m says WAIT=false
// (isWaitStoreMsgOK). m must be put with SkipFlushWait, the wait being
// answerWhenStored's.
func (b *Broker) storedPutWaits(req *remoting.Command, wait bool) (flush, replica bool) {
	if req.IsOneway() || !wait {
		return false, false
	}
	return b.opts.FlushDiskType == "SYNC_FLUSH", b.isSyncMaster()
}

// checkSendFrom is AbstractSendMessageProcessor.msgCheck, the authorize
// stage of admitSend: permissions, topic validity,
// auto-creation and the queue id bound, for a producer at address from,
// logged as client. It returns the topic's config and remoting.Success, or
// another response code and its remark.
func (b *Broker) checkSendFrom(client zerolog.LogObjectMarshaler, from string, sh *remoting.SendMessageRequestHeader) (topicgroup.TopicConfig, int32, string) {
	if b.runtime().BrokerPermission&topicgroup.PermWrite == 0 && b.topics.IsOrderTopic(sh.Topic) {
		return topicgroup.TopicConfig{}, remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", b.opts.BrokerIP1)
	}
	if remark := validateTopicName(sh.Topic); remark != "" {
		return topicgroup.TopicConfig{}, remoting.SystemError, remark
	}
	if notAllowedSendTopics[sh.Topic] {
		return topicgroup.TopicConfig{}, remoting.NoPermission, fmt.Sprintf("Sending message to topic[%s] is forbidden.", sh.Topic)
	}
	v, ok := b.topics.Lookup(sh.Topic)
	if !ok {
		var sysFlag int32
		if sh.UnitMode {
			sysFlag = topicSysFlagUnit
			if strings.HasPrefix(sh.Topic, message.RetryTopicPrefix) {
				sysFlag = topicSysFlagUnitSub
			}
		}
		tc, _ := b.topics.createFromDefault(sh.Topic, sh.DefaultTopic, sh.DefaultTopicQueueNums, sysFlag)
		if tc == nil && strings.HasPrefix(sh.Topic, message.RetryTopicPrefix) {
			tc, _ = b.topics.createIfAbsent(&topicgroup.TopicConfig{
				TopicName: sh.Topic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: permReadWrite,
				TopicFilterType: filterTypeSingleTag, TopicSysFlag: sysFlag,
			})
		}
		if tc == nil {
			// Creation is logged by the topic table; the refusal, which a
			// producer retries, is rate-limited.
			b.refusals.Warn(&b.log, "send_topic_not_exist", remoting.TopicNotExist).Str("topic", sh.Topic).
				Str("defaultTopic", sh.DefaultTopic).Object("client", client).
				Msg("send to a topic that does not exist and cannot be created from the default topic")
			return v, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!%s", sh.Topic, faqSuggestion)
		}
		v = *tc
	}
	if v.Perm&topicgroup.PermWrite == 0 {
		return topicgroup.TopicConfig{}, remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", sh.Topic)
	}
	if sh.QueueID >= max(v.WriteQueueNums, v.ReadQueueNums) {
		return topicgroup.TopicConfig{}, remoting.SystemError, fmt.Sprintf("request queueId[%d] is illegal, %s Producer: %s",
			sh.QueueID, topicConfigString(&v), from)
	}
	return v, remoting.Success, ""
}

// routeRetry applies a consumer group's retry limit to sends on its
// %RETRY% topic: once reconsumeTimes reaches the limit the message goes to
// the group's %DLQ% topic instead (SendMessageProcessor.handleRetryAndDLQ).
func (b *Broker) routeRetry(req *remoting.Command, sh *remoting.SendMessageRequestHeader, m *message.Message) (int32, string, bool) {
	group, ok := strings.CutPrefix(sh.Topic, message.RetryTopicPrefix)
	if !ok {
		return 0, "", true
	}
	cfg := b.clients.SubGroups.FindOrCreate(group)
	if cfg == nil {
		return remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group not exist, %s %s", group, faqSuggestion), false
	}
	maxTimes := cfg.RetryMaxTimes
	if req.Version >= versionV3_4_9 && sh.HasMaxReconsumeTimes {
		maxTimes = sh.MaxReconsumeTimes
	}
	if sh.ReconsumeTimes < maxTimes {
		return 0, "", true
	}
	dlq := message.DLQTopicPrefix + group
	if tc, _ := b.topics.CreateSystemTopic(dlq, dlqQueueNums, dlqPerm); tc == nil {
		return remoting.SystemError, fmt.Sprintf("topic[%s] not exist", dlq), false
	}
	m.Topic = dlq
	m.QueueID = rand.Int32N(dlqQueueNums)
	delete(m.Properties, message.PropDelay)
	return 0, "", true
}

// putFailure maps a store or hook error to the stock send reply.
func (b *Broker) putFailure(resp *remoting.Command, err error) *remoting.Command {
	resp.Code, resp.Remark = b.putFailureCode(err)
	return resp
}

// putFailureCode is the stock response code and remark for a store or hook
// error. Its log line goes through b.refusals: a full disk refuses every
// send of a retrying client, and one line each would fill the log volume.
func (b *Broker) putFailureCode(err error) (code int32, remark string) {
	code, remark, reason := b.putFailureReason(err)
	b.refusals.Warn(&b.log, reason, code).Err(err).Msg("send refused by the store")
	return code, remark
}

// putFailureReason maps a store or hook error to its response code, remark
// and refusal reason (the metrics label).
func (b *Broker) putFailureReason(err error) (code int32, remark, reason string) {
	pe := remoting.AsRefusal(err)
	reason = "send_store_error"
	switch {
	case pe != nil:
		code, remark, reason = pe.Code, pe.Remark, "send_message_refused"
	case errors.Is(err, store.ErrMessageTooLarge), errors.Is(err, store.ErrPropertiesTooLarge), errors.Is(err, store.ErrTopicTooLong):
		code, remark, reason = remoting.MessageIllegal, b.illegalMessageRemark(), "send_message_too_large"
	case errors.Is(err, store.ErrLmqQueueNumExceeded):
		code, remark, reason = remoting.SystemError, lmqExceededRemark, "send_lmq_queue_num_exceeded"
	case errors.Is(err, store.ErrInvalidTopic), errors.Is(err, store.ErrInvalidBatch):
		code, remark, reason = remoting.MessageIllegal, err.Error(), "send_message_illegal"
	case errors.Is(err, store.ErrOSPageCacheBusy):
		// Stock OS_PAGECACHE_BUSY: 1, which a 4.9.8 producer retries (fastfail.go).
		code, remark, reason = remoting.SystemError, pcSynchronizedRemark, "send_page_cache_busy"
	case errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrNotWritable), errors.Is(err, store.ErrSlave):
		// The stock remark, with the store's cause appended.
		code = remoting.ServiceNotAvailable
		remark = "service not available now. It may be caused by one of the following reasons: " +
			"the broker's disk is full [" + b.store.DiskUtil() + "], messages are put to the slave, message store has been shut down, etc. (" + err.Error() + ")"
		switch {
		case errors.Is(err, store.ErrDiskFull):
			reason = "send_disk_full"
		case errors.Is(err, store.ErrNotWritable):
			reason = "send_store_not_writable"
		case errors.Is(err, store.ErrSlave):
			reason = "send_to_slave"
		default:
			reason = "send_store_closed"
		}
	default:
		code, remark = remoting.SystemError, "UNKNOWN_ERROR: "+err.Error()
	}
	return code, remark, reason
}

func (b *Broker) illegalMessageRemark() string {
	return fmt.Sprintf("the message is illegal, maybe msg body or properties length not matched. msg body length limit %dB, msg properties length limit 32KB.", b.opts.MaxMessageSize)
}

// connHost is the peer's address as BORNHOST (IPv4; the listeners are tcp4).
func connHost(c *remoting.Conn) netip.AddrPort {
	ap, err := netip.ParseAddrPort(c.RemoteAddr())
	if err != nil {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// ----- Delay levels -----

// delayHook rewrites a message carrying DELAY > 0 onto SCHEDULE_TOPIC_XXXX
// (clamped to the highest level). Half messages are not delayed: their DELAY
// stays in the properties and applies when the transaction commits, which
// re-stores the message through this hook as a COMMIT-typed message.
func (b *Broker) delayHook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf {
		return nil
	}
	if _, err := b.levels.Rewrite(m); err != nil {
		return remoting.Refuse(remoting.MessageIllegal, err.Error())
	}
	return nil
}

// delaySend reports a single send whose only hook is the delay hook and
// which that hook would move to a delay level (delayHook, Levels.Rewrite):
// no other hook acts (no transaction flag or property, no timer property,
// not a retry or system topic) and its DELAY names a level. send then
// stores it on SCHEDULE_TOPIC_XXXX queue level-1 with the producer's text
// edited (delayText) instead of a map; anything else (a refusal, DELAY=0,
// a prepared record included) takes the map path as before.
func (b *Broker) delaySend(sh *remoting.SendMessageRequestHeader) (level int, clamped bool) {
	switch {
	case sh.Batch, !b.hooksDecideByText(sh.Topic), strings.Contains(sh.Properties, message.PropTimerPrefix):
		return 0, false
	}
	p := message.Props(sh.Properties)
	if _, ok := p.Lookup(transaction.HookProperty); ok {
		return 0, false
	}
	level, clamped, err := b.levels.TextLevel(p, sh.SysFlag)
	if err != nil {
		return 0, false
	}
	return level, clamped
}

// delayText is the properties text of a delay-level send (delaySend) for
// queue queueID of its topic: the producer's pairs without WAIT, then
// CLUSTER and what Levels.Rewrite sets (DELAY when it clamped the level,
// REAL_TOPIC, REAL_QID), which, last, win over a producer's own.
func (b *Broker) delayText(sh *remoting.SendMessageRequestHeader, queueID int32, level int, clamped bool) string {
	drop := []string{message.PropWait, message.PropRealTopic, message.PropRealQueueID}
	set := [][2]string{{message.PropCluster, b.opts.BrokerClusterName}}
	if clamped {
		drop = append(drop, message.PropDelay)
		set = append(set, [2]string{message.PropDelay, strconv.Itoa(level)})
	}
	set = append(set, [2]string{message.PropRealTopic, sh.Topic}, [2]string{message.PropRealQueueID, strconv.FormatInt(int64(queueID), 10)})
	return message.EditProperties(sh.Properties, drop, set...)
}

// checkBatch refuses what stock refuses in a batch: a delay level or a
// transaction flag (sysFlag or TRAN_MSG) on any member (CommitLog.asyncPutMessages).
func checkBatch(msgs []*message.Message) error {
	for _, m := range msgs {
		level, err := schedule.DelayLevel(m.Properties)
		if err != nil || level > 0 {
			return remoting.Refusef(remoting.MessageIllegal, "batch messages of topic %s cannot carry a delay level", m.Topic)
		}
		if message.TransactionType(m.SysFlag) != 0 || remoting.JavaBool(m.Properties[transaction.HookProperty]) {
			return remoting.Refusef(remoting.MessageIllegal, "batch messages of topic %s cannot be transactional", m.Topic)
		}
	}
	return nil
}

// ----- Message type -----

// messageTypeConflict is the topic message type check of the 5.x proxy
// (ProducerProcessor.sendMessage with DefaultTopicMessageTypeValidator),
// run on every send when enableTopicMessageTypeCheck is on: the refusal's
// remark when tc's message.type does not take a message with props, "" when
// it does; force checks whatever the key says (a gRPC send). Retry and DLQ topics are not checked: what is sent there is a
// consumer's re-send of another topic's message, with a delay level.
func (b *Broker) messageTypeConflict(tc *topicgroup.TopicConfig, props map[string]string, force bool) string {
	if !b.opts.EnableTopicMessageTypeCheck && !force {
		return ""
	}
	if strings.HasPrefix(tc.TopicName, message.RetryTopicPrefix) || strings.HasPrefix(tc.TopicName, message.DLQTopicPrefix) ||
		b.topics.IsSystemTopic(tc.TopicName) {
		return ""
	}
	if err := message.CheckTopicMessageType(message.TopicMessageTypeOf(tc.Attributes), message.MessageTypeOf(props)); err != nil {
		return err.Error()
	}
	return ""
}

// ----- Transactions refused -----

// rejectTransactionHook refuses a producer's half message while
// rejectTransactionMessage is set (read on every send, so an update acts at
// once), as stock SendMessageProcessor does: NO_PERMISSION, which a
// producer retries on another broker. It acts on TRAN_MSG only (the key
// hookProperties already names) and not on the half topic, where the
// transaction service re-stores half messages it checks.
func (b *Broker) rejectTransactionHook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf || !b.runtime().RejectTransactionMessage {
		return nil
	}
	if v, ok := m.Properties[message.PropTranMsg]; ok && strings.EqualFold(v, "true") {
		return remoting.Refusef(remoting.NoPermission, "the broker[%s] sending transaction message is forbidden", b.runtime().BrokerIP1)
	}
	return nil
}

// ----- Send-back -----

// dlqTopics creates a group's DLQ topic as a send-back would, for the delay
// and timer services moving aside a retry message the store refuses
// (schedule.DLQTopics, timer.DLQTopics).
type dlqTopics struct{ topics *TopicConfigManager }

func (d dlqTopics) EnsureDLQ(topic string) bool {
	tc, _ := d.topics.CreateSystemTopic(topic, dlqQueueNums, dlqPerm)
	return tc != nil
}

// processConsumerSendMsgBack serves CONSUMER_SEND_MSG_BACK: a consumer that
// failed a message hands back its commitlog offset, and the stored original
// goes to %RETRY%<group> with delay level 3+reconsumeTimes (or the requested
// level), or to %DLQ%<group> once the group's retry budget is spent or the
// client asks for it with a negative level
// (SendMessageProcessor.asyncConsumerSendMsgBack).
func (b *Broker) processConsumerSendMsgBack(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.ConsumerSendMsgBackRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	offset, group, delayLevel := h.Offset, h.Group, int(h.DelayLevel)
	hasMax, headerMax := h.HasMaxReconsumeTimes, h.MaxReconsumeTimes
	resp := remoting.NewResponse(req, remoting.Success, "")
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}

	// The group becomes %RETRY%<group> (and %DLQ%<group>): a name that cannot
	// be stored would poison the delay level it is parked on.
	if err := message.ValidateRetryGroup(group); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	cfg := b.clients.SubGroups.FindOrCreate(group)
	if cfg == nil {
		return fail(remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group not exist, %s %s", group, faqSuggestion))
	}
	if b.runtime().BrokerPermission&topicgroup.PermWrite == 0 {
		return fail(remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", b.opts.BrokerIP1))
	}
	if cfg.RetryQueueNums <= 0 {
		return resp // stock: nothing is stored and the consumer is told it worked
	}

	retryTopic := message.RetryTopicPrefix + group
	tc, _ := b.topics.CreateRetryTopic(group, cfg.RetryQueueNums, permReadWrite)
	if tc == nil {
		return fail(remoting.SystemError, fmt.Sprintf("topic[%s] not exist", retryTopic))
	}
	if tc.Perm&topicgroup.PermWrite == 0 {
		return fail(remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", retryTopic))
	}

	raw, err := b.store.LookMessageByOffset(offset)
	if err != nil {
		return fail(remoting.SystemError, fmt.Sprintf("look message by offset failed, %d", offset))
	}
	orig, err := message.DecodeRecord(raw)
	if err != nil {
		return fail(remoting.SystemError, fmt.Sprintf("look message by offset failed, %d: %v", offset, err))
	}

	props := make(map[string]string, len(orig.Properties)+4)
	for k, v := range orig.Properties {
		props[k] = v
	}
	if props[message.PropRetryTopic] == "" {
		props[message.PropRetryTopic] = orig.Topic
	}
	if props[message.PropOriginMessageID] == "" {
		props[message.PropOriginMessageID] = orig.MsgID
	}
	delete(props, message.PropWait)

	maxTimes := cfg.RetryMaxTimes
	if req.Version >= versionV3_4_9 && hasMax {
		maxTimes = headerMax
	}
	topic := retryTopic
	queueID := rand.Int32N(tc.WriteQueueNums)
	if orig.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		topic = message.DLQTopicPrefix + group
		queueID = rand.Int32N(dlqQueueNums)
		if dlq, _ := b.topics.CreateSystemTopic(topic, dlqQueueNums, dlqPerm); dlq == nil {
			return fail(remoting.SystemError, fmt.Sprintf("topic[%s] not exist", topic))
		}
		delete(props, message.PropDelay)
	} else {
		if delayLevel == 0 {
			delayLevel = 3 + int(orig.ReconsumeTimes)
		}
		props[message.PropDelay] = strconv.Itoa(delayLevel)
	}

	m := &message.Message{
		Topic: topic, QueueID: queueID, Flag: orig.Flag, Body: orig.Body, Properties: props,
		SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
		// 4.9.8 marks the message WAIT=false (setWaitStoreMsgOK(false)
		// before copying its properties): the put waits neither for a
		// SYNC_FLUSH fsync nor for a SYNC_MASTER's slave, and the answer
		// is SUCCESS once it is in the commitlog.
		SkipFlushWait: true,
	}
	if _, err := b.putMessage(m); err != nil {
		if pe := remoting.AsRefusal(err); pe != nil {
			return fail(pe.Code, pe.Remark)
		}
		// Stock answers SYSTEM_ERROR with the PutMessageStatus name
		// (SERVICE_NOT_AVAILABLE on a slave or a full disk); the cause
		// follows it.
		return fail(remoting.SystemError, store.PutStatusName(nil, err)+" ("+err.Error()+")")
	}
	b.bstats.RecordSendBack(props[message.PropRetryTopic], group)
	if d := b.bstats.Detail(); d != nil && strings.HasPrefix(topic, message.DLQTopicPrefix) {
		d.SendToDLQ.Item(brokerstats.Key{Topic: props[message.PropRetryTopic], Group: group}).Add(1)
	}
	return resp
}

// ----- Request-reply -----

// Request-reply (J4 ReplyMessageProcessor): a responder sends the reply with
// SEND_REPLY_MESSAGE(_V2); the broker pushes it to the requester's
// connection, named by the REPLY_TO_CLIENT property and found among the
// producer connections of this broker (or, before the requester's first
// heartbeat, as the connection the request came on: requesterTable), with PUSH_REPLY_MESSAGE_TO_CLIENT, and
// with storeReplyMessageEnable also stores it on its topic.
//
//	SEND_REPLY_MESSAGE ─► msgCheck ─► push to REPLY_TO_CLIENT ─► SUCCESS msgId "0"
//	                                          │ no client / failed ─► SYSTEM_ERROR
//	                                          └─► store (storeReplyMessageEnable): msgId, queueOffset

// requesterTable remembers, per client id, the connection that last sent a
// request (a message with REPLY_TO_CLIENT). The stock broker finds the
// requester only among producer heartbeats, so a reply that comes before the
// requester's first heartbeat fails; the Go client's Request heartbeats at
// once only for a topic the name server does not know yet. rmq falls back on
// the connection the request came on.
type requesterTable struct {
	mu       sync.Mutex
	byClient map[string]*remoting.Conn
}

// noteRequest records c as the connection of the client a request names in
// its properties text; anything else is a no-op costing one substring search.
func (t *requesterTable) noteRequest(props string, c *remoting.Conn) {
	if c == nil || !strings.Contains(props, message.PropReplyToClient) {
		return
	}
	id, ok := message.Props(props).Lookup(message.PropReplyToClient)
	if !ok || id == "" {
		return
	}
	t.mu.Lock()
	if t.byClient == nil {
		t.byClient = make(map[string]*remoting.Conn)
	}
	t.byClient[id] = c
	t.mu.Unlock()
}

func (t *requesterTable) find(clientID string) *remoting.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.byClient[clientID]; c != nil && !c.Closed() {
		return c
	}
	return nil
}

// dropConn forgets a closed connection.
func (t *requesterTable) dropConn(c *remoting.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, conn := range t.byClient {
		if conn == c {
			delete(t.byClient, id)
		}
	}
}

// replyPushTimeout bounds the push (Broker2Client.callClient's 10 s).
const replyPushTimeout = 10 * time.Second

// processReply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2.
func (b *Broker) processReply(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := b.sendResponse(req)
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}
	sh, err := parseSendHeader(req)
	if err != nil {
		return fail(remoting.SystemError, err.Error())
	}
	// Stock checks a reply as a send (msgCheck), not its size or type: the
	// push carries it as it came.
	a, refusal := b.admitSend(&sendIn{client: c, from: c.RemoteAddr(), sh: sh, skipSize: true})
	if refusal != nil {
		return fail(refusal.Code, refusal.Remark)
	}
	queueID := a.queueID
	bornHost := connHost(c)

	if remark, ok := b.pushReply(c, sh, req.Body); ok {
		resp.Code, resp.Remark = remoting.Success, ""
		resp.SetExt("msgId", "0")
		resp.SetExt("queueId", strconv.FormatInt(int64(queueID), 10))
		resp.SetExt("queueOffset", "0")
	} else {
		resp.Code, resp.Remark = remoting.SystemError, remark
	}

	if b.opts.StoreReplyMessageEnable {
		// Stored with the responder's properties as they came; a failed put
		// is only logged and leaves the push's answer (as stock).
		m := &message.Message{
			Topic: sh.Topic, QueueID: queueID, Flag: sh.Flag, Body: req.Body,
			RawProperties: sh.Properties, SysFlag: sh.SysFlag &^ msgSysFlagHostV6Mask,
			BornTimestamp: sh.BornTimestamp, BornHost: bornHost, ReconsumeTimes: sh.ReconsumeTimes,
		}
		// The answer waits for the flush and the slave as a send's does
		// (4.9.8 stores the reply with a synchronous putMessage), from
		// their callbacks; their outcome does not change it.
		flush, replica := b.storedPutWaits(req, !noWaitText(sh.Properties))
		m.SkipFlushWait = true
		res, err := b.putText(m, false)
		if err != nil {
			// Rate-limited like every refusal of a full disk, under the
			// code a send would have got (the push's answer stands).
			code, _, _ := b.putFailureReason(err)
			b.refusals.Warn(&b.log, "reply_not_stored", code).Err(err).Str("topic", sh.Topic).Msg("reply message not stored")
			return resp
		}
		code := resp.Code // the push's answer stands
		setSendReply(resp, res, queueID)
		resp.Code = code
		return b.answerWhenStored(c, resp, res.PhysicalOffset+int64(res.WroteBytes), flush, replica)
	}
	return resp
}

// pushReply sends the reply to the client named by REPLY_TO_CLIENT with
// PUSH_REPLY_MESSAGE_TO_CLIENT and waits for its answer. It returns the
// stock remark when the push did not succeed.
func (b *Broker) pushReply(c *remoting.Conn, sh *remoting.SendMessageRequestHeader, body []byte) (string, bool) {
	clientID, ok := message.Props(sh.Properties).Lookup(message.PropReplyToClient)
	if !ok {
		b.refusals.Warn(&b.log, "reply_no_client", remoting.SystemError).Msg(message.PropReplyToClient + " is null, can not reply message")
		return "reply message properties[" + message.PropReplyToClient + "] is null", false
	}
	conn := b.clients.Producers.FindConn(clientID)
	if conn == nil {
		conn = b.requesters.find(clientID)
	}
	if conn == nil {
		remark := "push reply message fail, channel of <" + clientID + "> not found."
		b.refusals.Warn(&b.log, "reply_channel_not_found", remoting.SystemError).Str("client", clientID).Msg("push reply message fail: channel not found")
		return remark, false
	}
	now := b.clock.Now().UnixMilli()
	ext := map[string]string{
		"producerGroup":         sh.ProducerGroup,
		"topic":                 sh.Topic,
		"defaultTopic":          sh.DefaultTopic,
		"defaultTopicQueueNums": strconv.FormatInt(int64(sh.DefaultTopicQueueNums), 10),
		"queueId":               strconv.FormatInt(int64(sh.QueueID), 10),
		"sysFlag":               strconv.FormatInt(int64(sh.SysFlag), 10),
		"bornTimestamp":         strconv.FormatInt(sh.BornTimestamp, 10),
		"flag":                  strconv.FormatInt(int64(sh.Flag), 10),
		"properties":            message.EditProperties(sh.Properties, []string{message.PropPushReplyTime}, [2]string{message.PropPushReplyTime, strconv.FormatInt(now, 10)}),
		"reconsumeTimes":        strconv.FormatInt(int64(sh.ReconsumeTimes), 10),
		"unitMode":              strconv.FormatBool(sh.UnitMode),
		"bornHost":              connHost(c).String(),
		"storeHost":             b.storeHost().String(),
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}
	push := remoting.NewRequest(remoting.PushReplyMessageToClient, ext, body)
	ctx, cancel := context.WithTimeout(context.Background(), replyPushTimeout)
	defer cancel()
	pushed, err := conn.Invoke(ctx, push)
	if err != nil {
		b.refusals.Warn(&b.log, "reply_push_failed", remoting.SystemError).Err(err).Str("client", clientID).Msg("push reply message failed")
		return "push reply message to " + clientID + "fail.", false
	}
	if pushed.Code != remoting.Success {
		b.refusals.Warn(&b.log, "reply_push_refused", remoting.SystemError).Str("client", clientID).Str("remark", pushed.Remark).Msg("push reply message refused")
		return "push reply message to " + clientID + "fail.", false
	}
	return "", true
}

// traceTopic is the topic created at start for message traces: the
// msgTraceTopicName when traceTopicEnable is set, else none.
func traceTopic(o *Options) string {
	if !o.TraceTopicEnable {
		return ""
	}
	if o.MsgTraceTopicName == "" {
		return message.TopicTrace
	}
	return o.MsgTraceTopicName
}

// ----- The Go API (grpcapi) -----

// The broker's Go API for front ends served in the same
// process that are not remoting connections (package grpcapi, the 5.x gRPC
// endpoint). A send runs the send pipeline of the remoting requests
// (above: admitSend, putMessage); END_TRANSACTION the transaction
// service.

// PutRequest is one message to store, as a front end hands it over.
type PutRequest struct {
	Topic string
	// QueueID < 0 lets the broker pick a write queue at random.
	QueueID       int32
	Flag          int32
	Body          []byte
	Properties    map[string]string
	SysFlag       int32
	BornTimestamp int64
	BornHost      netip.AddrPort
	// From names the producer in logs and remarks.
	From string
	// CheckMessageType runs the topic message type check whatever the
	// broker's enableTopicMessageTypeCheck (the gRPC front end checks by
	// default, as the stock proxy).
	CheckMessageType bool
}

// PutReply is what a successful Put stored.
type PutReply struct {
	// MsgID is the offset message id (store host + commitlog offset).
	MsgID string
	// QueueID is the queue the producer addressed (a put hook may have moved
	// the record to a system queue).
	QueueID        int32
	QueueOffset    int64
	PhysicalOffset int64
	// TransactionID is set for a half message, RecallHandle for a timer
	// message that can be recalled.
	TransactionID string
	RecallHandle  string
	// FlushTimeout reports SYNC_FLUSH not done within syncFlushTimeout (the
	// message is stored).
	FlushTimeout bool
	// code is the send's outcome as a remoting response code: Success, or,
	// the message being stored, FlushDiskTimeout, SlaveNotAvailable or
	// FlushSlaveTimeout (a SYNC_MASTER's wait for its slave; ha.go).
	// Front ends read it as SendStatus.
	code int32
}

// SendStatus is how the message was stored, as the client's SendStatus
// names it (MQClientAPIImpl.processSendResponse): ok when SEND_OK, and
// otherwise FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE,
// the message being stored all the same. A front end that is not remoting
// (the 5.x proxy's SendMessageActivity) answers from it.
func (r *PutReply) SendStatus() (status string, ok bool) {
	code := r.code
	if code == remoting.Success && r.FlushTimeout {
		code = remoting.FlushDiskTimeout
	}
	status, _ = remoting.SendStatus(code)
	return status, code == remoting.Success
}

// ErrTopicMessageType is the Cause of a send refused by the topic message
// type check (enableTopicMessageTypeCheck), which the 5.x proxy answers
// with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE.
var ErrTopicMessageType = errors.New("broker: message type not taken by the topic's message.type")

// Put stores one message as SEND_MESSAGE would: topic checks and
// auto-creation, the size limits, the put hooks (transactions, delay levels,
// timer messages) and, under SYNC_FLUSH, the wait for the flush.
func (b *Broker) Put(req PutRequest) (*PutReply, error) {
	if !b.enter() {
		return nil, remoting.Refuse(remoting.ServiceNotAvailable, "the broker is shutting down")
	}
	defer b.inflight.Done()
	// No default topic: as through the 5.x proxy, whose route lookup fails
	// first, a topic that does not exist is not created by a send.
	sh := &remoting.SendMessageRequestHeader{Topic: req.Topic, QueueID: req.QueueID, SysFlag: req.SysFlag}
	props := make(map[string]string, len(req.Properties)+1)
	for k, v := range req.Properties {
		props[k] = v
	}
	wait := !noWait(props)
	delete(props, message.PropWait)
	a, refusal := b.admitSend(&sendIn{
		client: fromAddr(req.From), from: req.From, sh: sh,
		bodyLen: len(req.Body), propsLen: len(message.MarshalProperties(props)),
		typeCheck: true, forceTypeCheck: req.CheckMessageType, props: props,
	})
	if refusal != nil {
		return nil, refusal
	}
	if r := b.inSyncRefusal(wait); r != nil {
		return nil, r
	}
	queueID, sysFlag := a.queueID, a.sysFlag
	props[message.PropCluster] = b.opts.BrokerClusterName
	syncFlush := b.opts.FlushDiskType == "SYNC_FLUSH"
	m := &message.Message{
		Topic: req.Topic, QueueID: queueID, Flag: req.Flag, Body: req.Body, Properties: props,
		SysFlag: sysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, SkipFlushWait: syncFlush,
	}
	res, err := b.putMessage(m)
	if err != nil {
		return nil, remoting.Refuse(b.putFailureCode(err))
	}
	reply := &PutReply{
		MsgID: res.MsgID(0), QueueID: queueID, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		TransactionID: transaction.IDFor(m, res), RecallHandle: b.recallHandle(m),
		FlushTimeout: res.Status == store.PutFlushDiskTimeout,
	}
	if reply.FlushTimeout {
		reply.code = remoting.FlushDiskTimeout
	}
	flush, replica := syncFlush, b.isSyncMaster() && wait
	if flush || replica {
		// This goroutine is the gRPC handler's: it may wait. A half
		// message is held from the checks meanwhile.
		if reply.TransactionID != "" && b.tx != nil {
			b.tx.Hold(res.PhysicalOffset)
			defer b.tx.Answered(res.PhysicalOffset)
		}
		done := make(chan int32, 1)
		b.afterPut(res.PhysicalOffset+int64(res.WroteBytes), flush, replica, func(code int32) { done <- code })
		if code := <-done; code != remoting.Success {
			reply.code = code
			reply.FlushTimeout = reply.FlushTimeout || code == remoting.FlushDiskTimeout
		}
	}
	return reply, nil
}

// fromAddr logs a front end's producer as a client address.
type fromAddr string

func (a fromAddr) MarshalZerologObject(e *zerolog.Event) { e.Str("addr", string(a)) }

// ----- Refusal kinds -----

// A front end that does not answer in remoting response codes (grpcapi)
// still has to tell the broker's refusals apart: the 5.x proxy answers a
// missing topic, a missing group, a forbidden or malformed request each
// with its own code (ResponseBuilder.buildCode). Rather than reading the
// wire package's code table, it asks the broker what kind of refusal an
// error is. Every refusal stays the one *remoting.Refusal; this is only
// its reading for the other front ends.

// RefusalKind is what a broker refusal means to a front end that is not
// remoting.
type RefusalKind uint8

// The refusal kinds; every other response code is RefusedOther, an
// internal failure to such a front end.
const (
	RefusedOther        RefusalKind = iota
	RefusedBusy                     // SYSTEM_BUSY
	RefusedUnsupported              // REQUEST_CODE_NOT_SUPPORTED
	RefusedNoGroup                  // SUBSCRIPTION_GROUP_NOT_EXIST
	RefusedNoTopic                  // TOPIC_NOT_EXIST
	RefusedForbidden                // NO_PERMISSION
	RefusedIllegal                  // MESSAGE_ILLEGAL
	RefusedFlushTimeout             // FLUSH_DISK_TIMEOUT
)

// refusalKinds reads the response codes that are not RefusedOther.
var refusalKinds = map[int32]RefusalKind{
	remoting.SystemBusy:                RefusedBusy,
	remoting.RequestCodeNotSupported:   RefusedUnsupported,
	remoting.SubscriptionGroupNotExist: RefusedNoGroup,
	remoting.TopicNotExist:             RefusedNoTopic,
	remoting.NoPermission:              RefusedForbidden,
	remoting.MessageIllegal:            RefusedIllegal,
	remoting.FlushDiskTimeout:          RefusedFlushTimeout,
}

// Refused reports whether err's chain holds a broker refusal, and if so
// its kind and remark.
func Refused(err error) (kind RefusalKind, remark string, ok bool) {
	r := remoting.AsRefusal(err)
	if r == nil {
		return RefusedOther, "", false
	}
	return refusalKinds[r.Code], r.Remark, true
}

// WarnInternal counts and rate-limits, with the broker's refusals, an
// internal failure a front end logs without answering a request with it
// (reason names it; it is counted as SYSTEM_ERROR, as the broker's own
// such failures are).
func (b *Broker) WarnInternal(log *zerolog.Logger, reason string) *zerolog.Event {
	return b.refusals.Warn(log, reason, remoting.SystemError)
}
