package clock

import (
	"math"
	"testing"
)

func TestRoundsPaceOnlyAfterADeliveringRound(t *testing.T) {
	r := Rounds{Window: 5}
	if got := r.Next(1000); got != 1000 {
		t.Fatalf("before any round: Next(1000) = %d, want 1000 (due time)", got)
	}
	r.Delivered(1000)
	for _, c := range []struct{ due, want int64 }{
		{999, 1005},  // already due: the window's end
		{1001, 1005}, // inside the window
		{1004, 1005},
		{1005, 1005}, // at the window's end: its own time
		{1006, 1006}, // after a quiet window: its own time
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := r.Next(c.due); got != c.want {
			t.Errorf("after a round at 1000 (window 5): Next(%d) = %d, want %d", c.due, got, c.want)
		}
	}
	off := Rounds{}
	off.Delivered(1000)
	if got := off.Next(1001); got != 1001 {
		t.Fatalf("window 0: Next(1001) = %d, want 1001", got)
	}
}
