package store

import (
	"bytes"
	"testing"
)

func TestPutGetRoundTripAcrossRolls(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	const n = 300
	var results []*PutResult
	for i := 0; i < n; i++ {
		results = append(results, mustPut(t, s, testMessage("TopicA", int32(i%2), i)))
	}
	waitDispatched(t, s)
	if s.MinPhyOffset() != 0 || s.MaxPhyOffset() <= 64<<10 {
		t.Fatalf("commitlog [%d, %d) did not roll", s.MinPhyOffset(), s.MaxPhyOffset())
	}
	for qid := int32(0); qid < 2; qid++ {
		got := readQueue(t, s, "TopicA", qid)
		if len(got) != n/2 {
			t.Fatalf("queue %d: %d messages, want %d", qid, len(got), n/2)
		}
		for j, m := range got {
			i := 2*j + int(qid)
			want := testMessage("TopicA", qid, i)
			if !bytes.Equal(m.Body, want.Body) || m.QueueOffset != int64(j) || m.Flag != int32(i) ||
				m.Properties["TAGS"] != want.Properties["TAGS"] || m.BornHost != testBornHost || m.StoreHost != testStoreHost {
				t.Fatalf("queue %d message %d: got %+v", qid, j, m)
			}
			if m.PhysicalOffset != results[i].PhysicalOffset || m.MsgID != results[i].MsgIDs[0] {
				t.Fatalf("message %d: phy %d id %s, put said %d %s", i, m.PhysicalOffset, m.MsgID, results[i].PhysicalOffset, results[i].MsgIDs[0])
			}
		}
	}
}
