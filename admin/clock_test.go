package admin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
)

func TestParseFastForward(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30m": 30 * time.Minute, "2h": 2 * time.Hour, "1h30m": 90 * time.Minute, " 90s ": 90 * time.Second,
		"1800000": 30 * time.Minute, "0": 0, "250ms": 250 * time.Millisecond,
	} {
		if got, err := ParseFastForward(in); err != nil || got != want {
			t.Errorf("ParseFastForward(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-1", "-5m", "30x", "99999999999999999999"} {
		if _, err := ParseFastForward(in); !errors.Is(err, ErrUsage) {
			t.Errorf("ParseFastForward(%q) = %v, want ErrUsage", in, err)
		}
	}
}

// FastForward sends the duration and the bound in ms, reads the broker's
// time back, and turns a refusal into a ResponseError with its remark.
func TestFastForwardRequest(t *testing.T) {
	b := startPeer(t)
	b.reply(remoting.ClockFastForward, remoting.Success, "", map[string]string{"brokerTime": "1700000000000", "clockOffsetMs": "1800000"}, nil)
	a := newTestAdmin(t)
	res, err := a.FastForward(testCtx(t), b.addr, "", 30*time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0] != (FastForwardResult{BrokerAddr: b.addr, BrokerTime: 1700000000000, ClockOffsetMs: 1800000}) {
		t.Fatalf("results %+v", res)
	}
	reqs := b.requests(remoting.ClockFastForward)
	if ext := reqs[0].Ext(); ext["durationMs"] != "1800000" || ext["timeoutMs"] != "30000" {
		t.Fatalf("request header %v, want durationMs 1800000 and the default bound 30000", ext)
	}
	if _, err := a.FastForward(testCtx(t), b.addr, "", time.Second, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if ext := b.requests(remoting.ClockFastForward)[1].Ext(); ext["timeoutMs"] != "2000" {
		t.Fatalf("timeoutMs %q, want 2000", ext["timeoutMs"])
	}
	if _, err := a.FastForward(testCtx(t), b.addr, "", -time.Second, 0); !errors.Is(err, ErrUsage) {
		t.Fatalf("negative duration: %v", err)
	}

	b.reply(remoting.ClockFastForward, remoting.NoPermission, "clock control is off", nil, nil)
	_, err = a.FastForward(testCtx(t), b.addr, "", time.Minute, 0)
	if CodeOf(err) != remoting.NoPermission || !strings.Contains(err.Error(), "CLOCK_FAST_FORWARD(9100)") || !strings.Contains(err.Error(), "clock control is off") {
		t.Fatalf("refusal: %v", err)
	}
	b.reply(remoting.ClockFastForward, remoting.Success, "", map[string]string{"brokerTime": "x"}, nil)
	if _, err := a.FastForward(testCtx(t), b.addr, "", time.Minute, 0); !errors.Is(err, ErrBadBody) {
		t.Fatalf("bad answer: %v", err)
	}
}

// With a cluster, every master the name server lists gets the request,
// slaves none.
func TestFastForwardCluster(t *testing.T) {
	ns, m1, m2 := startPeer(t), startPeer(t), startPeer(t)
	ns.reply(remoting.GetBrokerClusterInfo, remoting.Success, "", nil, []byte(`{"brokerAddrTable":{`+
		`"broker-a":{"brokerAddrs":{0:"`+m1.addr+`",1:"127.0.0.1:1"},"brokerName":"broker-a","cluster":"C1"},`+
		`"broker-b":{"brokerAddrs":{0:"`+m2.addr+`"},"brokerName":"broker-b","cluster":"C1"}},`+
		`"clusterAddrTable":{"C1":["broker-a","broker-b"]}}`))
	for _, m := range []*fakePeer{m1, m2} {
		m.reply(remoting.ClockFastForward, remoting.Success, "", map[string]string{"brokerTime": "1", "clockOffsetMs": "2"}, nil)
	}
	a := newTestAdmin(t, ns.addr)
	res, err := a.FastForward(testCtx(t), "", "C1", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res {
		got[r.BrokerAddr] = true
	}
	if len(res) != 2 || !got[m1.addr] || !got[m2.addr] {
		t.Fatalf("results %+v", res)
	}
	if _, err := a.FastForward(testCtx(t), "", "NoSuchCluster", time.Hour, 0); err == nil {
		t.Fatal("unknown cluster: no error")
	}
}

// FuzzParseFastForward: any -d text parses or is a usage error, never a
// panic, and a parsed duration is never negative.
func FuzzParseFastForward(f *testing.F) {
	for _, s := range []string{"30m", "2h", "1800000", "-1", "1h30m", "9223372036854775807", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseFastForward(s)
		if err != nil && !errors.Is(err, ErrUsage) {
			t.Fatalf("ParseFastForward(%q): %v is not a usage error", s, err)
		}
		if err == nil && d < 0 {
			t.Fatalf("ParseFastForward(%q) = %v", s, d)
		}
	})
}
