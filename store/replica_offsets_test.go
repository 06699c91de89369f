package store

import (
	"testing"

	"github.com/rmqio/rmq/message"
)

// replicatedSlave fills a master with 100 messages on each of Q/0..2, every
// third also naming %LMQ%a, and replicates its whole commitlog into a new
// store in dir (refusing puts, as a SLAVE's does), dispatched.
func replicatedSlave(t *testing.T, dir string) *Store {
	t.Helper()
	m := openStore(t, lmqOptions(t.TempDir()))
	for i := 0; i < 300; i++ {
		msg := testMessage("Q", int32(i%3), i/3)
		if i%3 == 0 {
			msg = lmqMessage("Q", 0, i/3, "%LMQ%a")
		}
		mustPut(t, m, msg)
	}
	s := openStore(t, lmqOptions(dir))
	s.SetSlave(true)
	for _, c := range replicaChunks(t, m, 0, 3000) {
		if _, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
			t.Fatalf("AppendReplicated(%d, %d): %v", c[0], c[1], err)
		}
	}
	waitDispatched(t, s)
	return s
}

// putsContinue puts one more message on each queue of s and checks that
// each takes the offset after the replicated ones.
func putsContinue(t *testing.T, s *Store, how string) {
	t.Helper()
	for q := int32(0); q < 3; q++ {
		if r := mustPut(t, s, testMessage("Q", q, 100)); r.QueueOffset != 100 {
			t.Fatalf("%s: Q/%d put got queue offset %d, want 100 (after the 100 replicated)", how, q, r.QueueOffset)
		}
	}
	// %LMQ%a holds the 100 messages of queue 0: the next names offset 100.
	r := mustPut(t, s, lmqMessage("Q", 0, 101, "%LMQ%a"))
	stored, err := s.LookMessageByOffset(r.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := message.DecodeRecord(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Properties[message.PropInnerMultiQueueOffset]; got != "100" {
		t.Fatalf("%s: %%LMQ%%a offset %q, want 100", how, got)
	}
	waitDispatched(t, s)
	if n := s.MaxOffsetInQueue("%LMQ%a", 0); n != 101 {
		t.Fatalf("%s: %%LMQ%%a holds %d units, want 101", how, n)
	}
}

// A slave store's next queue offsets follow what it replicates: taking
// puts in place (SetSlave(false), a promotion), it continues each queue
// and each LMQ queue after the replicated messages instead of at 0.
func TestReplicaQueueOffsetsFollowReplication(t *testing.T) {
	s := replicatedSlave(t, t.TempDir())
	s.SetSlave(false)
	putsContinue(t, s, "in place")
}

// The slave's store dir reopened (clean shutdown) as a master's: the
// queue offsets continue after the replicated ones.
func TestReplicaReopenedAsMasterContinuesQueues(t *testing.T) {
	dir := t.TempDir()
	s := replicatedSlave(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	putsContinue(t, openStore(t, lmqOptions(dir)), "reopened")
}
