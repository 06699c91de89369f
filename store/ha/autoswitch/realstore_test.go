package autoswitch

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// *store.Store is the service's Store.
var _ Store = (*store.Store)(nil)

const realFileSize = 64 << 10 // a few hundred messages cross files

func openRealStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(store.Options{
		Dir:                        dir,
		MappedFileSizeCommitLog:    realFileSize,
		MappedFileSizeConsumeQueue: 20 * 1024,
		StoreHost:                  netip.MustParseAddrPort("127.0.0.1:10911"),
		NoPreallocate:              true,
		Index:                      store.IndexOptions{HashSlotNum: 512, MaxIndexNum: 4096},
		Logger:                     testlog.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func putMessages(t *testing.T, s *store.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		body := fmt.Appendf(nil, "asw-%06d|", i)
		for len(body) < 60+(i*53)%900 {
			body = append(body, byte('a'+i%26))
		}
		m := &message.Message{Topic: "AswTopic", QueueID: int32(i % 2), Body: body,
			Properties:    map[string]string{"KEYS": fmt.Sprintf("k%d", i), "UNIQ_KEY": fmt.Sprintf("U%08d", i)},
			BornTimestamp: 1_700_000_000_000 + int64(i), BornHost: netip.MustParseAddrPort("10.1.2.3:4567")}
		if _, err := s.PutMessage(m); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}

func commitLog(t *testing.T, s *store.Store) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 32<<10)
	for off := s.MinPhyOffset(); off < s.MaxPhyOffset(); {
		n, err := s.ReadCommitLog(off, buf)
		if err != nil || n == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
	return out
}

func queued(s *store.Store) int64 {
	return s.MaxOffsetInQueue("AswTopic", 0) + s.MaxOffsetInQueue("AswTopic", 1)
}

// Two real stores: the slave's commitlog ends byte-identical to the
// master's across file rolls and an epoch change; with
// allAckInSyncStateSet and both in the set, each side's consume queues
// hold every message once the slave acked and the master confirmed.
func TestRealStoresReplicate(t *testing.T) {
	var props proposals
	mst, sst := openRealStore(t, t.TempDir()), openRealStore(t, t.TempDir())
	m := node(t, mst, t.TempDir(), func(c *Config) {
		c.AllAckInSyncStateSet, c.LocalBrokerID, c.OnSyncStateSetChange = true, 1, props.add
		c.TransferBatchSize = 32 << 10
	})
	sl := node(t, sst, t.TempDir(), nil)
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	m.SetSyncStateSet([]int64{1}, 1)
	putMessages(t, mst, 0, 200)
	if err := sl.ChangeToSlave(m.Addr().String(), 1, 2); err != nil {
		t.Fatal(err)
	}
	props.wait(t, []int64{1, 2})
	m.SetSyncStateSet([]int64{1, 2}, 2)
	testutil.WaitFor(t, testWait, func() bool { return sst.MaxPhyOffset() == mst.MaxPhyOffset() }, "the slave")
	if err := m.ChangeToMaster(2); err != nil {
		t.Fatal(err)
	}
	putMessages(t, mst, 200, 200)
	if mst.MaxPhyOffset() < 3*realFileSize {
		t.Fatalf("only %d bytes: no file roll", mst.MaxPhyOffset())
	}
	testutil.WaitFor(t, testWait, func() bool {
		return sst.MaxPhyOffset() == mst.MaxPhyOffset() && queued(mst) == 400 && queued(sst) == 400
	}, "both sides to hold and show every message")
	if !bytes.Equal(commitLog(t, mst), commitLog(t, sst)) {
		t.Fatal("commitlogs differ")
	}
	if got, want := entriesOf(sl.Epochs()), entriesOf(m.Epochs()); !slices.Equal(got, want) || len(want) != 2 {
		t.Fatalf("slave epochs %v, master %v", got, want)
	}
	if mst.ConfirmOffset() != mst.MaxPhyOffset() || sl.ConfirmOffset() != mst.MaxPhyOffset() {
		t.Fatalf("gates: master %d, slave %d, end %d", mst.ConfirmOffset(), sl.ConfirmOffset(), mst.MaxPhyOffset())
	}
}

// On a real master with allAckInSyncStateSet and a slave in the set, a
// message is in the consume queue only once the slave acked it.
func TestRealMasterGate(t *testing.T) {
	mst := openRealStore(t, t.TempDir())
	m := node(t, mst, t.TempDir(), func(c *Config) { c.AllAckInSyncStateSet, c.LocalBrokerID = true, 1 })
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	putMessages(t, mst, 0, 10)
	r := dialRaw(t, m.Addr().String(), 3, 0)
	r.drain()
	end := mst.MaxPhyOffset()
	r.report(end)
	testutil.WaitFor(t, testWait, func() bool { s := m.Stats(); return len(s.Slaves) == 1 && s.Slaves[0].AckOffset == end }, "the ack")
	m.SetSyncStateSet([]int64{1, 3}, 2)
	putMessages(t, mst, 10, 5)
	testutil.WaitFor(t, testWait, func() bool { return queued(mst) == 10 }, "the first ten")
	time.Sleep(200 * time.Millisecond) // what the dispatcher would do without the gate, it has done
	if q := queued(mst); q != 10 || mst.ConfirmOffset() != end {
		t.Fatalf("%d queued, gate %d (end before %d)", q, mst.ConfirmOffset(), end)
	}
	r.report(mst.MaxPhyOffset())
	testutil.WaitFor(t, testWait, func() bool { return queued(mst) == 15 }, "the rest once acked")
}
