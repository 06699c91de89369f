package autoswitch

import (
	"bytes"
	"errors"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"
)

// stockEpochs is 5.3.3 EpochFileCache as a Java slave holds it: a TreeMap
// by epoch whose initEntries (:83-92) checks no order and ends each entry
// at the next one's start, so a table with equal starts loads as sent.
type stockEpochs []EpochEntry

func stockInit(es []EpochEntry) stockEpochs {
	t := slices.Clone(es)
	sort.SliceStable(t, func(i, j int) bool { return t[i].Epoch < t[j].Epoch })
	for i := range t {
		t[i].EndOffset = math.MaxInt64
		if i+1 < len(t) {
			t[i].EndOffset = t[i+1].StartOffset
		}
	}
	return t
}

// setLastEnd is setLastEpochEntryEndOffset (:123-135).
func (t stockEpochs) setLastEnd(end int64) {
	if n := len(t); n > 0 && t[n-1].StartOffset <= end {
		t[n-1].EndOffset = end
	}
}

// consistentPoint is findConsistentPoint (:227-245).
func (t stockEpochs) consistentPoint(m stockEpochs) int64 {
	for i := len(t) - 1; i >= 0; i-- {
		for _, e := range m {
			if e.Epoch == t[i].Epoch && e.StartOffset == t[i].StartOffset {
				return min(t[i].EndOffset, e.EndOffset)
			}
		}
	}
	return -1
}

// appendEntry (:101-118) refuses an epoch or start not above the last.
func (t *stockEpochs) appendEntry(epoch int32, start int64) bool {
	if n := len(*t); n > 0 {
		if l := (*t)[n-1]; l.Epoch >= epoch || l.StartOffset >= start {
			return false
		}
		(*t)[n-1].EndOffset = start
	}
	*t = append(*t, EpochEntry{Epoch: epoch, StartOffset: start, EndOffset: math.MaxInt64})
	return true
}

func (t *stockEpochs) truncateSuffixByOffset(off int64) {
	*t = slices.DeleteFunc(*t, func(e EpochEntry) bool { return e.StartOffset >= off })
}

// stockSlave is a Java 5.3.3 AutoSwitchHAClient over an in-memory
// commitlog: doTruncate on the master's handshake (:435-476), then the
// TRANSFER handling of processReadResult (:537-573).
type stockSlave struct {
	t      *testing.T
	epochs stockEpochs
	log    []byte // the commitlog from offset 0
}

var errStockNoPoint = errors.New("stock slave: no consistent point")

// session runs one connection to addr until the slave's log reaches
// until, and returns the master's handshake.
func (s *stockSlave) session(addr string, until int64) (MasterHandshake, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return MasterHandshake{}, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testWait))
	if _, err := nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 7})); err != nil {
		return MasterHandshake{}, err
	}
	var d MasterDecoder
	var frames []MasterFrame
	buf := make([]byte, 8192)
	var hs MasterHandshake
	received := int32(-1) // currentReceivedEpoch
	for {
		n, err := nc.Read(buf)
		if err != nil {
			return hs, err
		}
		if frames, err = d.Feed(frames[:0], buf[:n]); err != nil {
			return hs, err
		}
		for _, f := range frames {
			if f.State == StateHandshake {
				hs = f.Handshake
				hs.Entries = slices.Clone(hs.Entries)
				reported := int64(0)
				if len(s.epochs) > 0 {
					m := stockInit(hs.Entries)
					m.setLastEnd(hs.MaxOffset)
					l := stockInit(s.epochs)
					l.setLastEnd(int64(len(s.log)))
					point := l.consistentPoint(m)
					if point < 0 {
						return hs, errStockNoPoint
					}
					if point < int64(len(s.log)) {
						s.log = s.log[:point]
					}
					s.epochs.truncateSuffixByOffset(point)
					reported = point
				}
				// The heartbeat's report, sent at once here.
				if _, err := nc.Write(AppendSlaveReport(nil, max(reported, int64(len(s.log))))); err != nil {
					return hs, err
				}
				continue
			}
			h := f.Transfer
			if end := int64(len(s.log)); end != 0 && end != h.Offset {
				return hs, errOffsetMismatch
			}
			if h.Epoch != received {
				received = h.Epoch
				s.epochs.appendEntry(h.Epoch, h.EpochStartOffset) // false is ignored, as stock
			}
			s.log = append(s.log, f.Body...)
			if len(f.Body) > 0 {
				if _, err := nc.Write(AppendSlaveReport(nil, int64(len(s.log)))); err != nil {
					return hs, err
				}
			}
			if int64(len(s.log)) >= until {
				return hs, nil
			}
		}
	}
}

// noEnds drops the derived end offsets (the wire and the file have none).
func noEnds(es []EpochEntry) []EpochEntry {
	out := slices.Clone(es)
	for i := range out {
		out[i].EndOffset = 0
	}
	return out
}

// writeEpochFile leaves dir's epoch file holding entries, as a broker
// that ran before would.
func writeEpochFile(t *testing.T, dir string, entries []EpochEntry) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "epochFileCheckpoint"), FormatEpochFile(entries), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Java 5.3.3 broker that was master of a term it wrote nothing in
// rejoins an rmq master elected after it, as it would a Java master: the
// rmq master keeps the empty term's entry (recorded from the old master's
// heartbeat while it followed it) in the table it hands over, and the
// stock slave's findConsistentPoint matches on it. The cases:
//   - the term was the first: the stock slave's table is [{1,0}] only;
//   - the old master wrote a tail the new one never got: it is cut at the
//     empty term's start;
//   - a new stock slave copies the whole history across the empty term:
//     the chunks never name the empty epoch, so its table gets the epoch
//     its bytes were written in (appendEntry refuses an equal start).
func TestStockSlaveRejoinsAfterEmptyTerm(t *testing.T) {
	for _, c := range []struct {
		name       string
		master     []EpochEntry // the new master's table before ChangeToMaster
		masterLog  int64        // its commitlog (shared with the slave)
		epoch      int32        // the new master's epoch
		slave      []EpochEntry // the stock slave's table
		slaveExtra int          // bytes the stock slave holds past masterLog
		wantHS     []EpochEntry // the handshake table
		wantSlave  []EpochEntry // the stock slave's table at the end
	}{
		{"first term empty", ents(1, 0), 0, 2, ents(1, 0), 0, ents(1, 0, 2, 0), ents(2, 0)},
		{"old master's unreplicated tail", ents(1, 0, 2, 500), 500, 3, ents(1, 0, 2, 500), 300,
			ents(1, 0, 2, 500, 3, 500), ents(1, 0, 3, 500)},
		// Its first chunk closes epoch 1 and names the next one (the stock
		// habit), so epoch 1 is never named to it.
		{"new slave across the empty term", ents(1, 0, 2, 500), 500, 3, nil, 0,
			ents(1, 0, 2, 500, 3, 500), ents(3, 500)},
	} {
		t.Run(c.name, func(t *testing.T) {
			mst := newFakeStore(1 << 20)
			shared := randBytes(int(c.masterLog), 31)
			mst.put(shared)
			dir := t.TempDir()
			writeEpochFile(t, dir, c.master)
			m := node(t, mst, dir, nil)
			if err := m.ChangeToMaster(c.epoch); err != nil {
				t.Fatal(err)
			}
			mst.put(randBytes(1200, 32)) // written after the election
			s := &stockSlave{t: t, epochs: stockInit(c.slave)}
			if len(c.slave) > 0 {
				s.log = append(slices.Clone(shared), randBytes(c.slaveExtra, 33)...)
			}
			hs, err := s.session(m.Addr().String(), mst.MaxPhyOffset())
			if err != nil {
				t.Fatalf("stock slave: %v (master's handshake %v)", err, hs.Entries)
			}
			if !slices.Equal(hs.Entries, noEnds(c.wantHS)) || hs.LastEpoch != c.epoch {
				t.Errorf("handshake %v last %d, want %v last %d", hs.Entries, hs.LastEpoch, noEnds(c.wantHS), c.epoch)
			}
			if _, all := mst.bytes(); !bytes.Equal(s.log, all) {
				t.Fatalf("stock slave holds %d bytes unlike the master's %d", len(s.log), len(all))
			}
			if got := noEnds(s.epochs); !slices.Equal(got, noEnds(c.wantSlave)) {
				t.Errorf("stock slave's epochs %v, want %v", got, c.wantSlave)
			}
		})
	}
}

// ChangeToMaster keeps an entry starting at the commitlog's end (an empty
// term) and drops one starting above it (a tail a crash lost), then
// appends its own epoch at the end.
func TestChangeToMasterKeepsEmptyTerm(t *testing.T) {
	for _, c := range []struct {
		before, want []EpochEntry
		epoch        int32
	}{
		{ents(1, 0, 2, 700), ents(1, 0, 2, 700, 3, 700), 3},
		{ents(1, 0, 2, 500, 3, 900), ents(1, 0, 2, 500, 4, 700), 4},
		{ents(1, 0, 2, 700, 3, 700), ents(1, 0, 2, 700, 3, 700, 5, 700), 5},
		// Re-elected in the same epoch: its entry is replaced.
		{ents(1, 0, 2, 700), ents(1, 0, 2, 700), 2},
	} {
		st := newFakeStore(1 << 20)
		st.put(randBytes(700, 41))
		dir := t.TempDir()
		writeEpochFile(t, dir, c.before)
		m := node(t, st, dir, nil)
		if err := m.ChangeToMaster(c.epoch); err != nil {
			t.Fatal(err)
		}
		if got := noEnds(m.Epochs().Entries()); !slices.Equal(got, noEnds(c.want)) {
			t.Errorf("%v then master of %d: %v, want %v", noEnds(c.before), c.epoch, got, noEnds(c.want))
		}
	}
}
