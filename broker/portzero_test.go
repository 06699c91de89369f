package broker

import (
	"net"
	"net/netip"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// With listenPort 0 the broker listens on two ports the system picks, serves
// both, registers under the bound address and writes it as STOREHOST.
func TestListenPortZero(t *testing.T) {
	ns := startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) {
		o.ListenPort = 0
		o.NamesrvAddr = ns.addr
	})
	main, err := netip.ParseAddrPort(tb.Addr())
	if err != nil || main.Port() == 0 || main.Addr().String() != "127.0.0.1" {
		t.Fatalf("Addr = %q", tb.Addr())
	}
	vip, err := netip.ParseAddrPort(tb.VIPAddr())
	if err != nil || vip.Port() == 0 || vip == main {
		t.Fatalf("VIPAddr = %q (Addr %q)", tb.VIPAddr(), tb.Addr())
	}

	regs := ns.requests(remoting.RegisterBroker)
	if len(regs) == 0 || regs[0].ExtFields["brokerAddr"] != tb.Addr() {
		t.Fatalf("registrations %v, want brokerAddr %s", regs, tb.Addr())
	}
	o, _, _ := tb.brokerConfig(t)
	if o.ListenPort != int(main.Port()) {
		t.Errorf("GET_BROKER_CONFIG listenPort = %d, want the bound %d", o.ListenPort, main.Port())
	}

	resp := tb.mustSend(sendArgs{topic: "PortZero", body: []byte("x")})
	host, _, err := message.DecodeMessageID(resp.ExtFields["msgId"])
	if err != nil || host != main {
		t.Fatalf("msgId %q names %v (%v), want %v", resp.ExtFields["msgId"], host, err, main)
	}

	// The VIP port serves the same broker.
	r, err := tb.json.InvokeTimeout(tb.VIPAddr(), remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), coreTestTimeout)
	if err != nil || r.Code != remoting.Success {
		t.Fatalf("request on the VIP port: %v %v", r, err)
	}
}

// A broker on port 0 binds at New; until Start it refuses requests, and a
// Shutdown without Start frees both ports.
func TestListenPortZeroBeforeStart(t *testing.T) {
	b, err := New(coreTestOptions(t, func(o *Options) { o.ListenPort = 0 }))
	if err != nil {
		t.Fatal(err)
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	for _, addr := range []string{b.Addr(), b.VIPAddr()} {
		r, err := cl.InvokeTimeout(addr, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), coreTestTimeout)
		if err != nil || r.Code != remoting.ServiceNotAvailable {
			t.Fatalf("request on %s before Start: %v %v", addr, r, err)
		}
	}
	if err := b.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{b.Addr(), b.VIPAddr()} {
		_, port, _ := net.SplitHostPort(addr)
		l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Fatalf("port %s still bound after Shutdown: %v", port, err)
		}
		l.Close()
	}
}

func TestListenPortValidation(t *testing.T) {
	for _, p := range []int{-1, 1, 2, 65536} {
		o := coreTestOptions(t, func(o *Options) { o.ListenPort = p })
		if err := o.Validate(); err == nil {
			t.Errorf("listenPort %d accepted", p)
		}
	}
	o := coreTestOptions(t, func(o *Options) { o.ListenPort = 0 })
	if err := o.Validate(); err != nil {
		t.Errorf("listenPort 0 refused: %v", err)
	}
}
