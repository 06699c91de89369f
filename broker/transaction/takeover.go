package transaction

import (
	"maps"

	"github.com/rmqio/rmq/message"
)

// Taking the check over (5.3.3 BrokerController.changeTransactionCheck-
// ServiceStatus, TransactionalMessageServiceImpl.check on an acting master).
//
// The check runs where the group's special services run: on the master, on
// the slave of least id while the master is gone (slave-acting-master), on
// the broker a controller elects. SetActive holds and resumes it inside one
// process; the loop keeps its slots, a held pass returns at once. Its
// progress is what it always is, the consumer offsets of CID_RMQ_SYS_TRANS
// on the half and op queues: on a slave they are the master's (copied by
// SlaveSynchronize), and the op records are the master's, replicated. So
// resuming reads the op queue on from where the service last read it and
// rebuilds the chains' latest copies from the half records not walked yet:
// a half message committed or rolled back before the switch is decided
// (its op record is in the replica) and never walked again; one still
// undecided is walked from the copied progress, never lost.
//
// On a store that refuses puts (an acting master's) the walk cannot write
// a check copy or an op record. As stock, it escapes each undecided half
// message instead, through the broker's escape bridge (Options.Escape): as
// a prepared message of its real topic (buildTransactionalMessageFrom-
// HalfMessage: TRAN_MSG=true, PREPARED sysFlag, its born time, producer
// group and check count kept), which the receiving master stores as a half
// message of its own and checks with a producer of the group once its
// transactionTimeOut from the born time has passed (never earlier than
// here). A half message the bridge refuses (no enableRemoteEscape, no
// other master) stops the walk there and is tried again at the next pass;
// stock drops it after MAX_RETRY_TIMES_FOR_ESCAPE tries.
//
// The master that comes back takes the acting slave's half-queue progress
// before its first pass (AdvanceProgress), so it does not check again the
// chains the slave escaped (its op queue never saw their decision). Where
// it cannot (the slave does not answer, or holds what this store does
// not), it walks its own progress and checks them again; a producer that
// commits both checks delivers the message twice, as stock does without
// pre-online.

// SetActive holds (false) or resumes (true) the check passes. Holding
// waits for a pass in flight; resuming reads the op records and check
// copies written since (by this broker or, on a slave, replicated from its
// master). A service is active from New, held on a slave's store.
func (s *Service) SetActive(on bool) {
	s.walkMu.Lock()
	defer s.walkMu.Unlock()
	if s.held.Load() == !on {
		return
	}
	if on {
		if err := s.readOps(); err != nil {
			s.log.Error().Err(err).Msg("transaction: read op queue on resume")
		}
		s.loadCopies()
	}
	s.held.Store(!on)
	s.log.Info().Bool("active", on).Msg("transaction: check service switched")
}

// AdvanceProgress takes the half-queue progress of the slave that acted as
// master while this broker was gone (its CID_RMQ_SYS_TRANS offset on the
// half queue; broker acting_master.go takeBackFromActingSlave): the slave's
// walk passed each half message below it only as decided (its op record
// is in this store too) or escaped with success to another group's master,
// which checks it from then on (escapeHalf; a refused escape stops the
// walk), so walking them again here would check twice what is decided
// elsewhere. The progress moves only forward and only within this store's
// half queue (past its end it would skip half messages this store has not
// dispatched or never had). The op queue's progress stays this service's:
// the op records of chains below the new progress are read and let go as
// before (release). The caller checks that the slave's store is a copy of
// this one's prefix. It reports whether the progress moved.
func (s *Service) AdvanceProgress(half int64) bool {
	s.walkMu.Lock()
	defer s.walkMu.Unlock()
	if half <= s.committedOffset(message.TopicTransHalf) || half > s.store.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID) {
		return false
	}
	s.offsets.Commit(txSysGroup, message.TopicTransHalf, txHalfQueueID, half)
	return true
}

// Active reports whether check passes run (SetActive).
func (s *Service) Active() bool { return !s.held.Load() }

// escapeHalf is the walk's step on a store that refuses puts: an
// undecided half message goes to the escape bridge; false stops the walk
// before it (the bridge refused: tried again at the next pass).
func (s *Service) escapeHalf(m *message.MessageExt) bool {
	select {
	case <-s.stop:
		return false
	default:
	}
	origin := txOrigin(m)
	if s.isDecided(origin) || s.hasLaterCopy(origin, m.QueueOffset) {
		return true // decided, or a later copy of the chain escapes instead
	}
	if s.escape == nil {
		return false
	}
	if _, err := s.escape.PutMessage(preparedFromHalf(m)); err != nil {
		if e := s.refusals.Warn(&s.log, "transaction_escape_failed", 0); e != nil {
			e.Err(err).Str("msgId", m.Properties[message.PropUniqKey]).Int64("halfOffset", m.QueueOffset).
				Msg("transaction: escaping a half message failed; tried again at the next pass")
		}
		return false
	}
	s.escaped.Add(1)
	s.log.Info().Str("msgId", m.Properties[message.PropUniqKey]).Str("realTopic", m.Properties[message.PropRealTopic]).
		Int64("halfOffset", m.QueueOffset).Msg("transaction: half message escaped to a live master")
	return true
}

// hasLaterCopy reports whether the chain origin has a check copy after
// queue offset q: the walk reaches it, and only the latest copy escapes
// (the master's check copies sit past progress a SlaveSynchronize round
// may not have copied yet).
func (s *Service) hasLaterCopy(origin, q int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest, ok := s.copies[origin]
	return ok && latest > q
}

// preparedFromHalf is the prepared message a half message escapes as
// (TransactionalMessageUtil.buildTransactionalMessageFromHalfMessage).
func preparedFromHalf(m *message.MessageExt) *message.Message {
	props := maps.Clone(m.Properties)
	props[message.PropTranMsg] = "true"
	delete(props, message.PropTranPreparedQueueOffset)
	delete(props, message.PropRealQueueID)
	real := realMessage(m)
	return &message.Message{
		Topic: real.Topic, QueueID: real.QueueID, Flag: m.Flag, Body: m.Body, Properties: props,
		SysFlag: m.SysFlag | message.TransactionPreparedType, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
}
