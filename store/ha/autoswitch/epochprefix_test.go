package autoswitch

import (
	"slices"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// Epochs whose bytes the commitlog no longer holds (its oldest files were
// cleaned up) leave the epoch file, as stock's CleanCommitLogService does
// in controller mode (truncateEpochFilePrefix(minPhyOffset - 1)): without
// it every election adds an entry for good, and once a master's table
// passes MaxHandshakeEntries it can no longer answer any slave's
// handshake.
func TestEpochPrefixFollowsTheCommitLogStart(t *testing.T) {
	clk := manualClock()
	st := newFakeStore(100)
	s := node(t, st, t.TempDir(), func(c *Config) { c.Clock = clk; c.CheckSyncStateSetInterval = time.Second })
	for e, n := range []int{250, 250, 100} {
		if err := s.ChangeToMaster(int32(e + 1)); err != nil {
			t.Fatal(err)
		}
		st.put(randBytes(n, int64(e)))
	}
	if got := entriesOf(s.Epochs()); len(got) != 3 {
		t.Fatalf("entries %v", got)
	}
	// Cleanup deletes the first three files: epoch 1 ([0, 250)) is gone,
	// epoch 2 ([250, 500)) still has bytes from 300.
	st.mu.Lock()
	st.data, st.base = st.data[300:], 300
	st.mu.Unlock()
	want := []int32{2, 3}
	testutil.WaitFor(t, testWait, func() bool {
		if clk.Pending() > 0 {
			clk.Advance(time.Second)
		}
		var epochs []int32
		for _, e := range s.Epochs().Entries() {
			epochs = append(epochs, e.Epoch)
		}
		return slices.Equal(epochs, want)
	}, "the epochs before the commitlog start to go")
	// The file holds the same.
	ef, err := OpenEpochFile(nil, s.Epochs().Path())
	if err != nil {
		t.Fatal(err)
	}
	if got := ef.Entries(); len(got) != 2 || got[0].Epoch != 2 || got[0].StartOffset != 250 {
		t.Fatalf("file entries %v", got)
	}
}
