package transaction

import (
	"maps"
	"strconv"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// txPass is the state of one check pass.
type txPass struct {
	nowMs int64
	// end is the half queue end including the copies this pass stored.
	end int64
	// evacuateBelow (> 0) makes the pass an evacuation (Evacuate): it walks
	// the half messages stored below this commitlog offset, re-storing the
	// ones still within their timeout instead of stopping at them, and
	// stops at the first stored at or after it.
	evacuateBelow int64
}

// checkNow runs one check pass (TransactionalMessageServiceImpl.check):
// walk the half queue from the committed offset to its end at the start of
// the pass, stopping at the first message still within its timeout, and
// commit the new offsets of the half and op queues.
func (s *Service) checkNow() { s.pass(0) }

// Evacuate re-stores the undecided half messages stored below the
// commitlog offset below at the end of the half queue and moves the walk's
// progress past them, so that retention may delete their file when the
// disk is full (store.RetentionOptions.Evacuate, broker/delivery.go). It
// is a check pass that does not stop at the first message still within
// its timeout: stock's walk makes the same copy when it checks a message
// (putBackHalfMsgQueue), and here one within its timeout or immunity keeps
// its check count, unchecked. The copy is stored before the progress is
// committed: a crash in between re-walks the original (its file is still
// there, or the walk skips the units retention removed), so the result is
// at worst a second copy and a second check, never a lost half message.
// It returns how far the walk's progress got, as a half-queue offset.
func (s *Service) Evacuate(below int64) int64 {
	if below <= 0 {
		return s.committedOffset(message.TopicTransHalf)
	}
	s.pass(below)
	return s.committedOffset(message.TopicTransHalf)
}

// pass runs one check pass; evacuateBelow > 0 makes it an evacuation.
func (s *Service) pass(evacuateBelow int64) {
	s.walkMu.Lock()
	defer s.walkMu.Unlock()
	select {
	case <-s.stop:
		return
	default:
	}
	if s.held.Load() {
		return
	}
	defer s.passes.Add(1)

	st := s.store
	// Stock creates the half topic's config the first time it looks for its
	// queues (TransactionalMessageBridge.selectTopicConfig).
	s.topics.CreateSystemTopic(message.TopicTransHalf, 1, permReadWrite)
	if err := s.readOps(); err != nil {
		s.log.Error().Err(err).Msg("transaction: read op queue")
		return
	}
	s.mu.Lock()
	unfenced := make([]*txDecision, 0, len(s.decided))
	for _, d := range s.decided {
		if d.fence < 0 {
			unfenced = append(unfenced, d)
		}
	}
	s.mu.Unlock()

	start := s.committedOffset(message.TopicTransHalf)
	end := st.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID)
	p := &txPass{nowMs: s.clock.Now().UnixMilli(), end: end, evacuateBelow: evacuateBelow}
	step := func(m *message.MessageExt) bool { return s.examine(m, p) }
	if st.IsSlave() && evacuateBelow == 0 {
		step = s.escapeHalf // acting master: nothing can be written here (takeover.go)
	}
	next := s.scan(message.TopicTransHalf, start, end, step)
	if s.dead.Load() {
		return
	}
	if next != start {
		s.offsets.Commit(txSysGroup, message.TopicTransHalf, txHalfQueueID, next)
	}
	s.release(next, p, unfenced)
}

// examine decides one half message of the walk; false stops the walk before it.
func (s *Service) examine(m *message.MessageExt, p *txPass) bool {
	select {
	case <-s.stop: // shutting down: keep the progress made so far
		return false
	default:
	}
	if p.evacuateBelow > 0 && m.PhysicalOffset >= p.evacuateBelow {
		return false
	}
	answeredAt, held := s.heldBack(m.PhysicalOffset, p.nowMs)
	origin := txOrigin(m)
	if s.isDecided(origin) {
		if held {
			s.moveHold(m.PhysicalOffset, -1, 0)
		}
		return true
	}
	if !held && s.superseded(origin, m.QueueOffset) {
		return true
	}
	if held {
		if p.evacuateBelow == 0 || answeredAt == 0 {
			return false // checked by a later pass; a wait ends within syncFlushTimeout
		}
		// Evacuating an answered half: moved ahead unchecked, its copy
		// keeps the hold.
		cp, err := s.putBack(m, origin, m.Properties[message.PropTransactionCheckTimes], p)
		if err != nil {
			return false
		}
		s.moveHold(m.PhysicalOffset, cp.PhysicalOffset, answeredAt)
		return !s.fp("evacuate:after-put")
	}
	times, discard := txNextCheckTimes(m.Properties[message.PropTransactionCheckTimes], s.checkMax)
	ref := m.BornTimestamp
	if m.StoreTimestamp < ref {
		ref = m.StoreTimestamp // the producer's clock is ahead of ours
	}
	age := p.nowMs - ref
	if discard || age > txMaxHalfAge.Milliseconds() {
		s.discard(m, origin)
		return true
	}
	if v, ok := m.Properties[message.PropCheckImmunityTimeInSeconds]; ok {
		if immunity := txImmunityMs(v, s.timeout); age < immunity {
			// Immune: move it behind the walk's progress without checking.
			_, err := s.putBack(m, origin, m.Properties[message.PropTransactionCheckTimes], p)
			return err == nil && !s.fp("evacuate:after-put")
		}
	} else if age < s.timeout.Milliseconds() {
		if p.evacuateBelow == 0 {
			return false
		}
		// Evacuating: not due for a check yet, so moved ahead unchecked.
		_, err := s.putBack(m, origin, m.Properties[message.PropTransactionCheckTimes], p)
		return err == nil && !s.fp("evacuate:after-put")
	}
	cp, err := s.putBack(m, origin, strconv.Itoa(times), p)
	if err != nil {
		return false // retried by the next pass
	}
	s.sendCheck(cp)
	return true
}

// txNextCheckTimes is needDiscard: the TRANSACTION_CHECK_TIMES the next check
// records (1 when absent), or discard once checkMax checks were made.
func txNextCheckTimes(v string, checkMax int) (int, bool) {
	if v == "" {
		return 1, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		n = -1 // stock's getInt: an unreadable count restarts low
	}
	if n >= checkMax {
		return n, true
	}
	return n + 1, false
}

// txImmunityMs is CHECK_IMMUNITY_TIME_IN_SECONDS in ms; -1 or an unreadable
// value means transactionTimeOut.
func txImmunityMs(v string, timeout time.Duration) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n == -1 {
		return timeout.Milliseconds()
	}
	return n * 1000
}

// putBack stores a copy of a half message at the end of the half queue
// (renewHalfMessageInner) with its chain origin and the given check count.
// The copy keeps flag and reconsumeTimes, which stock drops.
func (s *Service) putBack(m *message.MessageExt, origin int64, checkTimes string, p *txPass) (*message.MessageExt, error) {
	props := maps.Clone(m.Properties)
	props[message.PropTranPreparedQueueOffset] = strconv.FormatInt(origin, 10)
	if checkTimes != "" {
		props[message.PropTransactionCheckTimes] = checkTimes
	}
	cp := &message.Message{
		Topic: message.TopicTransHalf, QueueID: m.QueueID, Flag: m.Flag, Body: m.Body, Properties: props,
		SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes, SkipFlushWait: true,
		// An evacuation's copy is what lets cleanup free the disk: taken
		// past the warning ratio, as deliveries are (store.writeRefused).
		Delivery: p.evacuateBelow > 0,
	}
	res, err := s.store.PutMessage(cp)
	if err != nil {
		s.log.Error().Err(err).Int64("halfOffset", m.QueueOffset).Msg("transaction: put half message back failed")
		return nil, err
	}
	p.end = max(p.end, res.QueueOffset+1)
	// Recorded before the pass commits its progress past m, so an
	// END_TRANSACTION never sees the chain walked past without its copy.
	s.noteCopy(origin, res.QueueOffset)
	return &message.MessageExt{
		Message: *cp, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		StoreTimestamp: res.StoreTimestamp, StoreHost: s.storeHost, MsgID: res.MsgID(0),
	}, nil
}

// sendCheck asks one live producer of the message's group for the state of
// the transaction (AbstractTransactionalMessageCheckListener.sendCheckMessage):
// oneway CHECK_TRANSACTION_STATE about the copy cp, whose record is the body
// with the real topic and queue restored.
func (s *Service) sendCheck(cp *message.MessageExt) {
	group := cp.Properties[message.PropProducerGroup]
	log := s.log.With().Str("group", group).Str("msgId", cp.Properties[message.PropUniqKey]).Int64("halfOffset", cp.QueueOffset).Logger()
	conn := s.producers.AvailableConn(group)
	if conn == nil {
		if s.checkExternal(externalCheck(group, cp)) {
			s.checks.Add(1)
			return
		}
		log.Warn().Msg("transaction: check skipped, no producer of the group is connected")
		return
	}
	id := cp.Properties[message.PropUniqKey]
	ext := (&remoting.CheckTransactionStateRequestHeader{
		TranStateTableOffset: cp.QueueOffset, CommitLogOffset: cp.PhysicalOffset, OffsetMsgID: cp.MsgID, MsgID: id, TransactionID: id,
	}).Fields()
	req := remoting.NewRequest(remoting.CheckTransactionState, ext, message.EncodeRecord(nil, realMessage(cp)))
	if err := conn.Oneway(req); err != nil {
		log.Warn().Err(err).Object("client", conn).Msg("transaction: check request failed")
		return
	}
	s.checks.Add(1)
	log.Debug().Object("client", conn).Str("checkTimes", cp.Properties[message.PropTransactionCheckTimes]).Msg("transaction: state check sent")
}

// realMessage is the half message cp with its real topic and queue restored.
func realMessage(cp *message.MessageExt) *message.MessageExt {
	body := *cp
	if t := cp.Properties[message.PropRealTopic]; t != "" {
		body.Topic = t
	}
	if q, err := strconv.Atoi(cp.Properties[message.PropRealQueueID]); err == nil {
		body.QueueID = int32(q)
	}
	return &body
}

// externalCheck is the check about cp for a Checker.
func externalCheck(group string, cp *message.MessageExt) Check {
	return Check{Group: group, Message: realMessage(cp), TransactionID: cp.Properties[message.PropUniqKey],
		TranStateTableOffset: cp.QueueOffset, CommitLogOffset: cp.PhysicalOffset}
}

// discard moves a half message that was checked transactionCheckMax times
// (or outlived the file retention) to TRANS_CHECK_MAX_TIME_TOPIC, from where
// RESUME_CHECK_HALF_MESSAGE can bring it back
// (DefaultTransactionalMessageCheckListener.resolveDiscardMsg).
func (s *Service) discard(m *message.MessageExt, origin int64) {
	log := s.log.With().Str("group", m.Properties[message.PropProducerGroup]).Str("msgId", m.Properties[message.PropUniqKey]).
		Str("realTopic", m.Properties[message.PropRealTopic]).Str("checkTimes", m.Properties[message.PropTransactionCheckTimes]).
		Int64("halfOffset", m.QueueOffset).Int64("commitLogOffset", m.PhysicalOffset).Logger()
	s.mu.Lock()
	delete(s.copies, origin) // finished: a late END_TRANSACTION stores nothing
	s.mu.Unlock()
	s.topics.CreateSystemTopic(message.TopicTransCheckMaxTime, txCheckMaxQueues, permReadWrite)
	props := maps.Clone(m.Properties)
	props[message.PropTranPreparedQueueOffset] = strconv.FormatInt(origin, 10)
	res, err := s.store.PutMessage(&message.Message{
		Topic: message.TopicTransCheckMaxTime, QueueID: 0, Flag: m.Flag, Body: m.Body, Properties: props,
		SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes, SkipFlushWait: true,
	})
	if err != nil {
		log.Error().Err(err).Msg("transaction: half message checked too many times; discarding it, and its copy to TRANS_CHECK_MAX_TIME_TOPIC failed")
		return
	}
	log.Error().Str("offsetMsgId", res.MsgID(0)).
		Msg("transaction: half message checked too many times without a decision; discarded to TRANS_CHECK_MAX_TIME_TOPIC")
}

// superseded reports whether the chain origin has a newer copy than its
// record at queue offset q. A broker that takes the check over after a
// switch starts from the half-queue progress it copied from the old master,
// which lags the old master's walk by up to a sync period: the records in
// that window were already checked and put back there, and their newer
// copies are in the replica (loadCopies found them). Checking the old
// record again would fork the chain, a second live copy with a lower count
// at every switch, so that undecided chains multiply and transactionCheckMax
// never ends them (the failover soak's half queue grew by 1.4 M records in
// 77 s). The newer copy is walked later: the chain is checked once and never
// dropped. In a steady walk no older record of a chain lies ahead of its
// newest copy, so nothing else is skipped.
func (s *Service) superseded(origin, q int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest, ok := s.copies[origin]
	return ok && latest > q
}

// noteCopy records that the chain origin has a copy at queue offset q.
func (s *Service) noteCopy(origin, q int64) {
	s.mu.Lock()
	if s.copies != nil && q > s.copies[origin] {
		s.copies[origin] = q
	}
	s.mu.Unlock()
}

// pending reports whether the chain origin, named by its half record at
// queue offset q, still waits for a decision: the walk has not passed q, or
// the chain has a copy the walk has not passed. A chain the walk has passed
// for good was decided (and maybe released since) or discarded. The
// progress is read before the copies: a pass records its copies before it
// commits progress past them. The caller holds mu.
func (s *Service) pending(origin, q int64) bool {
	progress := s.committedOffset(message.TopicTransHalf)
	if q >= progress {
		return true
	}
	latest, ok := s.copies[origin]
	return ok && latest >= progress
}

// release ends the pass's bookkeeping: decisions of chains the walk has
// passed for good leave the decided set, and the op offset moves over the
// op entries of released chains.
func (s *Service) release(next int64, p *txPass, unfenced []*txDecision) {
	retention := (s.timeout + s.interval).Milliseconds()
	s.mu.Lock()
	for _, d := range unfenced {
		d.fence = p.end
	}
	for origin, d := range s.decided {
		if d.fence >= 0 && next >= d.fence && p.nowMs-d.atMs >= retention {
			delete(s.decided, origin)
			delete(s.copies, origin) // a copy a pass made while the decision was taken
		}
	}
	n := 0
	for n < len(s.ops) && s.decided[s.ops[n].origin] == nil {
		n++
	}
	opNext := s.opRead
	if n < len(s.ops) {
		opNext = s.ops[n].offset
	}
	s.ops = append(s.ops[:0:0], s.ops[n:]...)
	s.mu.Unlock()
	if committed, ok := s.offsets.Query(txSysGroup, message.TopicTransOpHalf, txHalfQueueID); !ok || committed != opNext {
		s.offsets.Commit(txSysGroup, message.TopicTransOpHalf, txHalfQueueID, opNext)
	}
}

// Hold marks the half message stored at commitlog offset phy as not yet
// answered: its SEND answer waits for the flush or a slave's ack (a
// SYNC_MASTER waits up to syncFlushTimeout, longer than a short
// transactionTimeOut, e.g. while a slave reconnects after a restart). The
// producer runs its local transaction only once it has SEND_OK, so a check
// now would ask about a transaction that has not begun: a producer that
// answers ROLLBACK for one it does not know (as it may) decides the chain,
// and the COMMIT it sends after SEND_OK then finds the chain decided and
// stores nothing: an acknowledged message lost. The walk therefore stops
// at a held message until Answered, and until transactionTimeOut has
// passed since the answer, the time the producer had to end it.
func (s *Service) Hold(phy int64) {
	s.mu.Lock()
	s.unanswered[phy] = 0
	s.mu.Unlock()
}

// Answered ends Hold: the answer of the half message at phy went out now.
func (s *Service) Answered(phy int64) {
	now := max(s.clock.Now().UnixMilli(), 1)
	s.mu.Lock()
	if _, ok := s.unanswered[phy]; ok {
		s.unanswered[phy] = now
	}
	s.mu.Unlock()
}

// heldBack tells whether the walk must stop at the half message at phy
// (Hold), with the time its answer went out (0: not yet). Once it may
// pass, the entry goes: the walk passes a record once, and copies are new
// records, held only when an evacuation moves a held one (moveHold).
func (s *Service) heldBack(phy, nowMs int64) (answeredAt int64, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.unanswered[phy]
	if !ok {
		return 0, false
	}
	if at == 0 || nowMs-at < s.timeout.Milliseconds() {
		return at, true
	}
	delete(s.unanswered, phy)
	return 0, false
}

// moveHold ends the hold of the record at phy and, when to >= 0, holds the
// copy at to as answered at answeredAt.
func (s *Service) moveHold(phy, to, answeredAt int64) {
	s.mu.Lock()
	delete(s.unanswered, phy)
	if to >= 0 {
		s.unanswered[to] = answeredAt
	}
	s.mu.Unlock()
}
