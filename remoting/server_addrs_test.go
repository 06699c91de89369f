package remoting

import (
	"net"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
)

// Port 0 listeners, even several on one host, each get a port of their own
// from the system, and Addrs reports them in the order of Options.Addrs.
func TestServerPortZeroAddrs(t *testing.T) {
	fixed := testutil.FreeAddr(t)
	s := startServer(t, newTestHandler(), ServerOptions{Addrs: []string{"127.0.0.1:0", fixed, "127.0.0.1:0"}})
	got := s.Addrs()
	if len(got) != 3 {
		t.Fatalf("Addrs = %v", got)
	}
	if got[1] != fixed {
		t.Errorf("fixed address reported as %s, want %s", got[1], fixed)
	}
	seen := map[string]bool{}
	for _, a := range got {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Fatalf("bound address %q", a)
		}
		if seen[a] {
			t.Fatalf("address %s reported twice: %v", a, got)
		}
		seen[a] = true
		dialRaw(t, a).ping(SerializeJSON)
	}
	got[0] = "changed"
	if s.Addrs()[0] == "changed" {
		t.Error("Addrs returned the server's own slice")
	}
}

func TestDistinctListenAddrs(t *testing.T) {
	got := distinctListenAddrs([]string{"0.0.0.0:0", "0.0.0.0:0", "127.0.0.1:0", "0.0.0.0:10911", "0.0.0.0:00"})
	want := []string{"0.0.0.0:0", "0.0.0.0:00", "127.0.0.1:0", "0.0.0.0:10911", "0.0.0.0:000"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("distinctListenAddrs = %v, want %v", got, want)
		}
	}
}
