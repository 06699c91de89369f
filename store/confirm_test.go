package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// settleDispatch waits until the dispatcher has nothing left it may
// dispatch: everything up to min(gate, end), record-wise.
func settleDispatch(t *testing.T, s *Store) {
	t.Helper()
	for i := 0; i < 3; i++ {
		dispatchPass(t, s)
	}
}

func endOf(r *PutResult) int64 { return r.PhysicalOffset + int64(r.WroteBytes) }

func TestConfirmOffsetGate(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	if s.ConfirmOffset() != -1 {
		t.Fatalf("default gate %d", s.ConfirmOffset())
	}
	var puts []*PutResult
	put := func(n int) {
		for i := 0; i < n; i++ {
			puts = append(puts, mustPut(t, s, testMessage("G", 0, len(puts))))
		}
	}
	// Off: everything is visible.
	put(10)
	waitDispatched(t, s)
	checkQueue(t, s, "G", 0, 10)

	// On: nothing past the gate, the own-dispatch of puts included.
	s.SetConfirmOffset(s.MaxPhyOffset())
	put(20)
	settleDispatch(t, s)
	checkQueue(t, s, "G", 0, 10)
	// A gate inside a record holds that record back.
	s.SetConfirmOffset(endOf(puts[11]) + 5)
	settleDispatch(t, s)
	if m := s.MaxOffsetInQueue("G", 0); m != 12 {
		t.Fatalf("gated inside record 12: max offset %d, want 12", m)
	}
	checkQueue(t, s, "G", 0, 12)
	if r := s.GetMessage("G", 0, 12, 1, 1<<20, nil); r.Status == Found {
		t.Fatal("a record past the gate was served")
	}
	if res, _ := s.QueryMessage("G", "k15", 8, 0, 1<<62); len(res.Messages) != 0 {
		t.Fatal("a record past the gate is indexed")
	}

	// Raised: dispatched at once, the dispatcher woken (no poll).
	s.SetConfirmOffset(endOf(puts[20]))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.WaitDispatched(ctx, endOf(puts[20])); err != nil {
		t.Fatalf("raised gate: %v", err)
	}
	checkQueue(t, s, "G", 0, 21)

	// Lowered: nothing is taken back, nothing more is dispatched.
	s.SetConfirmOffset(endOf(puts[3]))
	put(2)
	settleDispatch(t, s)
	checkQueue(t, s, "G", 0, 21)

	// Removed: everything.
	s.SetConfirmOffset(-1)
	waitDispatched(t, s)
	checkQueue(t, s, "G", 0, 32)
	if s.ConfirmOffset() != -1 {
		t.Fatalf("gate %d after removal", s.ConfirmOffset())
	}
	if r := mustPut(t, s, testMessage("G", 0, 32)); r.QueueOffset != 32 {
		t.Fatalf("queue offset %d", r.QueueOffset)
	}
}

// A truncation lowers a gate above the cut (stock truncateDirtyFiles).
func TestConfirmOffsetLoweredByTruncate(t *testing.T) {
	f := newTruncFixture(t, 50, 1, nil)
	f.s.SetConfirmOffset(f.s.MaxPhyOffset())
	off := f.puts[30].PhysicalOffset
	if err := f.s.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	if g := f.s.ConfirmOffset(); g != off {
		t.Fatalf("gate %d after the cut at %d", g, off)
	}
}

// After a restart the store is gated where it was: neither a clean
// reopen nor the recovery of a crash copy dispatches a record the gate
// held back; the broker's next SetConfirmOffset releases them, and queue
// offsets of puts follow every stored record.
func TestConfirmOffsetGateSurvivesRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "clean"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.RestoreConfirmOffset = true
			s := openStore(t, o)
			var puts []*PutResult
			for i := 0; i < 40; i++ {
				puts = append(puts, mustPut(t, s, testMessage("G", int32(i%2), i/2)))
			}
			waitDispatched(t, s)
			gate := endOf(puts[29]) // below what is visible already: 0..39
			s.SetConfirmOffset(gate)
			for i := 40; i < 200; i++ {
				puts = append(puts, mustPut(t, s, testMessage("G", int32(i%2), i/2)))
			}
			settleDispatch(t, s)
			dir := o.Dir
			if crash {
				// A copy of the running store: the consume queues hold
				// records 0..39 (dispatched before the gate).
				c := testOptions(t.TempDir())
				copyDir(t, o.Dir, c.Dir)
				dir = c.Dir
			}
			s.Close()
			ro := o
			ro.Dir = dir
			r := openStore(t, ro)
			if g := r.ConfirmOffset(); g != gate {
				t.Fatalf("gate after reopen %d, want %d", g, gate)
			}
			settleDispatch(t, r)
			for q := int32(0); q < 2; q++ {
				if m := r.MaxOffsetInQueue("G", q); m != 20 {
					t.Fatalf("queue %d: max offset %d after reopen, want 20 (what was visible)", q, m)
				}
			}
			r.SetConfirmOffset(-1)
			waitDispatched(t, r)
			checkQueue(t, r, "G", 0, 100)
			checkQueue(t, r, "G", 1, 100)
			if p := mustPut(t, r, testMessage("G", 1, 100)); p.QueueOffset != 100 {
				t.Fatalf("queue offset %d after reopen", p.QueueOffset)
			}
		})
	}
}

// A store never gated gets no confirm file.
func TestConfirmOffsetFileOnlyWhenGated(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	mustPut(t, s, testMessage("G", 0, 0))
	s.Close()
	if _, err := os.Stat(filepath.Join(o.Dir, confirmName)); err == nil {
		t.Fatal("confirm file created without a gate")
	}
}

// Without RestoreConfirmOffset (a broker not in controller mode) a saved
// gate holds nothing back.
func TestConfirmOffsetIgnoredWithoutRestore(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	mustPut(t, s, testMessage("G", 0, 0))
	s.SetConfirmOffset(s.MaxPhyOffset())
	mustPut(t, s, testMessage("G", 0, 1))
	s.Close()
	r := openStore(t, o)
	if g := r.ConfirmOffset(); g != -1 {
		t.Fatalf("gate %d without RestoreConfirmOffset", g)
	}
	waitDispatched(t, r)
	checkQueue(t, r, "G", 0, 2)
}

// WaitVisible returns once dispatch is held by the gate, also when the gate
// is inside a record; WaitDispatched waits for the end. A controller-mode
// broker's POP service waits this way while its store reopens gated (the
// failover soak's restarted rmq broker did not start before).
func TestWaitVisibleReturnsAtTheGate(t *testing.T) {
	o := testOptions(t.TempDir())
	o.RestoreConfirmOffset = true
	s := openStore(t, o)
	var puts []*PutResult
	for i := 0; i < 30; i++ {
		puts = append(puts, mustPut(t, s, testMessage("G", 0, i)))
	}
	waitDispatched(t, s)
	s.SetConfirmOffset(endOf(puts[29]))
	for i := 30; i < 60; i++ {
		puts = append(puts, mustPut(t, s, testMessage("G", 0, i)))
	}
	s.SetConfirmOffset(endOf(puts[39]) + 7) // inside record 40: 0..39 visible
	s.Close()

	r := openStore(t, o)
	end := r.MaxPhyOffset()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := r.WaitDispatched(short, end); err == nil {
		t.Fatal("WaitDispatched returned with records held by the gate")
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := r.WaitVisible(ctx, end); err != nil {
		t.Fatalf("WaitVisible: %v", err)
	}
	if m := r.MaxOffsetInQueue("G", 0); m != 40 {
		t.Fatalf("visible after WaitVisible: max offset %d, want 40", m)
	}
	// Ungated, WaitVisible waits for the end as WaitDispatched does.
	r.SetConfirmOffset(-1)
	if err := r.WaitVisible(ctx, end); err != nil {
		t.Fatalf("WaitVisible ungated: %v", err)
	}
	checkQueue(t, r, "G", 0, 60)
}

// A confirm file whose slots are both damaged holds dispatch where the
// checkpoint says it was: nothing more is exposed until the broker sets
// the gate.
func TestConfirmOffsetDamagedFileHoldsDispatch(t *testing.T) {
	o := testOptions(t.TempDir())
	o.RestoreConfirmOffset = true
	s := openStore(t, o)
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("G", 0, i))
	}
	waitDispatched(t, s)
	s.SetConfirmOffset(s.MaxPhyOffset())
	for i := 5; i < 9; i++ {
		mustPut(t, s, testMessage("G", 0, i))
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(o.Dir, confirmName), make([]byte, 2*SlotFileSlotSize), 0o644); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, o)
	if g := r.ConfirmOffset(); g != 0 {
		t.Fatalf("gate %d from a damaged file, want 0", g)
	}
	settleDispatch(t, r)
	checkQueue(t, r, "G", 0, 5)
	r.SetConfirmOffset(-1)
	waitDispatched(t, r)
	checkQueue(t, r, "G", 0, 9)
}
