package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// The confirm offset gate (5.3.3 controller mode).
//
// In controller mode what consumers may see is bounded by the confirm
// offset: a slave builds its consume queues only up to the offset its
// master confirmed (the master sends it in every transfer header), and a
// master with allAckInSyncStateSet only up to what every in-sync replica
// acknowledged (CommitLog.getConfirmOffset; ReputMessageService
// getReputEndOffset is the confirm offset unless readUnCommitted, and
// doReput stops before a record that ends past it). Here the gate is
// SetConfirmOffset: with it at g >= 0 the dispatcher (and a put
// dispatching its own records, dispatch_own.go) dispatches only records
// that end at or below min(g, end): consume-queue units, index keys,
// OnDispatch, so also the queue maximum offsets a pull is answered with.
// Raising it wakes the dispatcher, which dispatches the rest at once.
// Lowering it un-dispatches nothing: the dispatcher stops where it is until
// the gate passes it. g < 0 (the default) is no gate: every record is
// dispatched as soon as it is written; what the gate costs then is an
// atomic load per put (dispatchOwnLocked) and per dispatcher pass
// (dispatchLimit) and a comparison per record read (readRecords).
// readUnCommitted is not offered: a broker that wants it leaves the gate
// off.
//
// # Restart
//
// A store restarted with a gate must not expose, before the broker sets
// the gate again, records that no gate had allowed. So the gate is saved in
// <Dir>/confirm (a slot file: the value, CRC, two slots written
// alternately), as stock saves it in the checkpoint
// (StoreCheckpoint.confirmPhyOffset), and Open, with
// Options.RestoreConfirmOffset (controller mode), starts gated at the
// saved value, capped at the recovered end: recovery (the scan after a crash
// included) dispatches only the records that end at or below it, and the
// queue offsets of the rest are taken from the records as for any record
// not dispatched. The file is written only once a gate was set; a gate
// that is set from none or lowered is saved (fsync) before it takes
// effect, and a raised one with the next checkpoint, so the saved value is
// never above the gate in force. A file whose two slots are both damaged
// restores a gate of 0: nothing is dispatched past the checkpoint's
// dispatch position until the broker sets the gate. Records dispatched
// before a crash under a gate that was higher than the saved one may be in
// the consume queues on disk already and stay visible: they were visible
// before the crash, under a gate that allowed them; nothing new is exposed.
// A slave that comes back therefore serves what it served, and no more,
// until its master's next transfer header raises the gate.

const confirmName = "confirm"

// confirmMagic marks the slots of the confirm file: "RMQCONF1".
const confirmMagic uint64 = 0x524D51434F4E4631

// SetConfirmOffset sets the dispatch gate (above); off < 0 removes it, and
// then everything written is dispatched. A failure to save a lowered gate is
// logged (the gate holds in memory; the next checkpoint saves it again).
func (s *Store) SetConfirmOffset(off int64) {
	if off < 0 {
		off = -1
	}
	old := s.confirm.Load()
	if old == off {
		return
	}
	if off < 0 || old >= 0 && off > old {
		// Raised: saved with the next checkpoint (a saved gate below the
		// one in force only holds back more after a crash).
		s.confirm.Store(off)
		s.wakeDispatcher()
		return
	}
	// Set from none, or lowered: saved before it holds, so that a crash
	// never finds a saved gate above one that was in force; the
	// checkpoint's save, under the same lock, never writes the old one
	// after it.
	s.confirmMu.Lock()
	defer s.confirmMu.Unlock()
	if err := s.saveConfirmLocked(off); err != nil {
		s.log.Error().Err(err).Int64("confirmOffset", off).Msg("store: cannot save the confirm offset")
	}
	s.confirm.Store(off)
}

// ConfirmOffset is the gate SetConfirmOffset set; -1 when there is none.
func (s *Store) ConfirmOffset() int64 { return s.confirm.Load() }

// dispatchLimit is where dispatch stops: the commitlog end, or the gate
// below it.
func (s *Store) dispatchLimit() int64 {
	end := s.cl.maxOffset.Load()
	if g := s.confirm.Load(); g >= 0 && g < end {
		return g
	}
	return end
}

// saveConfirm writes the gate to the confirm file when it changed since it
// was last saved. The file is created for a gate only, so a store never
// gated never gets one.
func (s *Store) saveConfirm() error {
	s.confirmMu.Lock()
	defer s.confirmMu.Unlock()
	return s.saveConfirmLocked(s.confirm.Load())
}

// saveConfirmLocked saves g; confirmMu is held.
func (s *Store) saveConfirmLocked(g int64) error {
	if s.confirmSF == nil {
		if g < 0 {
			// Nothing to keep: a store without the file is ungated.
			return nil
		}
		sf, _, _, _, err := OpenSlotFile(s.opts.FS, filepath.Join(s.opts.Dir, confirmName), confirmMagic, 1)
		if err != nil {
			return err
		}
		if err := syncDir(s.opts.FS, s.opts.Dir); err != nil {
			sf.Close()
			return err
		}
		s.confirmSF = sf
		s.confirmSaved = -2
	}
	if g == s.confirmSaved {
		return nil
	}
	if err := s.confirmSF.Write([]int64{g}); err != nil {
		return err
	}
	s.confirmSaved = g
	return nil
}

// loadConfirm opens the confirm file if there is one and returns the saved
// gate (-1: none).
func (s *Store) loadConfirm() (int64, error) {
	p := filepath.Join(s.opts.Dir, confirmName)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	sf, vals, _, ok, err := OpenSlotFile(s.opts.FS, p, confirmMagic, 1)
	if err != nil {
		return -1, err
	}
	s.confirmSF = sf
	if !ok {
		// Both slots damaged: the safe gate is none dispatched beyond
		// what the checkpoint says was dispatched (recover caps it).
		s.log.Warn().Str("file", p).Msg("recovery: confirm offset file unreadable; dispatch held at the checkpoint's dispatch position")
		s.confirmSaved = -2
		return 0, nil
	}
	s.confirmSaved = vals[0]
	return vals[0], nil
}

func (s *Store) closeConfirm() error {
	s.confirmMu.Lock()
	defer s.confirmMu.Unlock()
	if s.confirmSF == nil {
		return nil
	}
	err := s.confirmSF.Close()
	s.confirmSF = nil
	return err
}
