package grpcapi

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rmqio/rmq/topicgroup"
)

// The delays of CustomizedRetryPolicy and ExponentialRetryPolicy
// .nextDelayDuration.
func TestGroupRetryPolicyDelays(t *testing.T) {
	withPolicy := func(p *topicgroup.GroupRetryPolicy) *topicgroup.SubscriptionGroupConfig {
		cfg := topicgroup.NewSubscriptionGroupConfig("G")
		cfg.GroupRetryPolicy = p
		return cfg
	}
	cases := []struct {
		name      string
		cfg       *topicgroup.SubscriptionGroupConfig
		reconsume int32
		want      time.Duration
		ok        bool
	}{
		{"no group", nil, 0, 10 * time.Second, true},
		{"default, first retry", withPolicy(nil), 0, 10 * time.Second, true},
		{"default, negative", withPolicy(nil), -3, 10 * time.Second, true},
		{"default, second retry", withPolicy(nil), 1, 30 * time.Second, true},
		{"default, last level", withPolicy(nil), 15, 2 * time.Hour, true},
		{"default, past the levels", withPolicy(nil), 100, 2 * time.Hour, true},
		{"customized without levels given", withPolicy(&topicgroup.GroupRetryPolicy{Type: "CUSTOMIZED"}), 2, time.Minute, true},
		{"customized", withPolicy(&topicgroup.GroupRetryPolicy{Type: "CUSTOMIZED", Customized: &topicgroup.CustomizedRetryPolicy{Next: []int64{1000, 2000, 3000, 4000}}}), 1, 4 * time.Second, true},
		{"customized, short list", withPolicy(&topicgroup.GroupRetryPolicy{Customized: &topicgroup.CustomizedRetryPolicy{Next: []int64{1000, 2000}}}), 0, 2 * time.Second, true},
		{"customized, empty list", withPolicy(&topicgroup.GroupRetryPolicy{Customized: &topicgroup.CustomizedRetryPolicy{}}), 0, 0, false},
		{"exponential defaults", withPolicy(&topicgroup.GroupRetryPolicy{Type: "EXPONENTIAL"}), 3, 40 * time.Second, true},
		{"exponential defaults, capped", withPolicy(&topicgroup.GroupRetryPolicy{Type: "EXPONENTIAL"}), 40, 2 * time.Hour, true},
		{"exponential", withPolicy(&topicgroup.GroupRetryPolicy{Type: "EXPONENTIAL", Exponential: &topicgroup.ExponentialRetryPolicy{Initial: 1000, Max: 8000, Multiplier: 3}}), 1, 3 * time.Second, true},
		{"exponential, capped", withPolicy(&topicgroup.GroupRetryPolicy{Type: "EXPONENTIAL", Exponential: &topicgroup.ExponentialRetryPolicy{Initial: 1000, Max: 8000, Multiplier: 3}}), 2, 8 * time.Second, true},
	}
	for _, tc := range cases {
		got, ok := groupRetryPolicy(tc.cfg).nextDelay(tc.reconsume)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRawAutoRenewStopsAtMaxTime: an auto-renewed message is renewed with
// RenewStrategyPolicy's delays until renewMaxTimeMillis (3 h) after it was
// received; then renewal stops and the message is handed back after the
// delay of its group's retry policy (DefaultReceiptHandleManager
// .startRenewMessage, STOP_RENEW), which also is the backoff the group's
// consumers are told in their Settings.
func TestRawAutoRenewStopsAtMaxTime(t *testing.T) {
	cs := startConsumeServer(t, nil, func(o *Options) { o.RenewPeriodMillis = (24 * time.Hour).Milliseconds() })
	c := cs.seed(t, "RawRenewMax", 1, 1, "")
	g := topicgroup.NewSubscriptionGroupConfig("RenewMaxGroup")
	g.RetryMaxTimes = 3
	g.GroupRetryPolicy = &topicgroup.GroupRetryPolicy{Type: "EXPONENTIAL", Exponential: &topicgroup.ExponentialRetryPolicy{Initial: 2000, Max: 60000, Multiplier: 2}}
	if err := cs.b.Clients().SubGroups.Update(g); err != nil {
		t.Fatal(err)
	}
	settings, _ := pushSession(t, c, "renew-max-client", "RenewMaxGroup")
	bp := settings.GetBackoffPolicy()
	if exp := bp.GetExponentialBackoff(); bp.GetMaxAttempts() != 4 || exp.GetInitial().AsDuration() != 2*time.Second ||
		exp.GetMax().AsDuration() != time.Minute || exp.GetMultiplier() != 2 {
		t.Fatalf("settings backoff %v", bp)
	}
	// A group without a policy: CUSTOMIZED with the default levels.
	def, _ := pushSession(t, c, "renew-default-client", "DefaultPolicyGroup")
	levels := def.GetBackoffPolicy().GetCustomizedBackoff().GetNext()
	if def.GetBackoffPolicy().GetMaxAttempts() != 17 || len(levels) != 18 || levels[0].AsDuration() != time.Second || levels[17].AsDuration() != 2*time.Hour {
		t.Fatalf("default settings backoff %v", def.GetBackoffPolicy())
	}

	req := recvReq("RenewMaxGroup", "RawRenewMax", 0)
	req.InvisibleDuration, req.AutoRenew = nil, true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := receiveRaw(t, c, metadata.AppendToOutgoingContext(ctx, mdClientID, "renew-max-client"), req)
	if len(r.msgs) != 1 {
		t.Fatalf("receive: %v", r.status)
	}
	var e *renewal
	for _, es := range cs.srv.renewals.snapshot() {
		e = es[0]
	}
	received := cs.clk.Now()
	lock := func() (pop int64, invisible int64, renewals int, gone bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.cur.h.PopTime, e.cur.h.InvisibleTime, e.renewTimes, e.gone
	}
	// Each scan RenewAheadMillis before the invisible time ends renews it
	// for the next delay: 1m 3m 5m 10m 30m 1h 1h 1h; the scan after that
	// comes 3h48m after the receipt.
	for i := 0; ; i++ {
		popTime, invisible, _, _ := lock()
		due := time.UnixMilli(popTime + invisible - cs.srv.opts.RenewAheadMillis)
		cs.clk.Advance(due.Sub(cs.clk.Now()))
		cs.srv.renewDue()
		popTime, invisible, n, gone := lock()
		if gone {
			if i != 8 || n != 8 || cs.clk.Now().Sub(received) < 3*time.Hour {
				t.Fatalf("renewal stopped at scan %d after %d renewals, %v after the receipt", i, n, cs.clk.Now().Sub(received))
			}
			// Handed back after the policy's delay for a first retry.
			if invisible != 2000 || popTime != cs.clk.Now().UnixMilli() {
				t.Fatalf("handed back with pop time %d invisible %d ms, want %d and 2000", popTime, invisible, cs.clk.Now().UnixMilli())
			}
			break
		}
		want := renewDelays[min(i, len(renewDelays)-1)]
		if n != i+1 || invisible != want.Milliseconds() || popTime != cs.clk.Now().UnixMilli() {
			t.Fatalf("scan %d: %d renewals, invisible %d ms, want %d and %v", i, n, invisible, i+1, want)
		}
	}
	if n := len(cs.srv.renewals.snapshot()); n != 0 {
		t.Fatalf("%d clients still renewing", n)
	}
	cs.clk.Advance(2 * time.Second)
	cs.waitRevived(t, 1)
	again := receiveRaw(t, c, callCtx(t), recvReq("RenewMaxGroup", "RawRenewMax", 10*time.Second))
	if len(again.msgs) != 1 || again.msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("after renewal stopped: %v %v", again.status, again.msgs)
	}
}
