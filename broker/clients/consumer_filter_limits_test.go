package clients

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/remoting"
)

func newFilterManager(t *testing.T) *ConsumerFilterManager {
	t.Helper()
	m, err := NewConsumerFilterManager("", zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// within fails the test unless f returns before the deadline: a guard
// against a hang, not a timing assertion (the expected case returns at once).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: blocked", what)
	}
}

// A compile in progress holds no lock that other callers need (issue 42
// defect 2: the cache lock was held throughout, so one slow compile stalled
// every heartbeat and CHECK_CLIENT_CONFIG). The hook parks the compile of
// "slow = 1" until the test has compiled another expression, registered
// another group's heartbeat and read filters; a second caller of the slow
// expression waits for the one compile instead of repeating it.
func TestCompileDoesNotBlockOthers(t *testing.T) {
	m := newFilterManager(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	var slowCompiles atomic.Int32
	m.compileHook = func(expr string) {
		if expr == "slow = 1" {
			slowCompiles.Add(1)
			close(entered)
			<-release
		}
	}
	slowDone := make(chan error, 2)
	go func() {
		_, err := m.Compile(ExpressionTypeSQL92, "slow = 1")
		slowDone <- err
	}()
	<-entered
	go func() { // same expression: must wait for the compile in progress
		m.Register("SLOW", []*remoting.SubscriptionData{sqlSub("T", "slow = 1", 1)})
		slowDone <- nil
	}()

	within(t, "another expression", func() {
		if e, err := m.Compile(ExpressionTypeSQL92, "fast = 1"); e == nil || err != nil {
			t.Errorf("fast: %v %v", e, err)
		}
	})
	within(t, "another group's heartbeat", func() {
		m.Register("FAST", []*remoting.SubscriptionData{sqlSub("T", "fast = 2", 1)})
	})
	within(t, "a lookup", func() {
		if m.Get("T", "FAST") == nil {
			t.Error("FAST not registered")
		}
	})
	select {
	case <-slowDone:
		t.Fatal("the slow compile returned before it was released")
	default:
	}
	close(release)
	for i := 0; i < 2; i++ {
		if err := <-slowDone; err != nil {
			t.Fatal(err)
		}
	}
	if n := slowCompiles.Load(); n != 1 {
		t.Fatalf("slow = 1 compiled %d times, want once", n)
	}
	if d := m.Get("T", "SLOW"); d == nil || d.Compiled == nil {
		t.Fatalf("SLOW: %+v", d)
	}
}

// The cache is bounded in bytes (issue 42 defect 3: 25 distinct 3.4 MB
// expressions took the broker from 403 MB to 1.24 GB). Each expression here
// is an IN list just under the length limit with distinct values (about
// 1 MB compiled), so fewer than compileCacheSize fit.
func TestCompileCacheBoundedInBytes(t *testing.T) {
	m := newFilterManager(t)
	total := 0
	for i := 0; i < 60; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "a IN ('%d'", i)
		for j := 0; b.Len() < filter.MaxExpressionLength-16; j++ {
			fmt.Fprintf(&b, ", '%d'", j)
		}
		b.WriteString(")")
		e, err := m.Compile(ExpressionTypeSQL92, b.String())
		if err != nil {
			t.Fatal(err)
		}
		total += e.Footprint()
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	sum := 0
	for _, k := range m.order {
		sum += m.cache[k].cost
	}
	if sum != m.cacheBytes || m.cacheBytes > compileCacheBytes || len(m.cache) != len(m.order) {
		t.Fatalf("cache: %d bytes counted, %d summed, bound %d; %d entries, %d in order", m.cacheBytes, sum, compileCacheBytes, len(m.cache), len(m.order))
	}
	if total <= compileCacheBytes || len(m.order) >= 60 || len(m.order) == 0 {
		t.Fatalf("compiled %d bytes, cache kept %d of 60 entries", total, len(m.order))
	}
}

// An expression over the length limit is refused with filter.ErrLimit
// without entering the cache, and a heartbeat carrying one registers
// nothing.
func TestCompileOverLimit(t *testing.T) {
	m := newFilterManager(t)
	long := strings.Repeat("(", 1_000_000) + "a = 1" + strings.Repeat(")", 1_000_000)
	deep := strings.Repeat("(", 10_000) + "a = 1" + strings.Repeat(")", 10_000)
	for _, expr := range []string{long, deep} {
		_, err := m.Compile(ExpressionTypeSQL92, expr)
		if !errors.Is(err, filter.ErrLimit) {
			t.Fatalf("%d bytes: %v", len(expr), err)
		}
		m.Register("G", []*remoting.SubscriptionData{sqlSub("T", expr, 1)})
		if d := m.Get("T", "G"); d != nil {
			t.Fatalf("registered %+v", d)
		}
	}
	if _, ok := m.cache[long]; ok {
		t.Fatal("an expression over the length limit was cached")
	}
	if got := LogExpression(long); len(got) > 600 {
		t.Fatalf("log line carries %d bytes", len(got))
	}
}
