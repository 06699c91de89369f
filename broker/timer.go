package broker

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/timer"
	"github.com/rmqio/rmq/topicgroup"
)

// timerProps are the user properties that make a 5.x timer message.
var timerProps = [...]string{message.PropTimerDeliverMs, message.PropTimerDelaySec, message.PropTimerDelayMs}

// timerDisabledRemark is the 5.x remark of a timer send to a broker with
// timerWheelEnable=false (SendMessageProcessor, WHEEL_TIMER_NOT_ENABLE).
const timerDisabledRemark = "accurate timer message is not enabled, timerWheelEnable is false"

// timerHook admits 5.x timer messages (TIMER_DELAY_SEC > TIMER_DELAY_MS >
// TIMER_DELIVER_MS) after the delay hook: a DELAY level wins, so a message
// already moved to SCHEDULE_TOPIC_XXXX only loses its timer properties. Half
// messages keep theirs until the commit re-stores them. A time at or before
// now leaves the message as it is (delivered at once); a time not yet due
// moves it to rmq_sys_wheel_timer.
func (b *Broker) timerHook(m *message.Message) error {
	switch m.Topic {
	case message.TopicTransHalf:
		return nil
	case message.TopicSchedule:
		for _, k := range timerProps {
			delete(m.Properties, k)
		}
		return nil
	}
	now := b.msgClock.Now().UnixMilli()
	if b.timers == nil {
		// timerWheelEnable=false: the 5.x broker refuses what it would have
		// admitted as a timer message, valid or not
		// (HookUtils.handleScheduleMessage); a re-put (TIMER_OUT_MS) is not one.
		if _, isTimer, _, _ := timer.Admit(m.Properties, now, b.opts.TimerMaxDelaySec); isTimer && m.Topic != message.TopicWheelTimer {
			return remoting.Refuse(remoting.SystemError, timerDisabledRemark)
		}
		return nil
	}
	if _, _, err := timer.AdmitMessage(m, now, b.opts.TimerMaxDelaySec); err != nil {
		return remoting.Refuse(remoting.MessageIllegal, err.Error())
	}
	return nil
}

// timerSend reports a single send whose only hook is the timer hook and
// which that hook would move into the wheel as it is (timerHook,
// timer.AdmitMessage): the timer store is on, no other hook acts (no DELAY,
// no transaction flag or property, not a retry or system topic) and the
// timer properties admit it, not yet due. send then stores it on the
// timer topic with the producer's text edited (wheelText) instead of a
// map; anything else (a refusal included) takes the map path as before.
func (b *Broker) timerSend(sh *remoting.SendMessageRequestHeader) (deliverMs int64, ok bool) {
	switch {
	case b.timers == nil, sh.Batch, !b.hooksDecideByText(sh.Topic):
		return 0, false
	}
	p := message.Props(sh.Properties)
	if _, ok := p.Lookup(message.PropDelay); ok {
		return 0, false
	}
	if _, ok := p.Lookup(transaction.HookProperty); ok {
		return 0, false
	}
	deliverMs, wheel, err := timer.AdmitMessageText(sh.Topic, sh.SysFlag, p, b.msgClock.Now().UnixMilli(), b.opts.TimerMaxDelaySec)
	if err != nil || !wheel {
		return 0, false
	}
	return deliverMs, true
}

// wheelText is the properties text of a timer send (timerSend) for queue
// queueID of its topic: timer.RewriteText of the producer's text, less
// WAIT and with CLUSTER, as the send path stores every text.
func (b *Broker) wheelText(sh *remoting.SendMessageRequestHeader, queueID int32, deliverMs int64) string {
	return timer.RewriteText(sh.Properties, sh.Topic, queueID, deliverMs, message.PropWait, [2]string{message.PropCluster, b.opts.BrokerClusterName})
}

// wheelRecallHandle is recallHandle for a timer send stored by the text
// path (timerSend): m is the stored message, on the timer topic.
func (b *Broker) wheelRecallHandle(sh *remoting.SendMessageRequestHeader, m *message.Message, deliverMs int64) string {
	h, _ := timer.RecallHandleFor(sh.Topic, message.Props(m.RawProperties).Get(message.PropUniqKey), deliverMs, b.opts.BrokerName)
	return h
}

// checkBatchTimers refuses a batch that mixes members bound for the wheel
// with members stored at once: a batch is stored atomically on one queue.
func checkBatchTimers(msgs []*message.Message) error {
	wheel := 0
	for _, m := range msgs {
		if m.Topic == message.TopicWheelTimer {
			wheel++
		}
	}
	if wheel != 0 && wheel != len(msgs) {
		return remoting.Refusef(remoting.MessageIllegal,
			"a batch must not mix timer messages with messages due now (%d of %d are timers)", wheel, len(msgs))
	}
	return nil
}

// recallHandle is the send reply's recallHandle of a message the timer hook
// moved into the wheel ("" otherwise).
func (b *Broker) recallHandle(m *message.Message) string {
	h, ok := timer.IssueRecallHandle(m, b.opts.BrokerName)
	if !ok {
		return ""
	}
	return h
}

// processRecallMessage serves RECALL_MESSAGE (370): the recall handle names a
// timer message not yet delivered, which is then never delivered.
func (b *Broker) processRecallMessage(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.RecallMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, handle, group := hd.Topic, hd.RecallHandle, hd.ProducerGroup
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt(message.PropMsgRegion, b.opts.RegionID)
	uniq, err := b.Recall(topic, handle, group)
	if err != nil {
		refused := remoting.RefusalResponse(req, err) // Recall refuses with a *remoting.Refusal only
		resp.Code, resp.Remark = refused.Code, refused.Remark
		return resp
	}
	(&remoting.RecallMessageResponseHeader{MsgID: uniq}).Encode(resp)
	return resp
}

// Recall cancels the timer message a recall handle (from a send's reply)
// names, as RECALL_MESSAGE does (broker RecallMessageProcessor): the switch,
// the broker's write permission and the topic are checked here, the handle
// and the delivery state by the timer store. It returns the message's uniq
// key (the response's msgId); every failure is a *remoting.Refusal.
func (b *Broker) Recall(topic, handle, producerGroup string) (string, error) {
	fail := func(code int32, remark string) (string, error) {
		return "", remoting.Refuse(code, remark)
	}
	if !b.enter() {
		return fail(remoting.ServiceNotAvailable, "recall failed, broker service not available")
	}
	defer b.inflight.Done()
	switch {
	case !b.opts.RecallMessageEnable:
		return fail(remoting.NoPermission, "recall failed, operation is forbidden")
	case b.opts.BrokerPermission&topicgroup.PermWrite == 0:
		return fail(remoting.ServiceNotAvailable, "recall failed, broker service not available")
	case !b.topics.Has(topic):
		return fail(remoting.TopicNotExist, fmt.Sprintf("recall failed, the topic %s not exist", topic))
	}
	if b.timers == nil {
		return fail(remoting.SystemError, "recall failed, "+timerDisabledRemark)
	}
	uniq, err := b.timers.Recall(topic, handle, producerGroup)
	switch {
	case errors.Is(err, timer.ErrRecallRefused):
		return fail(remoting.IllegalOperation, err.Error())
	case err != nil:
		return fail(remoting.SystemError, "recall failed, execute error: "+err.Error())
	}
	return uniq, nil
}

// timerRuntimeInfo adds the 5.x timer figures to GET_BROKER_RUNTIME_INFO
// under the keys the 5.x broker uses (and rmq admin timerStatus reads).
func (b *Broker) timerRuntimeInfo(t map[string]string) {
	if b.timers == nil {
		t["timerWheelEnable"] = "false" // rmq admin timerStatus shows it as disabled
		return
	}
	s := b.timers.Stats()
	t["timerCongestNum"] = strconv.FormatInt(s.Pending, 10)
	t["timerOffsetBehind"] = strconv.FormatInt(s.EnqueueBehind, 10)
	t["timerReadBehind"] = strconv.FormatInt(s.ReadLagMs/1000, 10)
	t["timerReadBehindMs"] = strconv.FormatInt(s.ReadLagMs, 10)
	t["timerEnqueueTps"] = strconv.FormatFloat(s.EnqueueRate, 'f', 2, 64)
	t["timerDequeueTps"] = strconv.FormatFloat(s.DequeueRate, 'f', 2, 64)
	t["timerDeleteMarkers"] = strconv.Itoa(s.DeleteMarkers)
	t["timerDelivered"] = strconv.FormatInt(s.Delivered, 10)
	t["timerSkipped"] = strconv.FormatInt(s.Skipped, 10)
}

// processGetTimerCheckPoint serves GET_TIMER_CHECK_POINT (60) as 5.3.3's
// AdminBrokerProcessor.getTimerCheckPoint: TimerCheckpoint's 56 bytes
// (timer.StockCheckpoint says how rmq's progress maps onto its fields); with
// timerWheelEnable=false stock has no checkpoint and answers SYSTEM_ERROR.
func (b *Broker) processGetTimerCheckPoint(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.timerState(req, "The checkpoint is null", func(t *timer.TimerStore) []byte { return t.StockCheckpoint().Encode() })
}

// processGetTimerMetrics serves GET_TIMER_METRICS (61) as 5.3.3's
// getTimerMetrics: TimerMetricsSerializeWrapper's JSON, the timer messages
// in the wheel by real topic; SYSTEM_ERROR without a timer store.
func (b *Broker) processGetTimerMetrics(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.timerState(req, "The timer message store is null", func(t *timer.TimerStore) []byte { return t.StockMetrics().Encode() })
}

// timerState answers body of the timer store, or SYSTEM_ERROR with remark
// without one.
func (b *Broker) timerState(req *remoting.Command, remark string, body func(*timer.TimerStore) []byte) *remoting.Command {
	if b.timers == nil {
		return remoting.NewResponse(req, remoting.SystemError, remark)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body(b.timers)
	return resp
}

// timerCheckpointSyncPeriod is how often a slave copies its master's timer
// checkpoint (5.3.3 BrokerController: every 3 s, "latency-sensitive", beside
// the slower syncAll).
const timerCheckpointSyncPeriod = 3 * time.Second

// syncTimerCheckpoint copies the master's timer checkpoint
// (SlaveSynchronize.syncTimerCheckPoint) into the timer store, with the
// master's commitlog max offset read after it (GET_BROKER_RUNTIME_INFO
// commitLogMaxOffset): the copy is used only once this store holds the
// deliveries it speaks for (timer/master.go). A 4.x master does not know
// the code: it has no timers, nothing to copy.
func (b *Broker) syncTimerCheckpoint() {
	master := b.MasterAddr()
	if b.timers == nil || master == "" || master == b.runtime().addr() {
		return
	}
	body, code, err := b.callMaster(master, remoting.GetTimerCheckPoint)
	if code == remoting.RequestCodeNotSupported {
		return
	}
	var ck timer.StockCheckpoint
	if err == nil {
		ck, err = timer.DecodeStockCheckpoint(body)
	}
	var maxPhy int64
	if err == nil {
		maxPhy, err = b.masterMaxPhyOffset(master)
	}
	if err == nil {
		err = b.timers.CopyMaster(ck, maxPhy)
	}
	if err != nil {
		b.refusals.Warn(&b.log, "slave_sync_failed", remoting.SystemError).Err(err).Str("master", master).
			Str("what", "timer checkpoint").Msg("slave synchronize failed")
	}
}

// masterMaxPhyOffset is the master's commitLogMaxOffset (runtime info).
func (b *Broker) masterMaxPhyOffset(master string) (int64, error) {
	body, _, err := b.callMaster(master, remoting.GetBrokerRuntimeInfo)
	if err != nil {
		return 0, err
	}
	var kv remoting.KVTable
	if err := fastjson.Unmarshal(body, &kv); err != nil {
		return 0, fmt.Errorf("master runtime info: %w", err)
	}
	n, err := strconv.ParseInt(kv.Table["commitLogMaxOffset"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("master runtime info: commitLogMaxOffset: %w", err)
	}
	return n, nil
}

// syncTimerMetrics takes the master's timer metrics when their data version
// differs (SlaveSynchronize.syncTimerMetrics, in syncAll with
// timerWheelEnable).
func (b *Broker) syncTimerMetrics(body []byte) error {
	m, err := timer.DecodeStockMetrics(body)
	if err != nil {
		return err
	}
	b.timers.CopyMasterMetrics(m)
	return nil
}
