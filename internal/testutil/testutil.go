package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultTimeout bounds WaitFor calls and requests of tests that have no
// reason to pick another limit.
const DefaultTimeout = 5 * time.Second

// pollInterval is how often WaitFor re-checks its condition.
const pollInterval = 5 * time.Millisecond

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// chosen at random below the system's ephemeral range. Not a port the
// kernel hands out (Listen on :0): those come from the ephemeral range, so
// once a test stops a server to restart it on the same port, any outgoing
// connection of a test running in parallel could take that port as its
// local one ("address already in use" on the restart). Ports below the
// range are never given to outgoing connections.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// PickPort is FreePort for code without a testing.TB (the integration
// module's harness).
func PickPort() (int, error) {
	low := ephemeralLow()
	for range 1000 {
		p := freePortBase + rand.IntN(low-freePortBase)
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("testutil: no free port in %d..%d", freePortBase, low-1)
}

// freePortBase is the lowest port FreePort picks: above the well-known and
// most registered service ports.
const freePortBase = 20000

// ephemeralLow is the first port of the system's ephemeral range (Linux
// ip_local_port_range; 32768 where it cannot be read, the Linux and BSD
// default, below Windows' and macOS' 49152).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > freePortBase+1000 {
				return n
			}
		}
	}
	return 32768
}

// FreeAddr is "127.0.0.1:<FreePort>".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreePortPair returns a free port p whose broker VIP port p-2 and HA port
// p+1 (a master's, 4.9.8 listenPort+1) are free too; none of them is one
// of avoid (ports picked earlier but not yet bound).
func FreePortPair(t testing.TB, avoid ...int) int {
	t.Helper()
	for range 100 {
		p := FreePort(t)
		if p < 1100 || p > 65000 || slices.ContainsFunc(avoid, func(a int) bool { return clash(p, a) }) {
			continue
		}
		if !listenable(p-2) || !listenable(p+1) {
			continue
		}
		return p
	}
	t.Fatal("testutil: no free port pair")
	return 0
}

// clash reports whether brokers on ports p and a would share a port
// (each takes port-2, port and port+1).
func clash(p, a int) bool {
	for _, x := range [3]int{p - 2, p, p + 1} {
		for _, y := range [3]int{a - 2, a, a + 1} {
			if x == y {
				return true
			}
		}
	}
	return false
}

// listenable reports whether 127.0.0.1:port can be listened on now.
func listenable(port int) bool {
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// WaitFor polls cond until it holds and fails the test once timeout has
// passed without it; what names the condition in the failure. It is for
// conditions other goroutines make true (dispatch, a connection closing),
// never a substitute for an injected clock.
func WaitFor(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollInterval)
	}
}

// LockedBuffer is a bytes.Buffer that is safe for concurrent writers and
// readers, for capturing the logs or output of running servers.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Concurrently runs f(0) … f(n-1) on goroutines of their own, waits for all
// of them, and fails t with the first error any returned (in index order).
func Concurrently(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d of %d: %v", i, n, err)
		}
	}
}
