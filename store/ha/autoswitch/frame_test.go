package autoswitch

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The golden frames are laid out by hand from the Java writers (big-endian
// ByteBuffer puts): sendHandshakeHeader (AutoSwitchHAClient.java:290-306),
// reportSlaveOffset (:322-329), buildHandshakeBuffer
// (AutoSwitchHAConnection.java:476-504), buildTransferHeaderBuffer
// (:519-553). State ordinals: HANDSHAKE=1, TRANSFER=2. The sizes and
// ordinals were also read from the 5.3.3 jar's constants
// (testdata/java-5.3.3/Sizes.java.txt printed 16, 12, 20, 36, 12 and
// READY=0 .. SHUTDOWN=4).
const (
	goldenSlaveHandshake = "00000001 0001 0000 0000000000000002"
	goldenSlaveReport    = "00000002 0000000000001000"
	goldenMasterHS       = "00000001 00000018 0000000000002000 00000005" +
		"00000001 0000000000000000 00000005 0000000000000800"
	goldenTransfer = "00000002 00000003 0000000000000800 00000005 0000000000000800 00000000000007ff 616263"
)

var (
	goldenHS = MasterHandshake{MaxOffset: 0x2000, LastEpoch: 5, Entries: []EpochEntry{{Epoch: 1}, {Epoch: 5, StartOffset: 0x800}}}
	goldenTH = TransferHeader{BodySize: 3, Offset: 0x800, Epoch: 5, EpochStartOffset: 0x800, ConfirmOffset: 0x7ff}
)

func TestFrameGolden(t *testing.T) {
	if got := AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: true, BrokerID: 2}); !bytes.Equal(got, unhex(t, goldenSlaveHandshake)) {
		t.Errorf("slave handshake % x", got)
	}
	if got := AppendSlaveReport(nil, 0x1000); !bytes.Equal(got, unhex(t, goldenSlaveReport)) {
		t.Errorf("slave report % x", got)
	}
	got, err := AppendMasterHandshake(nil, goldenHS)
	if err != nil || !bytes.Equal(got, unhex(t, goldenMasterHS)) {
		t.Errorf("master handshake % x %v", got, err)
	}
	got, err = AppendTransferHeader(nil, goldenTH)
	if err != nil || !bytes.Equal(append(got, "abc"...), unhex(t, goldenTransfer)) {
		t.Errorf("transfer % x %v", got, err)
	}
	if len(unhex(t, goldenSlaveHandshake)) != SlaveHandshakeSize || len(unhex(t, goldenSlaveReport)) != SlaveReportSize ||
		len(unhex(t, goldenMasterHS)) != MasterHandshakeHeaderSize+2*EpochEntrySize || len(unhex(t, goldenTransfer)) != TransferHeaderSize+3 {
		t.Error("frame sizes differ from the section 4.5 table")
	}
	if StateReady != 0 || StateHandshake != 1 || StateTransfer != 2 || StateSuspend != 3 || StateShutdown != 4 || StateShutdown.String() != "SHUTDOWN" {
		t.Error("state ordinals")
	}
}

func TestEncoderLimits(t *testing.T) {
	if _, err := AppendMasterHandshake(nil, MasterHandshake{Entries: make([]EpochEntry, MaxHandshakeEntries+1)}); !errors.Is(err, ErrFrame) {
		t.Errorf("1001 entries: %v", err)
	}
	if b, err := AppendMasterHandshake(nil, MasterHandshake{Entries: make([]EpochEntry, MaxHandshakeEntries)}); err != nil || len(b) != MasterHandshakeHeaderSize+12000 {
		t.Errorf("1000 entries: %d %v", len(b), err)
	}
	for _, n := range []int32{-1, MaxTransferBody + 1} {
		if _, err := AppendTransferHeader(nil, TransferHeader{BodySize: n}); !errors.Is(err, ErrFrame) {
			t.Errorf("body %d: %v", n, err)
		}
	}
}

// feedSplit feeds b to the decoder in chunks cut at random points.
func feedSlave(d *SlaveDecoder, b []byte, r *rand.Rand) ([]SlaveFrame, error) {
	var out []SlaveFrame
	var err error
	for len(b) > 0 && err == nil {
		n := 1 + r.IntN(len(b))
		out, err = d.Feed(out, b[:n])
		b = b[n:]
	}
	return out, err
}

// masterGot is a decoded master frame with its body copied out.
type masterGot struct {
	F    MasterFrame
	Body string
}

func feedMaster(d *MasterDecoder, b []byte, r *rand.Rand) ([]masterGot, error) {
	var got []masterGot
	for len(b) > 0 {
		n := 1 + r.IntN(len(b))
		out, err := d.Feed(nil, b[:n])
		for _, f := range out {
			body := string(f.Body)
			f.Body = nil
			got = append(got, masterGot{f, body})
		}
		if err != nil {
			return got, err
		}
		b = b[n:]
	}
	return got, nil
}

func TestSlaveDecoderRoundTrip(t *testing.T) {
	want := []SlaveFrame{
		{State: StateHandshake, Handshake: SlaveHandshake{SyncFromLastFile: true, AsyncLearner: true, BrokerID: math.MaxInt64}},
		{State: StateTransfer, MaxOffset: 0},
		{State: StateTransfer, MaxOffset: 1 << 40},
		{State: StateHandshake, Handshake: SlaveHandshake{BrokerID: -1}},
	}
	var b []byte
	for _, f := range want {
		if f.State == StateHandshake {
			b = AppendSlaveHandshake(b, f.Handshake)
		} else {
			b = AppendSlaveReport(b, f.MaxOffset)
		}
	}
	for seed := uint64(0); seed < 50; seed++ {
		var d SlaveDecoder
		got, err := feedSlave(&d, b, rand.New(rand.NewPCG(seed, 1)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: %v %v", seed, got, err)
		}
	}
	// A flag short other than 1 is false, as in Java (:322, :327).
	hs := unhex(t, "00000001 0002 ffff 0000000000000003")
	var d SlaveDecoder
	got, err := d.Feed(nil, hs)
	if err != nil || len(got) != 1 || got[0].Handshake != (SlaveHandshake{BrokerID: 3}) {
		t.Errorf("flags 2/-1: %v %v", got, err)
	}
}

func TestSlaveDecoderRefuses(t *testing.T) {
	for _, s := range []string{"00000000", "00000003", "00000004", "7fffffff", "ffffffff"} {
		var d SlaveDecoder
		// The state alone is enough to refuse, before the rest arrives.
		if _, err := d.Feed(nil, unhex(t, s)); !errors.Is(err, ErrFrame) {
			t.Errorf("state %s: %v", s, err)
		}
	}
	var d SlaveDecoder
	out, err := d.Feed(nil, append(AppendSlaveReport(nil, 7), unhex(t, "00000003 00")...))
	if !errors.Is(err, ErrFrame) || len(out) != 1 || out[0].MaxOffset != 7 {
		t.Errorf("report then bad state: %v %v", out, err)
	}
}

func TestMasterDecoderRoundTrip(t *testing.T) {
	var b []byte
	var want []masterGot
	add := func(f MasterFrame, body string) {
		var err error
		if f.State == StateHandshake {
			b, err = AppendMasterHandshake(b, f.Handshake)
		} else {
			f.Transfer.BodySize = int32(len(body))
			b, err = AppendTransferHeader(b, f.Transfer)
			b = append(b, body...)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, masterGot{f, body})
	}
	add(MasterFrame{State: StateHandshake, Handshake: goldenHS}, "")
	add(MasterFrame{State: StateHandshake, Handshake: MasterHandshake{MaxOffset: 0, LastEpoch: -1}}, "")
	add(MasterFrame{State: StateTransfer, Transfer: goldenTH}, "abc")
	add(MasterFrame{State: StateTransfer, Transfer: TransferHeader{Offset: 99, Epoch: 2, EpochStartOffset: 10, ConfirmOffset: 90}}, "") // heartbeat
	add(MasterFrame{State: StateTransfer, Transfer: TransferHeader{Offset: 102, Epoch: 2}}, strings.Repeat("x", 70000))
	add(MasterFrame{State: StateTransfer, Transfer: TransferHeader{Offset: 70102, Epoch: 3}}, "tail")
	for seed := uint64(0); seed < 50; seed++ {
		var d MasterDecoder
		got, err := feedMaster(&d, b, rand.New(rand.NewPCG(seed, 2)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: %v\nwant %v", seed, err, want)
		}
	}
	// All at once: every body of one Feed is intact when it returns,
	// though the buffer grew between frames.
	var d MasterDecoder
	out, err := d.Feed(nil, b)
	if err != nil || len(out) != len(want) {
		t.Fatalf("one feed: %d frames, %v", len(out), err)
	}
	for i, f := range out {
		if string(f.Body) != want[i].Body {
			t.Fatalf("frame %d body corrupted", i)
		}
	}
	if c := cap(d.buf); c > TransferHeaderSize+MaxTransferBody {
		t.Errorf("buffer cap %d", c)
	}
}

func TestMasterDecoderRefuses(t *testing.T) {
	for _, c := range []struct {
		name, in string
		maxBody  int32
	}{
		{"READY", "00000000 00000000", 0},
		{"SUSPEND", "00000003", 0},
		{"unknown", "00000009", 0},
		{"negative transfer body", "00000002 ffffffff", 0},
		{"transfer body over the stock buffer", "00000002 003fffdd", 0},
		{"transfer body over MaxBody", "00000002 00000011", 16},
		{"negative handshake body", "00000001 fffffff4", 0},
		{"handshake body not whole entries", "00000001 0000000d", 0},
		{"1001 entries", "00000001 00002eec", 0},
	} {
		d := MasterDecoder{MaxBody: c.maxBody}
		if _, err := d.Feed(nil, unhex(t, c.in)); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", c.name, err)
		}
		if cap(d.buf) > MasterHandshakeHeaderSize {
			t.Errorf("%s: buffered %d before refusing", c.name, cap(d.buf))
		}
	}
	// The largest frames are accepted.
	d := MasterDecoder{MaxBody: 16}
	if _, err := d.Feed(nil, unhex(t, "00000002 00000010")); err != nil {
		t.Errorf("body at MaxBody: %v", err)
	}
	d = MasterDecoder{}
	if _, err := d.Feed(nil, unhex(t, "00000001 00002ee0")); err != nil {
		t.Errorf("1000 entries: %v", err)
	}
	if _, err := d.Feed(nil, unhex(t, "00000002 003fffdc")); err != nil {
		t.Errorf("body at MaxTransferBody: %v", err)
	}
}

// TestPlanTruncate follows doTruncate (AutoSwitchHAClient.java:435-476).
// The 5.3.3 jar's EpochFileCache gives the same points for these tables
// (testdata/java-5.3.3/Plan.java.txt: 2304, 8192, 1024, 2048, -1, -1) and
// for TestFindConsistentPoint's (150, 200, 180, 100, -1).
func TestPlanTruncate(t *testing.T) {
	for _, c := range []struct {
		name      string
		local     []EpochEntry
		localMax  int64
		master    MasterHandshake
		want      TruncatePlan
		wantError error
	}{
		{"new replica", nil, 500, goldenHS, TruncatePlan{}, nil},
		{"behind in the master's epoch", ents(1, 0, 5, 0x800), 0x900, goldenHS, TruncatePlan{true, 0x900}, nil},
		{"ahead of the master (old master rejoining)", ents(1, 0, 5, 0x800), 0x3000, goldenHS, TruncatePlan{true, 0x2000}, nil},
		{"wrote an epoch the group never saw", ents(1, 0, 3, 0x400), 0x1000, goldenHS, TruncatePlan{true, 0x400}, nil},
		{"same epoch, other start", ents(1, 0, 5, 0x900), 0x1000, goldenHS, TruncatePlan{true, 0x800}, nil},
		{"master starts later", ents(1, 0), 0x100, MasterHandshake{MaxOffset: 0x900, LastEpoch: 6, Entries: ents(6, 0x800)}, TruncatePlan{}, ErrNoConsistentPoint},
		{"master table empty", ents(1, 0), 0x100, MasterHandshake{MaxOffset: 0, LastEpoch: -1}, TruncatePlan{}, ErrNoConsistentPoint},
		// The commitlog lost the tail of the last epoch (the epoch file
		// kept it): Java's point is the master's end, 5000 (Plan.java.txt
		// "lostTail"), above the slave's 900; rmq cuts at 900.
		{"commitlog below its last epoch's start", ents(1, 0, 2, 1000), 900, MasterHandshake{MaxOffset: 5000, LastEpoch: 2, Entries: ents(1, 0, 2, 1000)}, TruncatePlan{true, 900}, nil},
		{"master table out of order", ents(1, 0), 0x100, MasterHandshake{MaxOffset: 9, Entries: ents(5, 10, 2, 20)}, TruncatePlan{}, ErrFrame},
		// Empty terms: an entry that covers no bytes asserts nothing.
		// The old master of epoch 1 was killed before any message and the
		// new master (epoch 2) starts at 0 too: the old master keeps its
		// (empty) log and drops its empty epoch (stock: -1, no point).
		{"old master of an empty term rejoins", ents(1, 0), 0, MasterHandshake{MaxOffset: 0, LastEpoch: 2, Entries: ents(2, 0)}, TruncatePlan{true, 0}, nil},
		{"empty term, master wrote since", ents(1, 0), 0, MasterHandshake{MaxOffset: 700, LastEpoch: 2, Entries: ents(2, 0)}, TruncatePlan{true, 0}, nil},
		{"empty term after bytes no epoch claims", ents(4, 300), 300, MasterHandshake{MaxOffset: 900, LastEpoch: 5, Entries: ents(5, 300)}, TruncatePlan{true, 300}, nil},
		// A local entry with bytes still needs its match: the empty rule
		// never lets a slave keep bytes of an epoch the master lacks.
		{"bytes of an epoch the master lacks", ents(1, 0, 3, 100), 100, MasterHandshake{MaxOffset: 100, LastEpoch: 2, Entries: ents(2, 0)}, TruncatePlan{}, ErrNoConsistentPoint},
		// An empty last entry on the master side changes nothing.
		{"master's last term empty", ents(1, 0), 500, MasterHandshake{MaxOffset: 500, LastEpoch: 2, Entries: ents(1, 0, 2, 500)}, TruncatePlan{true, 500}, nil},
	} {
		got, err := PlanTruncate(c.local, c.localMax, c.master)
		if !errors.Is(err, c.wantError) || (c.wantError == nil && err != nil) || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, err, c.want, c.wantError)
		}
	}
}

func FuzzSlaveDecoder(f *testing.F) {
	f.Add(append(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 1}), AppendSlaveReport(nil, 5)...), uint64(1))
	f.Add([]byte{0, 0, 0, 3, 1}, uint64(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		var whole SlaveDecoder
		want, werr := whole.Feed(nil, data)
		var split SlaveDecoder
		got, gerr := feedSlave(&split, data, rand.New(rand.NewPCG(seed, 0)))
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("whole %v %v, split %v %v", want, werr, got, gerr)
		}
		// Re-encoding the frames gives back the bytes they came from
		// (flags other than 0 and 1 aside).
		var b []byte
		for _, fr := range want {
			if fr.State == StateHandshake {
				b = AppendSlaveHandshake(b, fr.Handshake)
			} else {
				b = AppendSlaveReport(b, fr.MaxOffset)
			}
		}
		if len(b) > len(data) {
			t.Fatalf("frames of %d bytes from %d", len(b), len(data))
		}
	})
}

func FuzzMasterDecoder(f *testing.F) {
	hs, _ := AppendMasterHandshake(nil, goldenHS)
	th, _ := AppendTransferHeader(nil, goldenTH)
	f.Add(append(append(hs, th...), "abc"...), uint64(1), int32(0))
	f.Add(unhex(f, "00000002 00000011"), uint64(2), int32(16))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, maxBody int32) {
		whole := MasterDecoder{MaxBody: maxBody}
		out, werr := whole.Feed(nil, data)
		var want []masterGot
		var b []byte
		for _, fr := range out {
			if fr.State == StateHandshake {
				b, _ = AppendMasterHandshake(b, fr.Handshake)
			} else {
				var err error
				if b, err = AppendTransferHeader(b, fr.Transfer); err != nil {
					t.Fatalf("decoded a header the encoder refuses: %v", err)
				}
				b = append(b, fr.Body...)
			}
			body := string(fr.Body)
			fr.Body = nil
			want = append(want, masterGot{fr, body})
		}
		// The frames re-encode to exactly the bytes they were read from.
		if !bytes.Equal(b, data[:len(b)]) {
			t.Fatalf("re-encoded % x, read from % x", b, data[:len(b)])
		}
		split := MasterDecoder{MaxBody: maxBody}
		got, gerr := feedMaster(&split, data, rand.New(rand.NewPCG(seed, 0)))
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("whole %v %v, split %v %v", want, werr, got, gerr)
		}
		if c := cap(split.buf); c > TransferHeaderSize+MaxTransferBody {
			t.Fatalf("buffer cap %d", c)
		}
	})
}

// FuzzPlanTruncate: for any pair of tables the plan is a point both sides
// can cut at (within the slave's log) or
// ErrNoConsistentPoint, never a panic.
func FuzzPlanTruncate(f *testing.F) {
	f.Add([]byte{1, 0, 5, 8}, []byte{1, 0, 5, 8}, int64(9), int64(20))
	f.Add([]byte{2, 1}, []byte{1, 0, 3, 5}, int64(9), int64(20))
	f.Add([]byte{0, 0}, []byte{1, 0}, int64(0), int64(0))                               // an empty term's old master
	f.Add([]byte{0, 0, 0, 5, 0, 0}, []byte{0, 0, 0, 5, 0, 0, 0, 3}, int64(5), int64(9)) // empty terms kept
	f.Fuzz(func(t *testing.T, l, m []byte, localMax, masterMax int64) {
		table := func(b []byte) []EpochEntry {
			var out []EpochEntry
			var epoch, start int64
			for i := 0; i+1 < len(b) && len(out) < 50; i += 2 {
				epoch += int64(b[i]%4) + 1
				start += int64(b[i+1] % 8) // 0: an empty term
				out = append(out, EpochEntry{Epoch: int32(epoch), StartOffset: start})
			}
			return out
		}
		local, master := table(l), table(m)
		plan, err := PlanTruncate(local, localMax, MasterHandshake{MaxOffset: masterMax, Entries: master})
		if len(local) == 0 {
			if err != nil || plan.Truncate {
				t.Fatalf("empty local: %+v %v", plan, err)
			}
			return
		}
		// A log no epoch claims bytes of (empty terms only) is kept whole.
		if local[0].StartOffset >= localMax && localMax >= 0 && (err != nil || plan != TruncatePlan{true, localMax}) {
			t.Fatalf("empty terms only: %+v %v, want a cut at %d", plan, err, localMax)
		}
		if err != nil {
			if !errors.Is(err, ErrNoConsistentPoint) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if plan.Offset < 0 || plan.Offset > localMax {
			t.Fatalf("point %d outside the slave's log [0, %d]", plan.Offset, localMax)
		}
		// Where a stock slave (doTruncate) finds a point, rmq cuts there,
		// or at its own end when that is lower.
		ml, ll := stockInit(master), stockInit(local)
		ml.setLastEnd(masterMax)
		ll.setLastEnd(localMax)
		if p := ll.consistentPoint(ml); p >= 0 && plan.Offset != min(p, localMax) {
			t.Fatalf("point %d, stock's %d (local end %d)", plan.Offset, p, localMax)
		}
	})
}
