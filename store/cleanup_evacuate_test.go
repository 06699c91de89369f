package store

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// Under disk pressure, a file kept only for pending messages is evacuated
// (RetentionOptions.Evacuate) and the protected offset asked again; a normal
// expiry round never evacuates, and an evacuation that moved nothing keeps
// the file.
func TestCleanupEvacuatesOnlyUnderPressure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		used      float64
		age       time.Duration
		manual    bool
		moves     bool // the evacuation frees the protected offset
		wantEvac  bool
		wantFirst int // index of the first file left, -1: all but the newest deleted
	}{
		{name: "expiry, disk not full", used: 0.30, age: 2 * time.Hour, manual: true, moves: true, wantEvac: false, wantFirst: 2},
		{name: "expired, disk over diskMaxUsedSpaceRatio", used: 0.80, age: 2 * time.Hour, moves: true, wantEvac: true, wantFirst: -1},
		{name: "forced inside the reserved time", used: 0.86, moves: true, wantEvac: true, wantFirst: -1},
		{name: "not expired, over diskMaxUsedSpaceRatio only", used: 0.80, moves: true, wantEvac: false, wantFirst: 0},
		{name: "forced, nothing could be re-stored", used: 0.86, moves: false, wantEvac: true, wantFirst: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var protected atomic.Int64
			protected.Store(math.MaxInt64)
			var evacuated atomic.Int64
			fx := newCleanupFixture(t, func(r *RetentionOptions) {
				r.ProtectedOffset = func(bool) int64 { return protected.Load() }
				r.Evacuate = func(below int64) {
					evacuated.Store(below)
					if tc.moves {
						protected.Store(math.MaxInt64)
					}
				}
			})
			fx.fill(t, 400)
			third := 2 * fx.o.MappedFileSizeCommitLog
			protected.Store(third + 100) // a pending message in the third file
			fx.clk.Advance(tc.age)
			fx.disk.set(tc.used)
			if tc.manual {
				fx.s.DeleteExpiredFilesManually()
			}
			fx.s.cleanRound()
			if got := evacuated.Load(); (got != 0) != tc.wantEvac || (tc.wantEvac && got != third+fx.o.MappedFileSizeCommitLog) {
				t.Fatalf("evacuated below %d, want called %v (below %d)", got, tc.wantEvac, third+fx.o.MappedFileSizeCommitLog)
			}
			want := int64(tc.wantFirst) * fx.o.MappedFileSizeCommitLog
			if tc.wantFirst < 0 {
				want = int64(fx.files-1) * fx.o.MappedFileSizeCommitLog
			}
			if got := fx.s.MinPhyOffset(); got != want {
				t.Fatalf("commitlog minimum %d, want %d (%d files)", got, want, fx.files)
			}
		})
	}
}
