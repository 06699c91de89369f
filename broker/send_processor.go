package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

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

// putMessage is the route and put stages of the map mode (pipeline.go):
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
// reply.go).
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
		if refusal != nil {
			return fail(refusal.Code, refusal.Remark)
		}
		awaitFlush, awaitReplica = deferFlush && !skipWait, syncMaster && !skipWait
		if res, err = b.putMessages(msgs); err != nil {
			return b.putFailure(resp, err)
		}
	case plain != nil:
		// m stays on this goroutine's stack: the store copies it.
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
// stage of admitSend (pipeline.go): permissions, topic validity,
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
