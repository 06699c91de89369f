package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rmqio/rmq/message"
)

// TestLookColdMatchesMapping reads records behind the mapped window with
// pread and compares them byte for byte with the mapping, across segment
// ends, with records longer than the first read, and checks the errors for
// padding, a mid-record offset and the window where the mapping is used.
func TestLookColdMatchesMapping(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir())) // 64 KiB segments: a 16 KiB window
	var offs []int64
	for i := 0; i < 300; i++ {
		m := testMessage("Cold", 1, i)
		if i%7 == 0 {
			m.Body = bytes.Repeat([]byte{byte('A' + i%26)}, coldHeaderRead+500+i)
		}
		offs = append(offs, mustPut(t, s, m).PhysicalOffset)
	}
	waitDispatched(t, s)
	window := s.MaxPhyOffset() - s.cl.fileSize/4
	cold := 0
	for i, off := range offs {
		got, ok, err := s.cl.lookCold(off)
		if off >= window {
			if ok {
				t.Fatalf("record %d at %d inside the mapped window read cold", i, off)
			}
			continue
		}
		if !ok || err != nil {
			t.Fatalf("record %d at %d: ok=%v err=%v", i, off, ok, err)
		}
		cold++
		var want []byte
		if err := s.cl.record(off, 0, func(b []byte, _ *message.Layout) error { want = append(want, b...); return nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d at %d: pread %d bytes differ from the mapping's %d", i, off, len(got), len(want))
		}
		rec, err := s.LookMessageByOffset(off)
		if err != nil || !bytes.Equal(rec, want) {
			t.Fatalf("LookMessageByOffset(%d): %v", off, err)
		}
		m, err := message.DecodeRecord(rec)
		if err != nil || m.QueueOffset != int64(i) {
			t.Fatalf("record %d decodes to queue offset %d: %v", i, m.QueueOffset, err)
		}
	}
	if cold < 200 {
		t.Fatalf("only %d of %d records were behind the window", cold, len(offs))
	}
	if _, err := s.LookMessageByOffset(offs[1] + 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("mid-record cold lookup: err = %v, want ErrCorrupt", err)
	}
	// The padding at the end of the first segment.
	for i := 1; i < len(offs); i++ {
		if offs[i]/s.cl.fileSize != offs[i-1]/s.cl.fileSize {
			prev, _ := s.LookMessageByOffset(offs[i-1])
			pad := offs[i-1] + int64(len(prev))
			if pad%s.cl.fileSize == 0 {
				continue
			}
			if _, err := s.LookMessageByOffset(pad); !errors.Is(err, ErrNotFound) {
				t.Fatalf("cold lookup of the padding at %d: err = %v, want ErrNotFound", pad, err)
			}
			break
		}
	}
}
