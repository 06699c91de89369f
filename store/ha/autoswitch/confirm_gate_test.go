package autoswitch

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// slaveOverPipe is a slave session over one end of a pipe whose other end
// is drained (the reports go nowhere), on a store holding 150 bytes of
// epoch 1, gated at gate.
func slaveOverPipe(t *testing.T, gate int64) (*Service, *fakeStore, *slaveSession) {
	t.Helper()
	st := newFakeStore(1 << 12)
	st.put(randBytes(150, 1))
	table, err := NewEpochTable([]EpochEntry{{Epoch: 1, StartOffset: 0}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(st, table, Config{})
	s.pushGate(gate)
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := b.Read(buf); err != nil {
				return
			}
		}
	}()
	return s, st, &slaveSession{c: newSlaveClient(s), nc: a, epoch: -1}
}

// feedSession decodes whole frames and hands them to the session, then
// to after (when not nil).
func feedSession(t *testing.T, ss *slaveSession, stream []byte, after func(*MasterFrame)) {
	t.Helper()
	var d MasterDecoder
	frames, err := d.Feed(nil, stream)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		if err := ss.onFrame(&frames[i]); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if after != nil {
			after(&frames[i])
		}
	}
}

// A transfer header's confirm offset below zero (a master that has just
// left its role reads -1 there, and a peer may send anything) is not "no
// gate" on the slave: in this store a gate below zero dispatches every byte
// written, so the slave would expose the master's unconfirmed bytes to
// consumers, and keep exposing every chunk after it. Stock's slave takes
// min(confirm, max) as its confirm offset, and a reput bounded by -1
// dispatches nothing more; here the gate goes to 0 (nothing more is
// dispatched, nothing is un-dispatched).
func TestSlaveNegativeConfirmKeepsTheGate(t *testing.T) {
	s, st, ss := slaveOverPipe(t, 100)
	hs, err := AppendMasterHandshake(nil, MasterHandshake{MaxOffset: 150, LastEpoch: 1, Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := AppendTransferHeader(hs, TransferHeader{BodySize: 10, Offset: 150, Epoch: 1, EpochStartOffset: 0, ConfirmOffset: -1})
	stream = append(stream, randBytes(10, 2)...)
	feedSession(t, ss, stream, nil)
	if st.MaxPhyOffset() != 160 {
		t.Fatalf("slave end %d, want 160", st.MaxPhyOffset())
	}
	if g := st.gateValue(); g < 0 {
		t.Fatalf("the store's gate is %d after a transfer with confirm -1: every replicated byte is dispatched", g)
	}
	if c := s.slaveConfirm.Load(); c < 0 {
		t.Fatalf("slave confirm offset %d", c)
	}
	// A later valid confirm raises it again.
	more, _ := AppendTransferHeader(nil, TransferHeader{BodySize: 0, Offset: 160, Epoch: 1, EpochStartOffset: 0, ConfirmOffset: 155})
	feedSession(t, ss, more, nil)
	if g := st.gateValue(); g != 155 {
		t.Fatalf("gate %d after confirm 155, want 155", g)
	}
}

// masterStream reads what a master sends on a connection.
type masterStream struct {
	t      *testing.T
	nc     net.Conn
	d      MasterDecoder
	frames []MasterFrame
	buf    []byte
}

func readMaster(t *testing.T, nc net.Conn) *masterStream {
	return &masterStream{t: t, nc: nc, buf: make([]byte, 8192)}
}

// next returns the next frame (its body copied), or false once the master
// closed the connection; the connection's deadline passing fails the test.
func (r *masterStream) next() (MasterFrame, bool) {
	for len(r.frames) == 0 {
		n, err := r.nc.Read(r.buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				r.t.Fatal("the master neither sent nor closed")
			}
			return MasterFrame{}, false
		}
		if r.frames, err = r.d.Feed(r.frames, r.buf[:n]); err != nil {
			r.t.Fatal(err)
		}
	}
	f := r.frames[0]
	f.Body = append([]byte(nil), f.Body...)
	r.frames = r.frames[1:]
	return f, true
}

// A master's writer that finds the service no longer master (the role is
// left under the service's lock, the connections are closed after it)
// sends nothing more: before, the chunk it was building carried the
// confirm offset of no role, -1, which a slave took for "no gate".
func TestMasterSendsNoConfirmOfNoRole(t *testing.T) {
	mst := newFakeStore(1 << 20)
	m := node(t, mst, t.TempDir(), nil)
	if err := m.ChangeToMaster(1); err != nil {
		t.Fatal(err)
	}
	mst.put(randBytes(100, 3))
	nc, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testWait))
	nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 2}))
	next := readMaster(t, nc).next
	if f, ok := next(); !ok || f.State != StateHandshake {
		t.Fatalf("handshake %+v %v", f, ok)
	}
	nc.Write(AppendSlaveReport(nil, 0))
	for got := int64(0); got < 100; {
		f, ok := next()
		if !ok {
			t.Fatal("closed before the first 100 bytes")
		}
		got += int64(f.Transfer.BodySize)
	}
	// The moment between leaving the role and closing the connections.
	m.mu.Lock()
	m.role = RoleNone
	m.mu.Unlock()
	mst.put(randBytes(50, 4))
	for {
		f, ok := next()
		if !ok {
			return
		}
		if f.State == StateTransfer && f.Transfer.ConfirmOffset < 0 {
			t.Fatalf("the master sent confirm %d (chunk %+v) after leaving its role", f.Transfer.ConfirmOffset, f.Transfer)
		}
	}
}

// FuzzSlaveConfirmGate: whatever confirm offsets and bodies a master's
// transfer headers carry, once the session took a chunk the slave's gate
// stays within [0, its end]: never "no gate", never past what it holds.
func FuzzSlaveConfirmGate(f *testing.F) {
	f.Add(int64(-1), uint8(10), int64(155))
	f.Add(int64(1<<62), uint8(0), int64(-9))
	f.Add(int64(120), uint8(3), int64(0))
	f.Fuzz(func(t *testing.T, confirm1 int64, n uint8, confirm2 int64) {
		_, st, ss := slaveOverPipe(t, 100)
		hs, _ := AppendMasterHandshake(nil, MasterHandshake{MaxOffset: 150, LastEpoch: 1, Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}}})
		stream, _ := AppendTransferHeader(hs, TransferHeader{BodySize: int32(n), Offset: 150, Epoch: 1, ConfirmOffset: confirm1})
		stream = append(stream, randBytes(int(n), int64(n))...)
		stream, _ = AppendTransferHeader(stream, TransferHeader{Offset: 150 + int64(n), Epoch: 1, ConfirmOffset: confirm2})
		feedSession(t, ss, stream, func(f *MasterFrame) {
			if f.State != StateTransfer {
				return
			}
			if g, end := st.gateValue(), st.MaxPhyOffset(); g < 0 || g > end {
				t.Fatalf("gate %d outside [0, %d] after confirm %d", g, end, f.Transfer.ConfirmOffset)
			}
		})
	})
}
