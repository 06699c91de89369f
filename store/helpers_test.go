package store

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
)

var (
	testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	testBornHost  = netip.MustParseAddrPort("10.0.0.7:53211")
)

// testOptions are small-file options that force rolls after a few records.
func testOptions(dir string) Options {
	return Options{
		Dir:                        dir,
		MappedFileSizeCommitLog:    64 << 10,
		MappedFileSizeConsumeQueue: 100 * cqUnitSize,
		FlushInterval:              10 * time.Millisecond,
		FlushConsumeQueueInterval:  20 * time.Millisecond,
		StoreHost:                  testStoreHost,
		// A small index: copyDir copies files whole, and the default one is 420 MB.
		Index:  IndexOptions{HashSlotNum: 512, MaxIndexNum: 4096},
		Logger: zerolog.Nop(),
	}
}

func openStore(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testMessage is message i of a deterministic stream: the body encodes topic,
// queue and i, and the size varies so records straddle file ends differently.
func testMessage(topic string, qid int32, i int) *message.Message {
	body := fmt.Appendf(nil, "%s/%d/msg-%06d|", topic, qid, i)
	for len(body) < 40+(i*37)%700 {
		body = append(body, byte('a'+i%26))
	}
	return &message.Message{
		Topic:         topic,
		QueueID:       qid,
		Flag:          int32(i),
		Body:          body,
		Properties:    map[string]string{"TAGS": fmt.Sprintf("tag%d", i%3), "KEYS": fmt.Sprintf("k%d", i), "UNIQ_KEY": fmt.Sprintf("U%08d", i)},
		BornTimestamp: 1_700_000_000_000 + int64(i),
		BornHost:      testBornHost,
	}
}

func mustPut(t testing.TB, s *Store, m *message.Message) *PutResult {
	t.Helper()
	r, err := s.PutMessage(m)
	if err != nil {
		t.Fatalf("PutMessage(%s/%d): %v", m.Topic, m.QueueID, err)
	}
	if r.Status != PutOK {
		t.Fatalf("PutMessage status %v", r.Status)
	}
	return r
}

// waitDispatched waits until the consume queues cover the whole commitlog.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}
}

// dispatchPass wakes s's dispatcher and waits for a pass to end.
func dispatchPass(t *testing.T, s *Store) {
	t.Helper()
	ch := s.progressChan()
	s.wakeDispatcher()
	select {
	case <-ch:
	case <-time.After(testWait):
		t.Fatal("no dispatcher pass")
	}
}

// readQueue pulls every message of a queue from offset 0, in batches.
func readQueue(t testing.TB, s *Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	off := s.MinOffsetInQueue(topic, qid)
	for off < s.MaxOffsetInQueue(topic, qid) {
		r := s.GetMessage(topic, qid, off, 16, 256<<10, nil)
		if r.Status != Found && r.Status != MessageWasRemoving {
			t.Fatalf("GetMessage(%s/%d@%d) = %v", topic, qid, off, r.Status)
		}
		for _, b := range r.Messages {
			m, err := message.DecodeRecord(b)
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			out = append(out, m)
		}
		off = r.NextBeginOffset
	}
	return out
}

// checkQueue reads queue topic/qid back and checks that it holds messages
// 0 to n-1 of the testMessage stream, bodies intact.
func checkQueue(t testing.TB, s *Store, topic string, qid int32, n int) {
	t.Helper()
	msgs := readQueue(t, s, topic, qid)
	if len(msgs) != n {
		t.Fatalf("%s/%d: %d messages, want %d", topic, qid, len(msgs), n)
	}
	for i, m := range msgs {
		if want := testMessage(topic, qid, i).Body; !bytes.Equal(m.Body, want) {
			t.Fatalf("%s/%d message %d: body %q, want %q", topic, qid, i, m.Body, want)
		}
	}
}

// copyDir copies a store directory, as a crash would leave it (minus the lock).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
