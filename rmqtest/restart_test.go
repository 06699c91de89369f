package rmqtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
)

// sendN stores n messages on queue 0 of topic and returns them as stored.
func sendN(t *testing.T, srv *Server, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		m, err := srv.Send(Message{Topic: topic, Body: []byte(fmt.Sprintf("m%d", i)), Tags: "T", Keys: []string{fmt.Sprintf("k%d", i)}})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if m.QueueOffset != int64(i) {
			t.Fatalf("send %d stored at offset %d", i, m.QueueOffset)
		}
	}
}

// checkBodies fails unless topic holds exactly m0..m(n-1) in order.
func checkBodies(t *testing.T, srv *Server, topic string, n int) {
	t.Helper()
	msgs, err := srv.Messages(topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != n {
		t.Fatalf("%s holds %d messages, want %d", topic, len(msgs), n)
	}
	for i, m := range msgs {
		if string(m.Body) != fmt.Sprintf("m%d", i) || m.QueueOffset != int64(i) {
			t.Fatalf("message %d: %q at %d", i, m.Body, m.QueueOffset)
		}
	}
}

// addrs are the addresses a restart must keep.
func addrs(srv *Server) [5]string {
	return [5]string{srv.NamesrvAddr(), srv.BrokerAddr(), srv.BrokerVIPAddr(), srv.GRPCAddr(), srv.b.HAAddr()}
}

// requestOK sends GET_BROKER_CONFIG to addr.
func requestOK(t *testing.T, addr string) {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	resp, err := cl.InvokeTimeout(addr, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), 10*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_CONFIG on %s: %v %v", addr, resp, err)
	}
}

// A clean restart keeps the store, the ports (main, VIP and gRPC), the
// committed offsets and the virtual clock; the broker is routed again.
func TestRestartKeepsStorePortsAndClock(t *testing.T) {
	t.Parallel()
	srv := Start(t, WithGRPC())
	const topic = "RestartClean"
	srv.CreateTopic(topic, 1)
	sendN(t, srv, topic, 0, 5)
	srv.b.Clients().Offsets.Commit("G", topic, 0, 3)
	before := addrs(srv)
	srv.FastForward(time.Hour)
	clk := srv.Now()

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if after := addrs(srv); after != before {
		t.Fatalf("addresses %v after the restart, %v before", after, before)
	}
	if got := srv.b.Store().RuntimeInfo()["recoveryCleanShutdown"]; got != "true" {
		t.Fatalf("recoveryCleanShutdown %s after a clean restart", got)
	}
	if srv.Now().Before(clk) {
		t.Fatalf("virtual clock at %v after the restart, %v before", srv.Now(), clk)
	}
	if rd := srv.ns.Routes().TopicRoute(topic); rd == nil || rd.BrokerDatas[0].BrokerAddrs[0] != srv.BrokerAddr() {
		t.Fatalf("route of %s after the restart: %+v", topic, rd)
	}
	requestOK(t, srv.BrokerAddr())
	requestOK(t, srv.BrokerVIPAddr())
	checkBodies(t, srv, topic, 5)
	if off, ok := srv.CommittedOffset("G", topic, 0); !ok || off != 3 {
		t.Fatalf("committed offset %d %v after the restart", off, ok)
	}
	sendN(t, srv, topic, 5, 1) // the queue goes on at 5
	if err := srv.Restart(); err != nil {
		t.Fatal("second restart:", err)
	}
	checkBodies(t, srv, topic, 6)
}

// A crash restart takes the store's crash-recovery path and keeps every
// message written before it.
func TestRestartCrashRecoversMessages(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	const topic = "RestartCrash"
	srv.CreateTopic(topic, 1)
	sendN(t, srv, topic, 0, 20)
	before := addrs(srv)

	if err := srv.RestartCrash(); err != nil {
		t.Fatal(err)
	}
	info := srv.b.Store().RuntimeInfo()
	if info["recoveryCleanShutdown"] != "false" {
		t.Fatalf("recoveryCleanShutdown %s: not the crash path", info["recoveryCleanShutdown"])
	}
	if after := addrs(srv); after != before {
		t.Fatalf("addresses %v after the crash restart, %v before", after, before)
	}
	checkBodies(t, srv, topic, 20)
	sendN(t, srv, topic, 20, 1)
	requestOK(t, srv.BrokerAddr())
	// And a clean restart after it trusts the checkpoint again.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := srv.b.Store().RuntimeInfo()["recoveryCleanShutdown"]; got != "true" {
		t.Fatalf("recoveryCleanShutdown %s after the clean restart", got)
	}
	checkBodies(t, srv, topic, 21)
}

// The gRPC keys bind (enableGrpc was an unknown key before), and a restart
// after a view's Close is refused.
func TestGRPCKeysAndCloseThroughAView(t *testing.T) {
	t.Parallel()
	srv := Start(t, WithBrokerConfig(map[string]string{"enableGrpc": "true", "grpcClientConsumerMaxLongPollingTimeoutMillis": "5000"}))
	if srv.GRPCAddr() == "" {
		t.Fatal("enableGrpc=true started no gRPC endpoint")
	}
	if srv.grpc.MaxLongPollingMillis != 5000 {
		t.Fatalf("grpcClientConsumerMaxLongPollingTimeoutMillis bound as %d", srv.grpc.MaxLongPollingMillis)
	}
	if off := Start(t, WithGRPC(), WithBrokerConfig(map[string]string{"enableGrpc": "false"})); off.GRPCAddr() != "" {
		t.Fatal("an explicit enableGrpc=false lost to WithGRPC")
	}
	if err := srv.T(t).Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err == nil {
		t.Fatal("Restart after a view's Close succeeded")
	}
}
