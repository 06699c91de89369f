package namesrv

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
)

// TestConnectionSettingsReachTheListener checks that the name server's
// connection keys reach its remoting server: the listener binds
// bindAddress only, and serverMaxConnections closes the connection past it.
func TestConnectionSettingsReachTheListener(t *testing.T) {
	s := startServer(t, func(o *Options) { o.ServerMaxConnections = 1 })
	first, err := net.DialTimeout("tcp4", s.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	req := remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil)
	if _, err := first.Write(remoting.EncodeFrame(req)); err != nil {
		t.Fatal(err)
	}
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, _, err := remoting.ReadFrame(first, nil); err != nil || resp.Opaque != req.Opaque {
		t.Fatalf("first connection: %v, %v", resp, err)
	}

	second, err := net.DialTimeout("tcp4", s.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	var one [1]byte
	_, err = second.Read(one[:])
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("second connection past serverMaxConnections=1: read %v, want it closed", err)
	}

	// ListenHost 127.0.0.1 (startServer): 127.0.0.2, also loopback on
	// Linux, does not reach it.
	wild, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.2", strconv.Itoa(wild.Addr().(*net.TCPAddr).Port)), 10*time.Second)
	wild.Close()
	if err != nil {
		t.Skipf("127.0.0.2 does not reach a wildcard listener here: %v", err)
	}
	probe.Close()
	if nc, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.2", strconv.Itoa(s.opts.ListenPort)), 10*time.Second); err == nil {
		nc.Close()
		t.Fatal("a name server bound to 127.0.0.1 accepted a connection on 127.0.0.2")
	}
}
