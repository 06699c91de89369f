package pop

import (
	"encoding/json"
	"fmt"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Taking the revive over (5.3.3 AckMessageProcessor.setPopReviveService-
// Status, PopReviveService on an acting master).
//
// Revive runs where the group's special services run: on the master, on
// the slave of least id while the master is gone (slave-acting-master),
// on the broker a controller elects. SetActive holds and resumes it inside
// one process.
//
// On a SLAVE's store the writers of the revive log are the master's: its
// ck, ack and done records arrive by replication, so the reader follows
// the log applying every record, as the replay at New does (following),
// and the service's checkpoints are the master's, with the acks it had
// stored. Held, it only follows: a trigger whose checkpoint is still live
// stays due. Resumed on a slave's store (an acting master), it revives the
// due checkpoints the master left and those whose trigger its own timer
// store delivers (Trigger: the broker's escape bridge hands the revive
// topic's triggers here, since the store refuses them), each at
// popTime+invisibleTime of the timer store's clock, never earlier. The
// revived messages go out through the escape bridge (Options.Escape; stock:
// EscapeBridge.putMessageToSpecificQueue), and the done record, which the
// store would refuse, is not written: the checkpoint is forgotten in
// memory. The master that comes back has the checkpoint live and revives
// it again at its own trigger: duplicates bounded by what was in flight at
// the switch, never a loss. A revive the bridge refuses (no
// enableRemoteEscape, no other master) stays due and is tried again at the
// next read. An acting master that restarts revives from the replicated
// log again; the triggers its timer store had delivered are then the
// returning master's to deliver.

// SetActive holds (false) or resumes (true) the revives. Resuming first
// reads the revive log to its end, so that what a slave's master wrote up
// to the switch is applied before anything is revived.
func (s *Service) SetActive(on bool) {
	s.mu.Lock()
	if s.held == !on {
		s.mu.Unlock()
		return
	}
	s.held = !on
	if on {
		s.readRevive(s.following())
	}
	s.mu.Unlock()
	s.log.Info().Bool("active", on).Msg("pop: revive switched")
	if on {
		s.wake()
	}
}

// Active reports whether revives run (SetActive).
func (s *Service) Active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.held
}

// following reports whether the revive log is written by another broker
// (the store is a slave's): the reader then applies every record.
func (s *Service) following() bool { return s.opts.Store.IsSlave() }

// reviveDueOrFollow revives the due checkpoints, or while held only drops
// the triggers of checkpoints already closed. The caller holds mu.
func (s *Service) reviveDueOrFollow() {
	if !s.held {
		s.reviveDue()
		return
	}
	keep := s.due[:0]
	for _, k := range s.due {
		if s.cks[k] != nil {
			keep = append(keep, k)
		}
	}
	s.due = keep
}

// Trigger takes a revive trigger that the broker's timer store delivers
// while the store refuses puts (an acting master): m is the trigger record
// as stored on the revive topic. It reports whether m was one.
func (s *Service) Trigger(m *message.Message) bool {
	if m.Topic != s.reviveTopic {
		return false
	}
	props := m.Properties
	if props == nil { // a delivery may carry only the stored text
		props = message.ParseProperties(m.RawProperties)
	}
	if props[message.PropTags] != tagTrigger {
		return false
	}
	var r triggerRecord
	if json.Unmarshal(m.Body, &r) != nil {
		s.log.Warn().Msg("pop: unreadable revive trigger dropped")
		return true
	}
	s.mu.Lock()
	s.due = append(s.due, r.ckKey)
	s.mu.Unlock()
	s.wake()
	return true
}

// wake makes the reader read and revive now.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// errNoEscape refuses a revive on a slave's store without an escape.
var errNoEscape = fmt.Errorf("pop: revive on a slave without an escape bridge: %w", store.ErrSlave)

// putRevived stores a revived message: into the store, or through the
// escape bridge while following another broker's log.
func (s *Service) putRevived(m *message.Message) (*store.PutResult, error) {
	if !s.following() {
		return s.opts.Store.PutMessage(m)
	}
	if s.opts.Escape == nil {
		return nil, errNoEscape
	}
	return s.opts.Escape(m)
}
