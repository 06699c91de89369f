package ha

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

const (
	testFileSize = 64 << 10 // small commitlog files: a few hundred messages cross several
	testWait     = 10 * time.Second
	testTopic    = "HaTopic"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func storeOptions(t testing.TB, dir string, host string) store.Options {
	return store.Options{
		Dir:                        dir,
		MappedFileSizeCommitLog:    testFileSize,
		MappedFileSizeConsumeQueue: 20 * 1024,
		StoreHost:                  netip.MustParseAddrPort(host),
		NoPreallocate:              true,
		Index:                      store.IndexOptions{HashSlotNum: 512, MaxIndexNum: 4096},
		Logger:                     testlog.New(t),
	}
}

func openStore(t testing.TB, dir, host string) *store.Store {
	t.Helper()
	s, err := store.Open(storeOptions(t, dir, host))
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

func testMessage(i int) *message.Message {
	body := fmt.Appendf(nil, "ha-%06d|", i)
	for len(body) < 60+(i*53)%900 {
		body = append(body, byte('a'+i%26))
	}
	return &message.Message{
		Topic: testTopic, QueueID: int32(i % 3), Body: body, Flag: int32(i),
		Properties:    map[string]string{"TAGS": "t", "KEYS": fmt.Sprintf("k%d", i), "UNIQ_KEY": fmt.Sprintf("U%08d", i)},
		BornTimestamp: 1_700_000_000_000 + int64(i),
		BornHost:      netip.MustParseAddrPort("10.1.2.3:4567"),
	}
}

func put(t testing.TB, s *store.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := s.PutMessage(testMessage(i)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}

// pair is a master store with its HA service and a slave store with its
// client, on loopback, with manual clocks.
type pair struct {
	t                  *testing.T
	mdir, sdir         string
	mst, sst           *store.Store
	master             *Master
	client             *Client
	mclk, sclk         *clock.Manual
	haAddr             string
	clientCfg          ClientConfig
	masterCfgOverrides func(*MasterConfig)
}

func newPair(t *testing.T) *pair {
	p := &pair{t: t, mdir: t.TempDir(), sdir: t.TempDir(), mclk: clock.NewManual(epoch), sclk: clock.NewManual(epoch)}
	p.haAddr = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	p.mst = openStore(t, p.mdir, "127.0.0.1:10911")
	p.startMaster()
	p.sst = openStore(t, p.sdir, "127.0.0.1:10921")
	p.startClient()
	t.Cleanup(p.close)
	p.requested()
	return p
}

// requested waits until the master holds the slave's first report, which
// fixes where its stream starts. An empty slave reports 0 and gets the
// master's newest file from that moment: a test that puts before this
// could roll the master into its next file first, and the slave would
// rightly start there, without the history the test compares.
func (p *pair) requested() {
	p.t.Helper()
	testutil.WaitFor(p.t, testWait, func() bool {
		for _, s := range p.master.Stats().Slaves {
			if s.AckOffset >= 0 {
				return true
			}
		}
		return false
	}, "the master to receive the slave's request offset")
}

func (p *pair) startMaster() {
	cfg := MasterConfig{ListenAddr: p.haAddr, Clock: p.mclk, Logger: testlog.New(p.t), TransferBatchSize: 5000}
	if p.masterCfgOverrides != nil {
		p.masterCfgOverrides(&cfg)
	}
	p.master = NewMaster(p.mst, cfg)
	if err := p.master.Start(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pair) startClient() {
	cfg := p.clientCfg
	cfg.Clock, cfg.Logger = p.sclk, testlog.New(p.t)
	p.client = NewClient(p.sst, cfg)
	p.client.Start()
	p.client.SetMasterAddr(p.haAddr)
}

func (p *pair) close() {
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
	if p.master != nil {
		p.master.Close()
		p.master = nil
	}
	for _, s := range []*store.Store{p.sst, p.mst} {
		if s != nil {
			s.Close()
		}
	}
	p.sst, p.mst = nil, nil
}

// caughtUp waits until the slave holds the master's whole commitlog,
// dispatched, advancing the slave's clock so that a pending reconnection
// goes.
func (p *pair) caughtUp() {
	p.t.Helper()
	want := p.mst.MaxPhyOffset()
	testutil.WaitFor(p.t, testWait, func() bool {
		if p.sst.MaxPhyOffset() == want && p.master.Push2SlaveMaxOffset() >= want {
			return true
		}
		p.sclk.Advance(time.Second)
		return false
	}, fmt.Sprintf("the slave to reach %d (has %d)", want, p.sst.MaxPhyOffset()))
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	// Both sides: the master's queues are built by its own dispatcher,
	// which a loaded machine can leave behind the replication.
	for _, s := range []*store.Store{p.mst, p.sst} {
		if err := s.WaitDispatched(ctx, want); err != nil {
			p.t.Fatal(err)
		}
	}
}

// sameCommitLog compares the two commitlogs byte for byte from from.
func sameCommitLog(t *testing.T, m, s *store.Store, from int64) {
	t.Helper()
	if m.MaxPhyOffset() != s.MaxPhyOffset() {
		t.Fatalf("commitlog ends: master %d, slave %d", m.MaxPhyOffset(), s.MaxPhyOffset())
	}
	a, b := make([]byte, 1<<16), make([]byte, 1<<16)
	for off := from; off < m.MaxPhyOffset(); {
		n, err := m.ReadCommitLog(off, a)
		if err != nil {
			t.Fatal(err)
		}
		k, err := s.ReadCommitLog(off, b)
		if err != nil {
			t.Fatalf("slave at %d: %v", off, err)
		}
		if n != k || !bytes.Equal(a[:n], b[:k]) {
			t.Fatalf("commitlog differs at %d (%d/%d bytes)", off, n, k)
		}
		off += int64(n)
	}
}

// sameQueues compares every queue of testTopic: offsets, msgIds, store
// timestamps, bodies.
func sameQueues(t *testing.T, m, s *store.Store, wantMsgs int) {
	t.Helper()
	total := 0
	for q := int32(0); q < 3; q++ {
		if a, b := m.MaxOffsetInQueue(testTopic, q), s.MaxOffsetInQueue(testTopic, q); a != b {
			t.Fatalf("queue %d max offset: master %d, slave %d", q, a, b)
		}
		for off := m.MinOffsetInQueue(testTopic, q); off < m.MaxOffsetInQueue(testTopic, q); off++ {
			ra := m.GetMessage(testTopic, q, off, 1, 1<<20, nil)
			rb := s.GetMessage(testTopic, q, off, 1, 1<<20, nil)
			if ra.Status != store.Found || rb.Status != store.Found {
				t.Fatalf("queue %d offset %d: master %v, slave %v", q, off, ra.Status, rb.Status)
			}
			ma, _ := message.DecodeRecord(ra.Messages[0])
			mb, err := message.DecodeRecord(rb.Messages[0])
			if err != nil {
				t.Fatal(err)
			}
			if ma.MsgID != mb.MsgID || ma.StoreTimestamp != mb.StoreTimestamp || ma.QueueOffset != mb.QueueOffset ||
				ma.PhysicalOffset != mb.PhysicalOffset || !bytes.Equal(ma.Body, mb.Body) {
				t.Fatalf("queue %d offset %d: master %+v, slave %+v", q, off, ma, mb)
			}
			total++
		}
	}
	if wantMsgs >= 0 && total != wantMsgs {
		t.Fatalf("%d messages in the queues, want %d", total, wantMsgs)
	}
}

func TestReplicateFromStartBytesAndQueuesIdentical(t *testing.T) {
	p := newPair(t)
	testutil.WaitFor(t, testWait, func() bool { return p.master.Connections() == 1 }, "the slave to connect")
	put(t, p.mst, 0, 400) // ~200 KiB: several 64 KiB files, BLANK fillers between
	p.caughtUp()
	sameCommitLog(t, p.mst, p.sst, 0)
	sameQueues(t, p.mst, p.sst, 400)
	st := p.master.Stats()
	if st.Connections != 1 || len(st.Slaves) != 1 || st.Slaves[0].AckOffset != p.mst.MaxPhyOffset() ||
		st.Push2SlaveMaxOffset != p.mst.MaxPhyOffset() || st.MasterMaxOffset != p.mst.MaxPhyOffset() {
		t.Fatalf("master stats %+v, max %d", st, p.mst.MaxPhyOffset())
	}
	if cs := p.client.Stats(); !cs.Connected || cs.ReportedOffset != p.mst.MaxPhyOffset() || cs.MasterAddr != p.haAddr {
		t.Fatalf("client stats %+v", cs)
	}
	// The slave's index was built from the replicated records too.
	r, err := p.sst.QueryMessage(testTopic, "k7", 10, 0, epoch.Add(100*365*24*time.Hour).UnixMilli())
	if err != nil || len(r.Messages) != 1 {
		t.Fatalf("slave index: %v hits for key k7: %v", r, err)
	}
}

func newClock() *clock.Manual { return clock.NewManual(epoch) }

func freeAddr(t testing.TB) string { return fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)) }
