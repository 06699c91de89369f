package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/integration/harness"
)

// TestRestartKeepsMessagesAndOffsets sends messages and commits a group's
// offsets (waiting until the broker holds them all), stops the process with SIGTERM, starts it again on the same store
// and ports, and checks that the messages, the topic and the committed offsets
// survived.
func TestRestartKeepsMessagesAndOffsets(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, "mappedFileSizeCommitLog=1048576", "maxMessageSize=262144")
	topic, committed, fresh := uniqueName(t, "t"), uniqueName(t, "cg"), uniqueName(t, "cg")

	prod, stopProd := newProducer(t, p.NamesrvAddr())
	before, beforeIDs := makeMsgs(topic, "before", 30)
	sendAll(t, prod, before)
	route := waitRoute(t, p, topic)
	c1 := newCollector()
	stopC1 := startConsumer(t, p.NamesrvAddr(), consumerConf{group: committed, topic: topic}, c1)
	waitAll(t, consumeTimeout, beforeIDs, c1)
	waitCommitted(t, p, committed, topic, int(route.QueueDatas[0].ReadQueueNums))
	stopC1()
	stopProd()

	if err := p.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.StoreDir(), "abort")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abort marker after a clean shutdown: stat err = %v, want not exist", err)
	}
	if err := p.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	waitRoute(t, p, topic)

	prod2, _ := newProducer(t, p.NamesrvAddr())
	after, afterIDs := makeMsgs(topic, "after", 10)
	sendAll(t, prod2, after)

	// A new group reads everything from the start.
	all := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: fresh, topic: topic}, all)
	waitAll(t, consumeTimeout, append(append([]string(nil), beforeIDs...), afterIDs...), all)
	for i, id := range beforeIDs {
		checkSameMessage(t, before[i], all.first(id))
	}
	checkContiguousQueues(t, all.all())

	// The group that committed before the restart resumes after its offsets.
	c2 := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: committed, topic: topic}, c2)
	waitAll(t, consumeTimeout, afterIDs, c2)
	var again []string
	for _, id := range beforeIDs {
		if c2.count(id) > 0 {
			again = append(again, id)
		}
	}
	if len(again) > 0 {
		t.Errorf("group %s re-consumed %d messages committed before the restart: %v", committed, len(again), again)
	}
}

// TestKillDuringSyncFlushSends kills the process with SIGKILL while a producer
// sends under SYNC_FLUSH; after a restart every acknowledged message must be
// consumable, intact, and new messages must append after them.
func TestKillDuringSyncFlushSends(t *testing.T) {
	p := ownRMQ(t, "flushDiskType=SYNC_FLUSH", "mappedFileSizeCommitLog=1048576", "maxMessageSize=262144")
	topic := uniqueName(t, "t")
	prod, stopProd := newProducer(t, p.NamesrvAddr(), producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))

	body := func(id string) []byte {
		return bytes.Repeat([]byte(id+" "), 2048/(len(id)+1))
	}
	var (
		mu      sync.Mutex
		acked   []string
		sendErr error
	)
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			id := fmt.Sprintf("k-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			r, err := prod.SendSync(ctx, testMsg(topic, id, body(id)))
			cancel()
			if err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
				return
			}
			if r.Status == primitive.SendOK {
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}
	}()
	// About 1.2 MB of records: the kill lands in the second commitlog file.
	harness.WaitFor(t, consumeTimeout, func() error {
		if n := ackedCount(); n < 600 {
			select {
			case <-done:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("producer failed after %d acknowledged messages, before the kill: %v", n, sendErr)
			default:
			}
			return fmt.Errorf("%d messages acknowledged", n)
		}
		return nil
	})
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("producer still sending 30 s after the kill")
	}
	stopProd()
	mu.Lock()
	ids := append([]string(nil), acked...)
	t.Logf("%d messages acknowledged before the kill; the producer then failed with: %v", len(ids), sendErr)
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(p.StoreDir(), "abort")); err != nil {
		t.Errorf("no abort marker after SIGKILL: %v", err)
	}

	if err := p.Restart(); err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
	waitRoute(t, p, topic)
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
	waitAll(t, consumeTimeout, ids, col)
	for _, id := range ids {
		if got := col.first(id); !bytes.Equal(got.Body, body(id)) {
			t.Errorf("%s: body corrupted after recovery (%d bytes)", id, len(got.Body))
		}
	}

	prod2, _ := newProducer(t, p.NamesrvAddr())
	after, afterIDs := makeMsgs(topic, "after", 20)
	sendAll(t, prod2, after)
	waitAll(t, consumeTimeout, afterIDs, col)
	for i, id := range afterIDs {
		checkSameMessage(t, after[i], col.first(id))
	}
	checkContiguousQueues(t, col.all())
}
