package rmqtest

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Run needs no test: its store is a temp directory of its own that Close
// removes, Close stops both servers and is idempotent.
func TestRunAndClose(t *testing.T) {
	srv, err := Run()
	if err != nil {
		t.Fatal(err)
	}
	dir := srv.ownDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("store dir: %v", err)
	}
	if srv.ns.Routes().TopicRoute("TBW102") == nil {
		t.Fatal("the broker is not routed by the name server")
	}
	nsAddr, brokerAddr := srv.NamesrvAddr(), srv.BrokerAddr()
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("store dir after Close: %v", err)
	}
	for _, a := range []string{nsAddr, brokerAddr} {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
	if err := srv.Restart(); err == nil {
		t.Error("Restart of a closed server succeeded")
	}
}

// A bad option makes Run fail with the key named, and leaves no store
// directory behind.
func TestRunRefusesUnknownKey(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's directory
	_, err := Run(WithBrokerConfig(map[string]string{"noSuchKey": "1"}))
	if err == nil || !strings.Contains(err.Error(), "noSuchKey") {
		t.Fatalf("Run with an unknown key: %v", err)
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Fatalf("Run left %v behind (%v)", ents, err)
	}
}

// fatal is what recorder.Fatalf panics with, to stop the helper as
// t.Fatalf's Goexit would.
type fatal string

// recorder is a failer that records the failure.
type recorder struct{ logs []string }

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(f string, args ...any)   { r.logs = append(r.logs, f) }
func (r *recorder) Fatalf(f string, args ...any) { panic(fatal(f)) }

// failure runs fn and returns what it panicked with.
func failure(fn func()) (v any) {
	defer func() { v = recover() }()
	fn()
	return nil
}

// A failure of a server from Run with no test bound panics and says how to
// bind one; the view T(t) fails its own test instead, and shares the
// server.
func TestRunFailuresNeedABoundTest(t *testing.T) {
	srv, err := Run(WithSettleTimeout(20 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	v := failure(func() { srv.WaitProducer("NoSuchProducerGroup") })
	msg, ok := v.(string)
	if !ok || !strings.Contains(msg, "NoSuchProducerGroup") || !strings.Contains(msg, "srv.T(t)") {
		t.Fatalf("WaitProducer on an unbound server panicked with %v", v)
	}

	view := srv.T(t)
	if view.server != srv.server || view.t != t {
		t.Fatal("T does not bind the same server to t")
	}
	// The failure goes to the bound test (here a recorder standing in).
	rec := &recorder{}
	bound := &Server{server: srv.server, t: rec}
	if v := failure(func() { bound.WaitProducer("NoSuchProducerGroup") }); v == nil || !strings.Contains(string(v.(fatal)), "no producer of group") {
		t.Fatalf("WaitProducer on a bound view: %v", v)
	}
	// Methods that cannot fail work unbound, and every view sees the same
	// server.
	srv.CreateTopic("RunShared", 2)
	if got := view.MaxOffset("RunShared", 1); got != 0 {
		t.Fatalf("max offset %d", got)
	}
	if view.NamesrvAddr() != srv.NamesrvAddr() || !view.Now().After(srv.Now().Add(-time.Minute)) {
		t.Fatal("the view is not the same server")
	}
}
