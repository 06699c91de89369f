package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// countLines is the number of lines of log containing s.
func countLines(log *testutil.LockedBuffer, s string) int {
	return strings.Count(log.String(), s)
}

// Issue 42 defect 8: a client retrying against a full disk made the broker
// write one WRN line per refused send (3.47 M lines, 658 MB in ~2 min). A
// million refusals now write one line; the counter has every one; the
// broker's flush loop, once its clock has passed the interval, writes how
// many were left out. Before the fix this wrote 1 000 000 lines.
func TestDiskFullRefusalsAreRateLimited(t *testing.T) {
	var buf testutil.LockedBuffer
	clk := clock.NewManual(time.Now())
	diskFull := fmt.Errorf("%w: no space left for a new segment", store.ErrDiskFull)
	o := coreTestOptions(t, func(o *Options) {
		o.Logger = zerolog.New(&buf).Level(zerolog.InfoLevel)
		o.Clock = clk
	})
	tb := startBrokerWith(t, o, func(b *Broker) {
		b.putHooks = append(b.putHooks, func(m *message.Message) error {
			if m.Topic == "Full" {
				return diskFull
			}
			return nil
		})
	})

	// A few through the wire (the send path's own logging), then the
	// burst straight into the mapping every front end shares.
	const wire, burst = 50, 1_000_000
	for range wire {
		if resp := tb.send(sendArgs{topic: "Full", body: []byte("x")}); resp.Code != remoting.ServiceNotAvailable {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	for range burst {
		if code, _ := tb.putFailureCode(diskFull); code != remoting.ServiceNotAvailable {
			t.Fatalf("code %d", code)
		}
	}
	const line = "send refused by the store"
	if n := countLines(&buf, line); n != 1 {
		t.Fatalf("%d %q lines for %d refusals, want 1", n, line, wire+burst)
	}
	if got := tb.Refusals().Total("send_disk_full", remoting.ServiceNotAvailable); got != wire+burst {
		t.Fatalf("refusal counter %d, want %d", got, wire+burst)
	}

	// The broker flushes every interval of its clock: past the interval the
	// summary names the count left out.
	want := fmt.Sprintf(`"suppressed":%d`, wire+burst-1)
	testutil.WaitFor(t, 5*time.Second, func() bool {
		clk.Advance(tb.Refusals().Interval())
		return countLines(&buf, want) == 1
	}, "no summary with "+want)
	if n := countLines(&buf, "similar refusals in the last interval"); n != 1 {
		t.Fatalf("%d summaries, want 1", n)
	}

	// A missing topic that may not be created is its own reason.
	for range 100 {
		resp := tb.send(sendArgs{topic: "NoSuchTopic", body: []byte("x"), defaultTopic: "NoSuchDefault"})
		if resp.Code != remoting.TopicNotExist {
			t.Fatalf("send to a missing topic: %d %s", resp.Code, resp.Remark)
		}
	}
	if n := countLines(&buf, "send to a topic that does not exist"); n != 1 {
		t.Fatalf("%d topic-not-exist lines for 100 refusals, want 1", n)
	}
	if got := tb.Refusals().Total("send_topic_not_exist", remoting.TopicNotExist); got != 100 {
		t.Fatalf("topic-not-exist counter %d, want 100", got)
	}
}

// A client repeating CHECK_CLIENT_CONFIG with an expression that does not
// compile writes one line per interval, counted every time.
func TestSubscriptionParseFailuresAreRateLimited(t *testing.T) {
	var buf testutil.LockedBuffer
	tb := startBroker(t, func(o *Options) {
		enableSQL(o)
		o.Logger = zerolog.New(&buf).Level(zerolog.InfoLevel)
		o.Clock = clock.NewManual(time.Now())
	})
	const n = 200
	for range n {
		if resp := tb.checkClientConfig("SQL92", "a >"); resp.Code != remoting.SubscriptionParseFailed {
			t.Fatalf("check: %d %s", resp.Code, resp.Remark)
		}
	}
	if got := countLines(&buf, "does not compile"); got != 1 {
		t.Fatalf("%d lines for %d failed checks, want 1", got, n)
	}
	if got := tb.Refusals().Total("subscription_parse_failed", remoting.SubscriptionParseFailed); got != n {
		t.Fatalf("counted %d, want %d", got, n)
	}
}
