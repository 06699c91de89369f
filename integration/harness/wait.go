package harness

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// ErrTimeout wraps the last condition error when Poll gives up.
var ErrTimeout = errors.New("harness: condition not met before the deadline")

// Poll calls cond until it returns nil or timeout has passed, sleeping between
// calls (20 ms at first, growing to 250 ms). cond always runs at least once, and
// once more at the deadline, so a condition that holds is never reported late.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	pause := 20 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, err)
		}
		time.Sleep(min(pause, left))
		pause = min(pause*2, 250*time.Millisecond)
	}
}

// WaitFor polls cond like Poll and fails the test with cond's last error when
// the deadline passes. It returns as soon as cond holds.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatal(err)
	}
}
