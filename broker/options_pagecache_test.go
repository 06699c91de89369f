package broker

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
)

// TestDefaultPageCacheKeepHoldsAMillionMessages checks the promise of
// DefaultCommitLogPageCacheKeep: a consumer a million 1 KiB messages behind
// reads them from memory. Each takes its record's header, topic and a
// producer's properties on top of the body (at the 1 GiB default, the
// oldest ~10 % of such a backlog was read from the disk).
func TestDefaultPageCacheKeepHoldsAMillionMessages(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	r := message.Record{
		Topic: "BenchmarkTest",
		Properties: message.MarshalProperties(map[string]string{
			message.PropUniqKey: strings.Repeat("A", 32), // MessageClientIDSetter's 32 hex digits
			message.PropWait:    "true",
			message.PropTags:    "TagA",
		}),
		Body:      make([]byte, 1024),
		BornHost:  host,
		StoreHost: host,
	}
	const backlog = 1_000_000
	need := int64(r.Size()) * backlog
	if need > DefaultCommitLogPageCacheKeep {
		t.Fatalf("a backlog of %d 1 KiB messages takes %d bytes of commitlog (%d each); DefaultCommitLogPageCacheKeep %d keeps less",
			backlog, need, r.Size(), DefaultCommitLogPageCacheKeep)
	}
	if got := DefaultOptions().CommitLogPageCacheKeep; got != DefaultCommitLogPageCacheKeep {
		t.Fatalf("default options keep %d, want DefaultCommitLogPageCacheKeep %d", got, DefaultCommitLogPageCacheKeep)
	}
	t.Logf("%d messages of %d bytes each: %.2f GiB", backlog, r.Size(), float64(need)/(1<<30))
}
