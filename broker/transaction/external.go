package transaction

import (
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Check is a transaction state check addressed to a producer that is not a
// remoting connection (a 5.x client of the gRPC endpoint): what
// CHECK_TRANSACTION_STATE carries.
type Check struct {
	Group string
	// Message is the half message with its real topic and queue restored.
	Message              *message.MessageExt
	TransactionID        string
	TranStateTableOffset int64
	CommitLogOffset      int64
}

// Checker delivers checks to producers outside the remoting connections.
// Check reports whether a producer of c.Group took the check; it must not
// block.
type Checker interface {
	Check(c Check) bool
}

// SetChecker installs the checker asked when no remoting producer of a
// group is connected (nil removes it).
func (s *Service) SetChecker(c Checker) {
	if c == nil {
		s.checker.Store(nil)
		return
	}
	s.checker.Store(&c)
}

// checkExternal offers a check to the installed Checker.
func (s *Service) checkExternal(c Check) bool {
	p := s.checker.Load()
	return p != nil && (*p).Check(c)
}

// End commits (commit true) or rolls back the half message of group at
// commitLogOffset, whose half queue offset is tranStateTableOffset, as
// END_TRANSACTION does. It returns nil when done or already done, and
// otherwise the *remoting.Refusal END_TRANSACTION would answer.
func (s *Service) End(group string, tranStateTableOffset, commitLogOffset int64, commit, fromCheck bool, msgID string) error {
	if s.isSlave() {
		return remoting.Refuse(remoting.SlaveNotAvailable, txRemarkSlave)
	}
	eh := endTxHeader{group: group, tranOff: tranStateTableOffset, phyOff: commitLogOffset,
		decision: message.TransactionRollbackType, fromCheck: fromCheck, msgID: msgID}
	if commit {
		eh.decision = message.TransactionCommitType
	}
	code, remark, _ := s.end(&eh)
	if code != remoting.Success {
		s.refusals.Warn(&s.log, "end_transaction_refused", code).Str("group", group).Str("msgId", msgID).Str("refusal", remark).Msg("transaction: end transaction refused")
		return remoting.Refuse(code, remark)
	}
	return nil
}
