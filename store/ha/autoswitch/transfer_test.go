package autoswitch

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestTransferStart(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		report         int64
		fromLast       bool
		min, max, file int64
		want           int64
	}{
		{4096, false, 0, 9000, gib, 4096},
		{4096, true, 0, 9000, gib, 4096},
		{0, false, gib, 3*gib + 5, gib, gib},    // full history: min offset
		{0, true, gib, 3*gib + 5, gib, 3 * gib}, // the last file's start
		{0, true, 0, 0, gib, 0},
		{0, true, -1, -1, gib, 0}, // empty store: not below 0
	} {
		if got := TransferStart(c.report, c.fromLast, c.min, c.max, c.file); got != c.want {
			t.Errorf("%+v: %d", c, got)
		}
	}
}

// TestChunksNeverCrossEpochs cuts a master's commitlog into chunks as
// AutoSwitchHAConnection.transferToSlave does (:596-617) and checks the
// headers against what the Java code sends, then applies them as the Java
// slave does (AutoSwitchHAClient.java:537-573), through the frame codec:
// the slave ends with the master's epoch table.
func TestChunksNeverCrossEpochs(t *testing.T) {
	master, err := NewEpochTable(ents(1, 0, 2, 1000, 3, 2500))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := NewTransferCursor(master, 900)
	if !ok || c != (TransferCursor{Next: 900, Epoch: 1, EpochEnd: 1000}) {
		t.Fatalf("cursor %+v %v", c, ok)
	}
	want := []TransferHeader{
		// Cut at epoch 1's end; the header already names epoch 2.
		{BodySize: 100, Offset: 900, Epoch: 2, EpochStartOffset: 1000, ConfirmOffset: 7},
		// Ends exactly at epoch 2's end: not cut.
		{BodySize: 1500, Offset: 1000, Epoch: 2, EpochStartOffset: 1000, ConfirmOffset: 7},
		// So the next one is empty and moves to epoch 3, the last.
		{BodySize: 0, Offset: 2500, Epoch: 3, EpochStartOffset: 2500, ConfirmOffset: 7},
		{BodySize: 300, Offset: 2500, Epoch: 3, EpochStartOffset: 2500, ConfirmOffset: 7},
	}
	var got []TransferHeader
	for _, avail := range []int32{200, 1500, 10, 300} {
		h, ok := c.Chunk(master, avail, 7)
		if !ok {
			t.Fatalf("chunk of %d refused", avail)
		}
		got = append(got, h)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("headers\n%+v\nwant\n%+v", got, want)
	}
	if c != (TransferCursor{Next: 2800, Epoch: 3, EpochEnd: -1}) {
		t.Fatalf("cursor %+v", c)
	}
	if h, ok := c.Heartbeat(master, 9); !ok || h != (TransferHeader{Offset: 2800, Epoch: 3, EpochStartOffset: 2500, ConfirmOffset: 9}) {
		t.Fatalf("heartbeat %+v", h)
	}
	// Before the cursor has an epoch, a heartbeat names the first one.
	idle := TransferCursor{Next: -1, Epoch: -1}
	if h, ok := idle.Heartbeat(master, 0); !ok || h.Epoch != 1 || h.Offset != -1 {
		t.Fatalf("idle heartbeat %+v", h)
	}
	// No next epoch to move to: refused, cursor unchanged.
	short, _ := NewEpochTable(ents(1, 0, 2, 1000))
	stale := TransferCursor{Next: 900, Epoch: 2, EpochEnd: 950}
	if _, ok := stale.Chunk(short, 100, 0); ok || stale.Next != 900 {
		t.Fatalf("chunk past the table: %+v", stale)
	}

	// The slave side: a table up to epoch 1 and 900 bytes, fed the
	// frames in random splits.
	slave, _ := NewEpochTable(ents(1, 0))
	slaveMax, received := int64(900), int32(-1)
	var stream []byte
	for _, h := range want {
		stream, _ = AppendTransferHeader(stream, h)
		stream = append(stream, make([]byte, h.BodySize)...)
	}
	var d MasterDecoder
	r := rand.New(rand.NewPCG(3, 3))
	for len(stream) > 0 {
		n := 1 + r.IntN(len(stream))
		frames, err := d.Feed(nil, stream[:n])
		if err != nil {
			t.Fatal(err)
		}
		stream = stream[n:]
		for _, f := range frames {
			if f.Transfer.Offset != slaveMax {
				t.Fatalf("offset %d, slave at %d", f.Transfer.Offset, slaveMax)
			}
			if f.Transfer.Epoch != received {
				received = f.Transfer.Epoch
				if err := slave.Append(f.Transfer.Epoch, f.Transfer.EpochStartOffset); err != nil {
					t.Fatalf("slave append: %v", err)
				}
			}
			slaveMax += int64(len(f.Body))
		}
	}
	if slaveMax != 2800 || !reflect.DeepEqual(slave.Entries(), master.Entries()) {
		t.Fatalf("slave at %d with %v, master %v", slaveMax, slave.Entries(), master.Entries())
	}
}

// Empty terms (an entry the next one starts at) hold no byte: the cursor
// never starts in one and steps over one between two epochs, so no chunk
// or heartbeat names it; the last entry is never stepped over.
func TestCursorStepsOverEmptyTerms(t *testing.T) {
	master, err := NewEpochTable(ents(1, 0, 2, 500, 3, 500, 4, 500, 5, 900))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := NewTransferCursor(master, 500)
	if !ok || c != (TransferCursor{Next: 500, Epoch: 4, EpochEnd: 900}) {
		t.Fatalf("cursor at 500: %+v %v", c, ok)
	}
	c, _ = NewTransferCursor(master, 400)
	var got []TransferHeader
	for _, avail := range []int32{200, 400, 50} {
		h, ok := c.Chunk(master, avail, 0)
		if !ok {
			t.Fatalf("chunk of %d refused", avail)
		}
		got = append(got, h)
	}
	want := []TransferHeader{
		{BodySize: 100, Offset: 400, Epoch: 4, EpochStartOffset: 500},
		{BodySize: 400, Offset: 500, Epoch: 4, EpochStartOffset: 500},
		{BodySize: 0, Offset: 900, Epoch: 5, EpochStartOffset: 900},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("headers\n%+v\nwant\n%+v", got, want)
	}
	// An empty last term (a master elected at its start) is entered.
	last, _ := NewEpochTable(ents(1, 0, 2, 500, 3, 500))
	c, _ = NewTransferCursor(last, 450)
	if h, ok := c.Chunk(last, 100, 0); !ok || h != (TransferHeader{BodySize: 50, Offset: 450, Epoch: 3, EpochStartOffset: 500}) {
		t.Fatalf("into the last epoch: %+v %v", h, ok)
	}
}
