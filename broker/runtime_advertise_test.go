package broker

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// lastRegistration waits until ns has a REGISTER_BROKER whose header has
// every key of want, and returns it.
func lastRegistration(t *testing.T, ns *fakeNamesrv, what string, want map[string]string) *remoting.Command {
	t.Helper()
	var found *remoting.Command
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		regs := ns.requests(remoting.RegisterBroker)
		for i := len(regs) - 1; i >= 0; i-- {
			match := true
			for k, v := range want {
				if regs[i].ExtFields[k] != v {
					match = false
					break
				}
			}
			if match {
				found = regs[i]
				return true
			}
		}
		return false
	}, what)
	return found
}

// updateConfig sends UPDATE_BROKER_CONFIG and requires SUCCESS.
func (tb *testBroker) updateConfig(t *testing.T, body string) {
	t.Helper()
	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(body)); resp.Code != remoting.Success {
		t.Fatalf("updateBrokerConfig %q: code %d %q", body, resp.Code, resp.Remark)
	}
}

// sendAndView sends one message and checks that its offsetMsgId carries
// want as store host, and that VIEW_MESSAGE_BY_ID (over the listening
// socket, which never moves) returns a record with that STOREHOST.
func (tb *testBroker) sendAndView(t *testing.T, topic string, want netip.AddrPort) {
	t.Helper()
	resp := tb.mustSend(sendArgs{topic: topic, body: []byte("advertised")})
	msgID := resp.ExtFields["msgId"]
	host, off, err := message.DecodeMessageID(msgID)
	if err != nil || host != want {
		t.Fatalf("offsetMsgId %s decodes to %s (%v), want store host %s", msgID, host, err, want)
	}
	view := tb.invoke(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
	if view.Code != remoting.Success {
		t.Fatalf("VIEW_MESSAGE_BY_ID %s: code %d %q", msgID, view.Code, view.Remark)
	}
	m, err := message.DecodeRecord(view.Body)
	if err != nil {
		t.Fatal(err)
	}
	if m.StoreHost != want || m.MsgID != msgID {
		t.Fatalf("viewed record: store host %s msg id %s, want %s %s", m.StoreHost, m.MsgID, want, msgID)
	}
}

// The keys a Testcontainers recipe sets after the container started: each
// one is registered with every name server at once, and the records stored
// afterwards carry the advertised address.
func TestUpdateAdvertisedAddress(t *testing.T) {
	ns1, ns2 := startFakeNamesrv(t), startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) {
		o.NamesrvAddr = ns1.addr + ";" + ns2.addr
		o.BrokerName = "broker-adv"
	})
	port := tb.opts.ListenPort
	start := netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", port))
	for _, ns := range []*fakeNamesrv{ns1, ns2} {
		lastRegistration(t, ns, "the registration at start", map[string]string{
			"brokerAddr": start.String(), "haServerAddr": fmt.Sprintf("127.0.0.1:%d", port+1),
		})
	}
	tb.sendAndView(t, "Adv", start)

	steps := []struct {
		key, value string
		want       map[string]string // registration header
		host       netip.AddrPort    // STOREHOST afterwards
		perm       int32             // perm of the registered topics
	}{
		{
			key: "brokerIP1", value: "127.0.0.2",
			want: map[string]string{"brokerAddr": fmt.Sprintf("127.0.0.2:%d", port), "haServerAddr": fmt.Sprintf("127.0.0.1:%d", port+1)},
			host: netip.MustParseAddrPort(fmt.Sprintf("127.0.0.2:%d", port)), perm: 6,
		},
		{
			// A host name is advertised as given and resolved for STOREHOST.
			key: "brokerIP1", value: "localhost",
			want: map[string]string{"brokerAddr": fmt.Sprintf("localhost:%d", port)},
			host: netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", port)), perm: 6,
		},
		{
			key: "listenPort", value: "32771",
			want: map[string]string{"brokerAddr": "localhost:32771", "haServerAddr": fmt.Sprintf("127.0.0.1:%d", port+1)},
			host: netip.MustParseAddrPort("127.0.0.1:32771"), perm: 6,
		},
		{
			key: "brokerIP2", value: "10.1.2.3",
			want: map[string]string{"brokerAddr": "localhost:32771", "haServerAddr": fmt.Sprintf("10.1.2.3:%d", port+1)},
			host: netip.MustParseAddrPort("127.0.0.1:32771"), perm: 6,
		},
		{
			key: "brokerPermission", value: "4",
			want: map[string]string{"brokerAddr": "localhost:32771"},
			host: netip.MustParseAddrPort("127.0.0.1:32771"), perm: 4,
		},
		{
			key: "brokerPermission", value: "6",
			want: map[string]string{"brokerAddr": "localhost:32771"},
			host: netip.MustParseAddrPort("127.0.0.1:32771"), perm: 6,
		},
	}
	for _, s := range steps {
		before1, before2 := len(ns1.requests(remoting.RegisterBroker)), len(ns2.requests(remoting.RegisterBroker))
		tb.updateConfig(t, s.key+"="+s.value+"\n")
		// Registered before the reply: the last registration each name
		// server has already carries the change.
		for i, ns := range []*fakeNamesrv{ns1, ns2} {
			regs := ns.requests(remoting.RegisterBroker)
			if before := []int{before1, before2}[i]; len(regs) <= before {
				t.Fatalf("after %s=%s: %s got no registration before the reply", s.key, s.value, ns.addr)
			}
			r := regs[len(regs)-1]
			for k, v := range s.want {
				if r.ExtFields[k] != v {
					t.Fatalf("after %s=%s: %s's last registration has %s=%q, want %q", s.key, s.value, ns.addr, k, r.ExtFields[k], v)
				}
			}
			var body remoting.RegisterBrokerBody
			if err := remoting.UnmarshalBody(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if tc := body.TopicConfigSerializeWrapper.TopicConfigTable["Adv"]; tc == nil || tc.Perm != s.perm {
				t.Fatalf("after %s=%s topic Adv registered as %+v, want perm %d", s.key, s.value, tc, s.perm)
			}
		}
		if got := tb.Addr(); got != s.want["brokerAddr"] {
			t.Fatalf("Addr() = %s after %s=%s, want %s", got, s.key, s.value, s.want["brokerAddr"])
		}
		o, _, _ := tb.brokerConfig(t)
		if got := map[string]string{"brokerIP1": o.BrokerIP1, "brokerIP2": o.BrokerIP2, "listenPort": strconv.Itoa(o.ListenPort),
			"brokerPermission": strconv.Itoa(int(o.BrokerPermission))}[s.key]; got != s.value {
			t.Fatalf("GET_BROKER_CONFIG %s = %q, want %q", s.key, got, s.value)
		}
		if s.perm&topicgroup.PermWrite != 0 {
			tb.sendAndView(t, "Adv", s.host)
		}
	}

	// Shutdown unregisters the address advertised last.
	tb.stop()
	for _, ns := range []*fakeNamesrv{ns1, ns2} {
		un := ns.requests(remoting.UnregisterBroker)
		if len(un) != 1 || un[0].ExtFields["brokerAddr"] != "localhost:32771" {
			t.Fatalf("unregistrations at %s: %d, last %v", ns.addr, len(un), un)
		}
	}
}

func TestUpdateAdvertisedAddressRefused(t *testing.T) {
	ns := startFakeNamesrv(t)
	tb := startBroker(t, func(o *Options) { o.NamesrvAddr = ns.addr })
	start := netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", tb.opts.ListenPort))
	for _, body := range []string{
		"brokerIP1=::1\n",
		"brokerIP1=\n",
		"brokerIP2=\n",
		"listenPort=0\n",
		"listenPort=65536\n",
		"listenPort=x\n",
		"brokerIP1=127.0.0.9\nlistenPort=70000\n",
	} {
		resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(body))
		if resp.Code != remoting.SystemError {
			t.Fatalf("updateBrokerConfig %q: code %d %q, want refused", body, resp.Code, resp.Remark)
		}
		if tb.Addr() != start.String() || tb.storeHost() != start {
			t.Fatalf("refused %q changed the address: %s, store host %s", body, tb.Addr(), tb.storeHost())
		}
	}
	tb.sendAndView(t, "Refused", start)
}
