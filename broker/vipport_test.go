package broker

import (
	"net"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// VIPListenPort replaces ListenPort-2 as the VIP port: rmqtest restarts a
// broker whose two ports the system chose on the same two.
func TestVIPListenPort(t *testing.T) {
	main := testutil.FreePort(t)
	vip := testutil.FreePort(t)
	for vip == main-2 || vip == main {
		vip = testutil.FreePort(t)
	}
	tb := startBroker(t, func(o *Options) { o.ListenPort, o.VIPListenPort = main, vip })
	want := net.JoinHostPort("127.0.0.1", strconv.Itoa(vip))
	if tb.VIPAddr() != want {
		t.Fatalf("VIPAddr %s, want %s", tb.VIPAddr(), want)
	}
	r, err := tb.json.InvokeTimeout(want, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), coreTestTimeout)
	if err != nil || r.Code != remoting.Success {
		t.Fatalf("request on the VIP port %s: %v %v", want, r, err)
	}
}
