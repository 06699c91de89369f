package autoswitch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

const testWait = 10 * time.Second

func randBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// node is one broker's HA side over st, with its epoch file in dir.
func node(t *testing.T, st Store, dir string, edit func(*Config)) *Service {
	t.Helper()
	ef, err := OpenEpochFile(nil, filepath.Join(dir, "epochFileCheckpoint"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ListenAddr: "127.0.0.1:0", ReconnectDelay: 20 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, TransferBatchSize: 1000}
	if edit != nil {
		edit(&cfg)
	}
	s := NewService(st, ef, cfg)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// sameBytes waits until the slave holds the master's commitlog.
func sameBytes(t *testing.T, master, slave *fakeStore) {
	t.Helper()
	testutil.WaitFor(t, testWait, func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() }, "the slave to catch up")
	mb, md := master.bytes()
	sb, sd := slave.bytes()
	if mb != sb || !bytes.Equal(md, sd) {
		t.Fatalf("slave holds [%d, +%d), master [%d, +%d); equal=%v", sb, len(sd), mb, len(md), bytes.Equal(md, sd))
	}
}

func entriesOf(f *EpochFile) []EpochEntry {
	es := f.Entries()
	for i := range es {
		es[i].EndOffset = 0
	}
	return es
}

// An rmq master and an rmq slave replicate byte for byte across a file
// roll and an epoch change, and the slave's epoch file ends as the
// master's; its gate follows the confirm offset.
func TestReplicateAcrossEpochAndFileRoll(t *testing.T) {
	mst, sst := newFakeStore(4096), newFakeStore(4096)
	m := node(t, mst, t.TempDir(), nil)
	sl := node(t, sst, t.TempDir(), nil)
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(3000, 1))
	if err := sl.ChangeToSlave(m.Addr().String(), 1, 2); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, mst, sst)
	if err := m.ChangeToMaster(2); err != nil { // drops the slave; it reconnects
		t.Fatal(err)
	}
	mst.put(randBytes(3000, 2)) // rolls into the second file at 4096
	sameBytes(t, mst, sst)
	want := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3000}}
	testutil.WaitFor(t, testWait, func() bool { return slices.Equal(entriesOf(sl.Epochs()), want) }, "the slave's epochs")
	if got := entriesOf(m.Epochs()); !slices.Equal(got, want) {
		t.Fatalf("master epochs %v", got)
	}
	// The file on disk holds them too.
	re, err := OpenEpochFile(nil, sl.Epochs().Path())
	if err != nil || !slices.Equal(entriesOf(re), want) {
		t.Fatalf("slave epoch file %v %v", entriesOf(re), err)
	}
	// Without allAckInSyncStateSet the master's confirm offset is its end,
	// with no gate; the slave's gate is what it was sent, at most its end.
	if m.ConfirmOffset() != 6000 || mst.gateValue() != -1 {
		t.Fatalf("master confirm %d gate %d", m.ConfirmOffset(), mst.gateValue())
	}
	testutil.WaitFor(t, testWait, func() bool { return sst.gateValue() == 6000 && sl.ConfirmOffset() == 6000 }, "the slave's gate")
	testutil.WaitFor(t, testWait, func() bool {
		st := m.Stats()
		return st.Role == RoleMaster && len(st.Slaves) == 1 && st.Slaves[0].BrokerID == 2 && st.Slaves[0].AckOffset == 6000
	}, "the master's stats to show the slave's ack")
	testutil.WaitFor(t, testWait, func() bool {
		ss := sl.Stats()
		return ss.Role == RoleSlave && ss.Connected && ss.ReportedOffset == 6000 && ss.SlaveSessions >= 2
	}, "the slave's stats")
}

// A slave whose tail was written under an epoch the new master does not
// have truncates to the consistent point, then takes the master's bytes.
func TestSlaveDivergentTailTruncates(t *testing.T) {
	common := randBytes(3000, 3)
	mst, sst := newFakeStore(1<<20), newFakeStore(1<<20)
	mdir, sdir := t.TempDir(), t.TempDir()
	// The master: epoch 1 wrote [0, 3000), it is now master of epoch 3.
	mst.put(common)
	mef, _ := OpenEpochFile(nil, filepath.Join(mdir, "epochFileCheckpoint"))
	if err := mef.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	// The slave: it was master of epoch 2 and wrote 1000 bytes nobody
	// else has.
	sst.put(common)
	sst.put(randBytes(1000, 4))
	sef, _ := OpenEpochFile(nil, filepath.Join(sdir, "epochFileCheckpoint"))
	if err := errors.Join(sef.Append(1, 0), sef.Append(2, 3000)); err != nil {
		t.Fatal(err)
	}
	m := node(t, mst, mdir, nil)
	if err := m.ChangeToMaster(3); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(500, 5))
	sl := node(t, sst, sdir, nil)
	if err := sl.ChangeToSlave(m.Addr().String(), 3, 2); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, mst, sst)
	want := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 3000}}
	testutil.WaitFor(t, testWait, func() bool { return slices.Equal(entriesOf(sl.Epochs()), want) }, "the slave's epochs")
	sst.mu.Lock()
	truncs := slices.Clone(sst.truncs)
	sst.mu.Unlock()
	if !slices.Equal(truncs, []int64{3000}) {
		t.Fatalf("truncations %v", truncs)
	}
}

// A slave that restarts (a new service over its store and epoch file)
// continues from its end, and a role change below the last epoch is
// refused.
func TestSlaveRestart(t *testing.T) {
	mst, sst := newFakeStore(4096), newFakeStore(4096)
	sdir := t.TempDir()
	m := node(t, mst, t.TempDir(), nil)
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(2000, 6))
	sl := node(t, sst, sdir, nil)
	if err := sl.ChangeToSlave(m.Addr().String(), 1, 2); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, mst, sst)
	sl.Close()
	mst.put(randBytes(5000, 7))
	sl2 := node(t, sst, sdir, nil)
	if err := sl2.ChangeToSlave("", 0, 2); !errors.Is(err, ErrEpochFenced) {
		t.Fatalf("ChangeToSlave below the last epoch: %v", err)
	}
	if err := sl2.ChangeToMaster(0); !errors.Is(err, ErrEpochFenced) {
		t.Fatalf("ChangeToMaster below the last epoch: %v", err)
	}
	if err := sl2.ChangeToSlave("", 1, 2); err != nil {
		t.Fatal(err)
	}
	sl2.SetMasterHAAddr(m.Addr().String())
	sameBytes(t, mst, sst)
	sst.mu.Lock()
	defer sst.mu.Unlock()
	if len(sst.truncs) != 0 {
		t.Fatalf("a restart truncated: %v", sst.truncs)
	}
}

// rawSlave is a slave driven by the test: it handshakes and reports what
// it is told, and reads nothing unless asked.
type rawSlave struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string, id int64, readBuf int) *rawSlave {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if readBuf > 0 {
		nc.(*net.TCPConn).SetReadBuffer(readBuf)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: id})); err != nil {
		t.Fatal(err)
	}
	return &rawSlave{t: t, nc: nc}
}

func (r *rawSlave) report(off int64) {
	if _, err := r.nc.Write(AppendSlaveReport(nil, off)); err != nil {
		r.t.Fatal(err)
	}
}

// drain reads and throws away what the master sends, until the
// connection closes.
func (r *rawSlave) drain() {
	go func() {
		b := make([]byte, 64<<10)
		for {
			if _, err := r.nc.Read(b); err != nil {
				return
			}
		}
	}()
}

type proposals struct {
	mu  sync.Mutex
	got [][]int64
}

func (p *proposals) add(set []int64) {
	p.mu.Lock()
	p.got = append(p.got, set)
	p.mu.Unlock()
}

func (p *proposals) wait(t *testing.T, want []int64) {
	t.Helper()
	testutil.WaitFor(t, testWait, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.got) > 0 && slices.Equal(p.got[len(p.got)-1], want)
	}, "the proposal")
}

func (p *proposals) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func manualClock() *clock.Manual { return clock.NewManual(time.Unix(1_700_000_000, 0)) }

// With allAckInSyncStateSet: a slave is proposed into the set once its
// ack reaches the confirm offset; with the set {master, slave} the confirm
// offset is the slave's ack and gates the store; SYNC waiters are
// released by the ack, or fail at SlaveTimeout by the clock; a lagging
// member, a member never seen and a disconnected one are proposed out.
func TestSyncStateSetAndWaiters(t *testing.T) {
	clk := manualClock()
	var props proposals
	mst := newFakeStore(64 << 20)
	m := node(t, mst, t.TempDir(), func(c *Config) {
		c.Clock, c.AllAckInSyncStateSet, c.LocalBrokerID = clk, true, 1
		c.OnSyncStateSetChange = props.add
		c.HousekeepingInterval = time.Hour
		c.TransferBatchSize = 32 << 10
	})
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	m.SetSyncStateSet([]int64{1}, 1)
	mst.put(randBytes(1000, 8))
	// The master alone: a SYNC send is released at once.
	var alone atomic.Int32
	m.WaitReplicated(1000, func(ok bool) { alone.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	if alone.Load() != 1 {
		t.Fatal("a master alone in its set held a SYNC send")
	}
	// A small receive buffer lets the test stall the master's writer later.
	r := dialRaw(t, m.Addr().String(), 2, 4096)
	r.report(500) // behind the confirm offset (the end, 1000): not proposed
	testutil.WaitFor(t, testWait, func() bool { s := m.Stats(); return len(s.Slaves) == 1 && s.Slaves[0].AckOffset == 500 }, "the ack")
	if props.count() != 0 {
		t.Fatalf("proposed %v for a slave behind", props.got)
	}
	r.report(1000)
	props.wait(t, []int64{1, 2})
	if mst.gateValue() != -1 {
		t.Fatal("the proposal alone gated the store")
	}
	m.SetSyncStateSet([]int64{1, 2}, 2)
	if got, e := m.SyncStateSet(); !slices.Equal(got, []int64{1, 2}) || e != 2 {
		t.Fatalf("set %v epoch %d", got, e)
	}
	if m.ConfirmOffset() != 1000 || mst.gateValue() != 1000 {
		t.Fatalf("confirm %d gate %d", m.ConfirmOffset(), mst.gateValue())
	}
	mst.put(randBytes(200, 9))
	var w1, w2 atomic.Int32
	m.WaitReplicated(1200, func(ok bool) { w1.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	if w1.Load() != 0 || m.ConfirmOffset() != 1000 {
		t.Fatalf("released before the ack (confirm %d)", m.ConfirmOffset())
	}
	r.report(1200)
	testutil.WaitFor(t, testWait, func() bool { return w1.Load() == 1 }, "the release")
	if m.ConfirmOffset() != 1200 || mst.gateValue() != 1200 {
		t.Fatalf("confirm %d gate %d", m.ConfirmOffset(), mst.gateValue())
	}
	// Expiry by the clock.
	mst.put(randBytes(100, 10))
	m.WaitReplicated(1300, func(ok bool) { w2.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	clk.Advance(2 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if w2.Load() != 0 {
		t.Fatal("expired before SlaveTimeout")
	}
	clk.Advance(time.Second + time.Millisecond)
	testutil.WaitFor(t, testWait, func() bool { return w2.Load() == 2 }, "the expiry")

	// A member never seen is proposed out.
	m.SetSyncStateSet([]int64{1, 2, 3}, 3)
	m.CheckSyncStateSet()
	props.wait(t, []int64{1, 2})
	m.SetSyncStateSet([]int64{1, 2}, 4)

	// Lag: the slave caught up at the start (its ack was the end); 16 MiB
	// more than its socket takes stall the writer, and past
	// haMaxTimeSlaveNotCatchup the check proposes it out.
	mst.put(randBytes(16<<20, 11))
	testutil.WaitFor(t, testWait, func() bool {
		s := m.Stats()
		return len(s.Slaves) == 1 && s.Slaves[0].TransferFrom > 1300
	}, "the writer to start")
	n := props.count()
	m.CheckSyncStateSet()
	if props.count() != n {
		t.Fatalf("proposed %v before the lag", props.got[n:])
	}
	clk.Advance(16 * time.Second)
	m.CheckSyncStateSet()
	props.wait(t, []int64{1})

	// A disconnected member is proposed out.
	m.SetSyncStateSet([]int64{1, 2}, 5)
	r.nc.Close()
	props.wait(t, []int64{1})
	// An older set is ignored.
	m.SetSyncStateSet([]int64{1, 2, 3}, 4)
	if got, _ := m.SyncStateSet(); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("an older set replaced the set: %v", got)
	}
	// A role change fails what waits.
	var w3 atomic.Int32
	m.WaitReplicated(1<<40, func(ok bool) { w3.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	if err := m.ChangeToSlave("", 1, 1); err != nil {
		t.Fatal(err)
	}
	if w3.Load() != 2 {
		t.Fatal("a role change left a waiter")
	}
}

// Without allAckInSyncStateSet a SYNC send waits for inSyncReplicas-1
// slaves' acks (none: released at once for 1, the default), and
// IsSlaveOK never refuses on a master (5.3.3 has no SLAVE_NOT_AVAILABLE).
func TestWaitReplicatedInSyncReplicas(t *testing.T) {
	clk := manualClock()
	mst := newFakeStore(1 << 20)
	one := node(t, newFakeStore(1<<20), t.TempDir(), func(c *Config) { c.Clock = clk })
	if one.IsSlaveOK(0) {
		t.Fatal("IsSlaveOK before a role")
	}
	if err := one.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	var w0 atomic.Int32
	one.WaitReplicated(1000, func(ok bool) { w0.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	if w0.Load() != 1 || !one.IsSlaveOK(1000) {
		t.Fatalf("inSyncReplicas 1: released %d, IsSlaveOK %v", w0.Load(), one.IsSlaveOK(1000))
	}

	m := node(t, mst, t.TempDir(), func(c *Config) {
		c.Clock, c.LocalBrokerID, c.InSyncReplicas = clk, 1, 3
		c.HousekeepingInterval = time.Hour
	})
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(3000, 12))
	var w atomic.Int32
	m.WaitReplicated(3000, func(ok bool) { w.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	r1 := dialRaw(t, m.Addr().String(), 5, 0)
	r1.drain()
	r1.report(3000)
	testutil.WaitFor(t, testWait, func() bool { s := m.Stats(); return len(s.Slaves) == 1 && s.Slaves[0].AckOffset == 3000 }, "the first ack")
	time.Sleep(20 * time.Millisecond)
	if w.Load() != 0 {
		t.Fatal("released by one ack of the two inSyncReplicas=3 needs")
	}
	r2 := dialRaw(t, m.Addr().String(), 6, 0)
	r2.drain()
	r2.report(2999)
	testutil.WaitFor(t, testWait, func() bool { s := m.Stats(); return len(s.Slaves) == 2 }, "the second slave")
	r2.report(3000)
	testutil.WaitFor(t, testWait, func() bool { return w.Load() == 1 }, "the release")
	if m.ConfirmOffset() != 3000 || mst.gateValue() != -1 {
		t.Fatalf("confirm %d gate %d", m.ConfirmOffset(), mst.gateValue())
	}
}

// The master's stream to a raw slave: the handshake carries the epoch
// table, a report of 0 starts at the min offset (or the last file with
// syncFromLastFile), and chunks never cross an epoch boundary.
func TestMasterStreamFrames(t *testing.T) {
	for _, fromLast := range []bool{false, true} {
		mst := newFakeStore(4096)
		m := node(t, mst, t.TempDir(), nil)
		if err := m.ChangeToMaster(1); err != nil {
			t.Fatal(err)
		}
		mst.put(randBytes(5000, 13))
		if err := m.ChangeToMaster(2); err != nil {
			t.Fatal(err)
		}
		mst.put(randBytes(1000, 14))
		nc, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(testWait))
		nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: fromLast, BrokerID: 9}))
		stream := readMaster(t, nc)
		next := func() MasterFrame {
			f, ok := stream.next()
			if !ok {
				t.Fatal("the master closed the connection")
			}
			return f
		}
		hs := next()
		if hs.State != StateHandshake || hs.Handshake.MaxOffset != 6000 || hs.Handshake.LastEpoch != 2 ||
			!slices.Equal(hs.Handshake.Entries, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 5000}}) {
			t.Fatalf("handshake %+v", hs)
		}
		nc.Write(AppendSlaveReport(nil, 0))
		at := int64(0)
		if fromLast {
			at = 4096
		}
		var got []byte
		for at+int64(len(got)) < 6000 {
			f := next()
			h := f.Transfer
			if f.State != StateTransfer || h.Offset != at+int64(len(got)) {
				t.Fatalf("frame %+v at %d", h, at+int64(len(got)))
			}
			if h.Offset < 5000 && h.Offset+int64(h.BodySize) > 5000 {
				t.Fatalf("chunk %+v crosses the epoch start 5000", h)
			}
			if (h.Offset+int64(h.BodySize))/4096 != h.Offset/4096 && (h.Offset+int64(h.BodySize))%4096 != 0 {
				t.Fatalf("chunk %+v crosses a file", h)
			}
			if h.ConfirmOffset != 6000 {
				t.Fatalf("confirm %d", h.ConfirmOffset)
			}
			got = append(got, f.Body...)
		}
		_, all := mst.bytes()
		if !bytes.Equal(got, all[at:]) {
			t.Fatal("streamed bytes differ")
		}
		nc.Close()
	}
}

// A broken frame from a slave, a report before the handshake, or a
// handshake while not master, closes the connection.
func TestMasterRefusesBadSlaves(t *testing.T) {
	mst := newFakeStore(4096)
	m := node(t, mst, t.TempDir(), nil)
	closed := func(send []byte) {
		t.Helper()
		nc, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(send)
		nc.SetReadDeadline(time.Now().Add(testWait))
		b := make([]byte, 256)
		for {
			if _, err := nc.Read(b); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("not closed")
				}
				return
			}
		}
	}
	closed(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 2})) // not master
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	closed(AppendSlaveReport(nil, 0))
	bad := binary.BigEndian.AppendUint32(nil, uint32(StateSuspend))
	closed(append(bad, make([]byte, 12)...))
}

// FuzzSlaveSession feeds a master→slave stream to the slave's frame
// handling over a store holding a tail of its own: whatever the bytes, it
// never panics, appends only at its end, keeps its epoch table ordered and
// its confirm offset within its end, and stops at the first refusal.
func FuzzSlaveSession(f *testing.F) {
	hs, _ := AppendMasterHandshake(nil, MasterHandshake{MaxOffset: 300, LastEpoch: 2,
		Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}}})
	ok := hs
	ok, _ = AppendTransferHeader(ok, TransferHeader{BodySize: 4, Offset: 100, Epoch: 2, EpochStartOffset: 100, ConfirmOffset: 102})
	ok = append(ok, "abcd"...)
	ok, _ = AppendTransferHeader(ok, TransferHeader{Offset: 104, Epoch: 2, EpochStartOffset: 100, ConfirmOffset: 104})
	f.Add(ok, uint8(7))
	f.Add(hs, uint8(1))
	f.Add(ok[MasterHandshakeHeaderSize+24:], uint8(3)) // transfer before the handshake
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		st := newFakeStore(1 << 12)
		st.put(randBytes(150, 1)) // 100 bytes of epoch 1, 50 of an epoch 3 the master lacks
		table, _ := NewEpochTable([]EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 100}})
		s := NewService(st, table, Config{})
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			buf := make([]byte, 512)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		defer b.Close()
		ss := &slaveSession{c: newSlaveClient(s), nc: a, epoch: -1}
		var d MasterDecoder
		var frames []MasterFrame
		step := int(chunk%64) + 1
		for pos := 0; pos < len(data); pos += step {
			var err error
			frames, err = d.Feed(frames[:0], data[pos:min(pos+step, len(data))])
			for i := range frames {
				before := st.MaxPhyOffset()
				if ferr := ss.onFrame(&frames[i]); ferr != nil {
					return
				}
				if frames[i].State == StateTransfer && st.MaxPhyOffset() != before+int64(len(frames[i].Body)) {
					t.Fatalf("appended %d bytes at %d, end %d", len(frames[i].Body), before, st.MaxPhyOffset())
				}
				if c := s.slaveConfirm.Load(); c > st.MaxPhyOffset() {
					t.Fatalf("confirm %d above the end %d", c, st.MaxPhyOffset())
				}
				if _, err := NewEpochTable(table.Entries()); err != nil {
					t.Fatal(err)
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// A new slave whose first chunk closes an epoch (the master names the next
// epoch in it) still records that epoch, from the master's handshake
// table: its table ends as the master's.
func TestNewSlaveGetsEveryEpoch(t *testing.T) {
	mst, sst := newFakeStore(1<<20), newFakeStore(1<<20)
	m := node(t, mst, t.TempDir(), func(c *Config) { c.TransferBatchSize = 32 << 10 })
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(3000, 15))
	if err := m.ChangeToMaster(2); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(1000, 16))
	sl := node(t, sst, t.TempDir(), nil)
	if err := sl.ChangeToSlave(m.Addr().String(), 2, 2); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, mst, sst)
	want := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3000}}
	testutil.WaitFor(t, testWait, func() bool { return slices.Equal(entriesOf(sl.Epochs()), want) }, "the slave's epochs")
}

// A slave asking for an offset the master's commitlog no longer holds
// (cleaned files) never gets past it: the writer must not count it as
// caught up, and the check proposes it out of the sync state set.
func TestSlaveBelowMinOffsetIsNotCaughtUp(t *testing.T) {
	clk := manualClock()
	var props proposals
	mst := newFakeStore(4096)
	mst.base = 4096 // the first file was deleted
	mst.put(randBytes(1000, 17))
	dir := t.TempDir()
	ef, _ := OpenEpochFile(nil, filepath.Join(dir, "epochFileCheckpoint"))
	if err := ef.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	m := node(t, mst, dir, func(c *Config) {
		c.Clock, c.LocalBrokerID, c.OnSyncStateSetChange = clk, 1, props.add
		c.HousekeepingInterval = time.Hour
		c.CheckSyncStateSetInterval = time.Hour // only the test's own check
	})
	if err := m.ChangeToMaster(2); err != nil {
		t.Fatal(err)
	}
	m.SetSyncStateSet([]int64{1, 2}, 1)
	r := dialRaw(t, m.Addr().String(), 2, 0)
	r.drain()
	r.report(100)
	testutil.WaitFor(t, testWait, func() bool { s := m.Stats(); return len(s.Slaves) == 1 && s.Slaves[0].TransferFrom == 100 }, "the transfer start")
	clk.Advance(16 * time.Second)
	time.Sleep(300 * time.Millisecond) // the writer loops every 100 ms
	m.CheckSyncStateSet()
	props.wait(t, []int64{1})
}

// An old master killed before any message rejoins the new master: broker
// 1 is master of epoch 1 with slave 2, nothing is sent, 1 dies, 2 is
// elected (epoch 2, whose ChangeToMaster drops the empty epoch 1), 1
// restarts over its store and epoch file ([{1,0}], end 0) and follows 2.
// It must handshake, be proposed into the sync state set and replicate
// what 2 writes (before the fix: "no consistent point" forever).
func TestOldMasterOfEmptyTermRejoins(t *testing.T) {
	ast, bst := newFakeStore(1<<20), newFakeStore(1<<20)
	adir := t.TempDir()
	a := node(t, ast, adir, nil)
	if err := a.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	var props proposals
	b := node(t, bst, t.TempDir(), func(c *Config) {
		c.AllAckInSyncStateSet, c.LocalBrokerID = true, 2
		c.OnSyncStateSetChange = props.add
	})
	if err := b.ChangeToSlave(a.Addr().String(), 1, 2); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, testWait, func() bool { s := a.Stats(); return len(s.Slaves) == 1 }, "the slave to connect")
	a.Close() // killed before any message

	if err := b.ChangeToMaster(2); err != nil {
		t.Fatal(err)
	}
	b.SetSyncStateSet([]int64{2}, 2)
	a2 := node(t, ast, adir, nil)
	if got := entriesOf(a2.Epochs()); !slices.Equal(got, []EpochEntry{{Epoch: 1, StartOffset: 0}}) {
		t.Fatalf("the old master's epochs %v", got)
	}
	if err := a2.ChangeToSlave(b.Addr().String(), 2, 1); err != nil {
		t.Fatal(err)
	}
	props.wait(t, []int64{1, 2})
	bst.put(randBytes(2000, 21))
	sameBytes(t, bst, ast)
	want := []EpochEntry{{Epoch: 2, StartOffset: 0}}
	testutil.WaitFor(t, testWait, func() bool { return slices.Equal(entriesOf(a2.Epochs()), want) }, "the old master's epochs")
}

// haStatus on a controller-mode slave (AutoSwitchHAService.getRuntimeInfo,
// :379-392): the HA client's last read and write times on the injected
// clock (the read 0 once the session ended, as closeMaster leaves it),
// the bytes read from the master in the last whole second, and on the
// master each connection's bytes written in the last whole second.
func TestSlaveRuntimeInfo(t *testing.T) {
	clk := manualClock()
	withClock := func(c *Config) { c.Clock = clk }
	mst, sst := newFakeStore(1<<20), newFakeStore(1<<20)
	m := node(t, mst, t.TempDir(), withClock)
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(3000, 51))
	s := node(t, sst, t.TempDir(), func(c *Config) { c.Clock, c.LocalBrokerID = clk, 2 })
	clk.Advance(time.Second) // the session, its reads and writes happen in this second
	at := clk.Now().UnixMilli()
	if err := s.ChangeToSlave(m.Addr().String(), 1, 2); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, mst, sst)
	testutil.WaitFor(t, testWait, func() bool { return s.Stats().LastWriteTimestamp == at }, "the report of the end")
	st := s.Stats()
	if st.LastReadTimestamp != at || st.TransferredByteInSecond != 0 {
		t.Fatalf("slave read at %d (want %d), %d B/s in the second before (want 0)", st.LastReadTimestamp, at, st.TransferredByteInSecond)
	}

	clk.Advance(time.Second)
	// The previous second's bytes: the handshake table and every chunk
	// with its header (a heartbeat read now counts in the new second).
	if got := s.Stats().TransferredByteInSecond; got < 3000+MasterHandshakeHeaderSize+TransferHeaderSize {
		t.Errorf("slave read %d B in the last second, want the 3000 B and headers", got)
	}
	if sl := m.Stats().Slaves; len(sl) != 1 || sl[0].TransferredByteInSecond < 3000+TransferHeaderSize {
		t.Errorf("master's connection stats %+v, want the 3000 B and headers written", sl)
	}
	if st := s.Stats(); st.LastReadTimestamp < at || st.LastWriteTimestamp < at {
		t.Errorf("times went back: %+v", st)
	}

	m.Close()
	testutil.WaitFor(t, testWait, func() bool { st := s.Stats(); return !st.Connected && st.LastReadTimestamp == 0 }, "the session to end")
	if st := s.Stats(); st.LastWriteTimestamp < at {
		t.Errorf("last write %d after the session, want at least %d", st.LastWriteTimestamp, at)
	}
}
