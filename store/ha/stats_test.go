package ha

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// The figures of 5.x HARuntimeInfo on both sides of a pair: the master's
// transferFromWhere, inSync and bytes per second of a connection, the
// slave's read/write timestamps and bytes per second. The clocks are
// manual: the rates are the counts of the previous clock second.
func TestStatsRuntimeInfoFigures(t *testing.T) {
	p := newPair(t)
	put(t, p.mst, 0, 20)
	p.caughtUp()
	max := p.mst.MaxPhyOffset()

	st := p.master.Stats()
	if len(st.Slaves) != 1 {
		t.Fatalf("slaves = %+v", st.Slaves)
	}
	sl := st.Slaves[0]
	if sl.AckOffset != max || !sl.InSync || sl.TransferFromWhere != max {
		t.Fatalf("slave stat = %+v, want ack = from = %d, in sync", sl, max)
	}
	// Everything was sent within the master's current clock second: the
	// previous second counted nothing; one second on, the whole log shows.
	if sl.TransferredByteInSecond != 0 {
		t.Fatalf("bytes in the previous second = %d, want 0", sl.TransferredByteInSecond)
	}
	p.mclk.Advance(time.Second)
	if got := p.master.Stats().Slaves[0].TransferredByteInSecond; got != max {
		t.Fatalf("bytes in the last second = %d, want %d", got, max)
	}
	p.mclk.Advance(2 * time.Second)
	if got := p.master.Stats().Slaves[0].TransferredByteInSecond; got != 0 {
		t.Fatalf("bytes two idle seconds on = %d, want 0", got)
	}

	// The slave's clock moved while it waited for the catch-up; its bytes
	// were read at some second of it, reported once that second is over.
	cs := p.client.Stats()
	now := p.sclk.Now().UnixMilli()
	if cs.LastReadTimestamp <= 0 || cs.LastReadTimestamp > now || cs.LastWriteTimestamp <= 0 || cs.LastWriteTimestamp > now {
		t.Fatalf("client stats = %+v, clock %d", cs, now)
	}
	// More bytes within one slave clock second (the session is up: no
	// clock needed to reconnect) show as that second's count once over.
	// The clock leaves the catch-up's seconds first.
	p.sclk.Advance(2 * time.Second)
	put(t, p.mst, 20, 5)
	max2 := p.mst.MaxPhyOffset()
	testutil.WaitFor(t, testWait, func() bool { return p.sst.MaxPhyOffset() == max2 }, "the slave to get the new bytes")
	p.sclk.Advance(time.Second)
	if got := p.client.Stats().TransferredByteInSecond; got != max2-max {
		t.Fatalf("slave bytes in the last second = %d, want %d", got, max2-max)
	}
	if got := p.master.Stats().Slaves[0].TransferFromWhere; got != max2 {
		t.Fatalf("transferFromWhere = %d, want %d", got, max2)
	}

	// A session's end zeroes lastReadTimestamp (DefaultHAClient.closeMaster).
	p.master.Close()
	p.master = nil
	testutil.WaitFor(t, testWait, func() bool { return p.client.Stats().LastReadTimestamp == 0 }, "lastReadTimestamp to be 0")
}

// ByteRate: the previous clock second's count, 0 after an idle second.
func TestByteRate(t *testing.T) {
	var r ByteRate
	t0 := epoch
	r.Add(t0, 10)
	r.Add(t0.Add(500*time.Millisecond), 5)
	if got := r.PerSecond(t0.Add(900 * time.Millisecond)); got != 0 {
		t.Fatalf("within the first second = %d", got)
	}
	if got := r.PerSecond(t0.Add(1500 * time.Millisecond)); got != 15 {
		t.Fatalf("next second = %d, want 15", got)
	}
	if got := r.PerSecond(t0.Add(2500 * time.Millisecond)); got != 0 {
		t.Fatalf("after an idle second = %d, want 0", got)
	}
	r.Add(t0.Add(time.Second), 7) // a clock stepped back counts into the current second
	if got := r.PerSecond(t0.Add(3500 * time.Millisecond)); got != 7 {
		t.Fatalf("after a step back = %d, want 7", got)
	}
}
