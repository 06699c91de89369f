package broker

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// deepExpression is issue 42's hostile subscription: 10^6 nested
// parentheses (about 2 MB), which overflowed the parser's stack and killed
// the process (a fatal error no recover catches).
var deepExpression = strings.Repeat("(", 1_000_000) + "a = 1" + strings.Repeat(")", 1_000_000)

// tooDeepExpression is within the length limit but past the depth limit.
var tooDeepExpression = strings.Repeat("(", 20_000) + "a = 1" + strings.Repeat(")", 20_000)

// smallStack caps goroutine stacks for one test so that a parser recursing
// per byte dies at once (failing the test binary) rather than after
// gigabytes.
func smallStack(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

// TestFilterLimitsRemoting sends the hostile expression down each remoting
// path that compiles SQL92, on the default config (enablePropertyFilter off:
// heartbeat and pull compile anyway, as in Java) and with the property
// filter on (CHECK_CLIENT_CONFIG), and checks each gets the stock code and
// the broker keeps serving.
func TestFilterLimitsRemoting(t *testing.T) {
	smallStack(t)
	tb := startBroker(t, nil)
	sendSQLMessages(tb, sqlTopic)
	tb.waitDispatched()

	for _, expr := range []string{deepExpression, tooDeepExpression} {
		// HEART_BEAT: Java answers SUCCESS whatever the expression
		// (ConsumerFilterManager.build logs and registers nothing).
		tb.sqlHeartbeat("LimitG", sqlTopic, expr, 1)
		if d := tb.Broker.clients.Filters.Get(sqlTopic, "LimitG"); d != nil {
			t.Fatalf("heartbeat registered a filter over the limits: %+v", d)
		}
		// A push consumer's pull then finds no filter data (stock 27).
		resp := tb.pull(pullArgs{group: "LimitG", topic: sqlTopic, subVersion: 1, maxMsgs: 32})
		if resp.Code != remoting.FilterDataNotExist {
			t.Fatalf("pull after the heartbeat: %d %q", resp.Code, resp.Remark)
		}

		// PULL_MESSAGE with the subscription in the header: refused as a
		// subscription that does not parse, the remark naming the limit.
		for _, offset := range []int64{0, 3} { // 3: behind the end, compiled on the event loop
			resp = tb.pull(pullArgs{group: "LimitP", topic: sqlTopic, sysFlag: pullFlagSubscription, subscription: expr, exprType: "SQL92", offset: offset})
			if resp.Code != remoting.SubscriptionParseFailed || !strings.Contains(resp.Remark, "limit") || len(resp.Remark) > 400 {
				t.Fatalf("pull with subscription at %d: %d %.400q", offset, resp.Code, resp.Remark)
			}
		}
		// The topic need not exist: Java's order checks it first.
		resp = tb.pull(pullArgs{group: "LimitP", topic: "NoSuchTopic", sysFlag: pullFlagSubscription, subscription: expr, exprType: "SQL92", offset: 7})
		if resp.Code != remoting.TopicNotExist {
			t.Fatalf("pull of a missing topic: %d %q", resp.Code, resp.Remark)
		}
	}

	// The broker still serves an ordinary filtered pull.
	resp := tb.pull(pullArgs{group: "LimitP", topic: sqlTopic, sysFlag: pullFlagSubscription, subscription: "a > 3", exprType: "SQL92"})
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "does not support") {
		t.Fatalf("ordinary pull with the property filter off: %d %q", resp.Code, resp.Remark)
	}
}

// TestFilterLimitsCheckClientConfig: CHECK_CLIENT_CONFIG answers
// SUBSCRIPTION_PARSE_FAILED (ClientManageProcessor.checkClientConfig) with a
// remark that names the limit and does not echo the megabytes.
func TestFilterLimitsCheckClientConfig(t *testing.T) {
	smallStack(t)
	tb := startBroker(t, enableSQL)
	for expr, want := range map[string]string{
		deepExpression:    "the limit is 65536 bytes",
		tooDeepExpression: "the limit of 256 levels",
	} {
		resp := tb.checkClientConfig("SQL92", expr)
		if resp.Code != remoting.SubscriptionParseFailed || !strings.Contains(resp.Remark, want) || len(resp.Remark) > 400 {
			t.Fatalf("%d bytes: %d %.400q, want %d with %q", len(expr), resp.Code, resp.Remark, remoting.SubscriptionParseFailed, want)
		}
	}
	if resp := tb.checkClientConfig("SQL92", "a > 3"); resp.Code != remoting.Success {
		t.Fatalf("ordinary expression: %d %q", resp.Code, resp.Remark)
	}
}
