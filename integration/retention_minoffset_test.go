package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// The Go client consuming from below a queue's minimum offset after
// retention deleted the old commitlog files gets the stock correction (the
// Java client's: integration/java RetentionMinOffsetTest). A broker of 1 MiB
// commitlog files takes about four files of messages; DELETE_EXPIRED_COMMITLOG
// with diskSpaceCleanForciblyRatio under the disk's use deletes every file
// but the newest, and the queue minimums move up. A pull from 0 gets
// OFFSET_ILLEGAL with the minimum as next offset (Java 4.9.8
// DefaultMessageStore.getMessage OFFSET_TOO_SMALL, PullMessageProcessor
// PULL_OFFSET_MOVED) and pulling on returns everything up to the maximum; a
// push group committed at 0 is corrected and receives every message from
// the minimum on, none below.
func TestConsumeBelowRetentionMinimum(t *testing.T) {
	t.Parallel()
	const fileSize = 1 << 20
	p := ownRMQ(t, "mappedFileSizeCommitLog="+strconv.Itoa(fileSize), "diskSpaceCleanForciblyRatio=1")
	ns, addr := p.NamesrvAddr(), p.BrokerAddr()
	adm := admin.New(admin.Options{NamesrvAddr: ns})
	ctx := context.Background()
	topic := uniqueName(t, "t")
	if _, err := adm.UpdateTopic(ctx, admin.TopicSpec{TopicName: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, addr, ""); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, consumeTimeout, func() error { _, err := adm.Route(ctx, topic); return err })

	prod, _ := newProducer(t, ns)
	body := bytes.Repeat([]byte("r"), 1024)
	for i := 0; i < 3200; i += 32 {
		batch := make([]*primitive.Message, 32)
		for j := range batch {
			batch[j] = primitive.NewMessage(topic, body)
		}
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		r, err := prod.SendSync(sctx, batch...)
		cancel()
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("batch send: %v %v", r, err)
		}
	}
	stats, err := adm.TopicStatus(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	maxOff := map[int32]int64{}
	for _, q := range stats {
		maxOff[q.QueueID] = q.MaxOffset
	}

	if _, err := adm.DeleteExpiredCommitLog(ctx, addr, ""); err != nil {
		t.Fatal(err)
	}
	minOff := map[int32]int64{}
	harness.WaitFor(t, consumeTimeout, func() error {
		info, err := adm.BrokerRuntimeInfo(ctx, addr)
		if err != nil {
			return err
		}
		lo, _ := strconv.ParseInt(info["commitLogMinOffset"], 10, 64)
		hi, _ := strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
		stats, err := adm.TopicStatus(ctx, topic)
		if err != nil {
			return err
		}
		now := map[int32]int64{}
		for _, q := range stats {
			now[q.QueueID] = q.MinOffset
		}
		settled := hi-lo <= fileSize && now[0] > 0 && now[1] > 0 && maps.Equal(now, minOff)
		minOff = now
		if !settled {
			return fmt.Errorf("commitlog %d..%d, queue minimums %v", lo, hi, now)
		}
		return nil
	})
	t.Logf("queue minimums %v, maximums %v", minOff, maxOff)

	// The pull consumer: OFFSET_ILLEGAL with the minimum, then everything.
	pc := startPullConsumer(t, ns, uniqueName(t, "pull"), topic)
	brokerName := stats[0].BrokerName
	for q := int32(0); q < 2; q++ {
		mq := &primitive.MessageQueue{Topic: topic, BrokerName: brokerName, QueueId: int(q)}
		first, err := pc.PullFrom(ctx, mq, 0, 32)
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != primitive.PullOffsetIllegal || first.NextBeginOffset != minOff[q] {
			t.Fatalf("queue %d: pull from 0 = status %v next %d, want OFFSET_ILLEGAL next %d", q, first.Status, first.NextBeginOffset, minOff[q])
		}
		got, pulls := int64(0), 0
		for off := first.NextBeginOffset; off < maxOff[q]; pulls++ {
			if pulls > int(maxOff[q]-minOff[q])/8+4 {
				t.Fatalf("queue %d: %d pulls for %d messages (an error loop?)", q, pulls, maxOff[q]-minOff[q])
			}
			r, err := pc.PullFrom(ctx, mq, off, 32)
			if err != nil || r.Status != primitive.PullFound {
				t.Fatalf("queue %d: pull at %d: %v %v", q, off, r, err)
			}
			for _, m := range r.GetMessageExts() {
				if m.QueueOffset < off || m.QueueOffset >= r.NextBeginOffset {
					t.Fatalf("queue %d: offset %d outside the pull's %d..%d", q, m.QueueOffset, off, r.NextBeginOffset)
				}
				got++
			}
			off = r.NextBeginOffset
		}
		if got != maxOff[q]-minOff[q] {
			t.Fatalf("queue %d: pulled %d messages from the minimum, want %d", q, got, maxOff[q]-minOff[q])
		}
	}

	// The push consumer of a group committed at 0.
	group := uniqueName(t, "push")
	raw := rawClient(t)
	for q := int32(0); q < 2; q++ {
		resp, err := raw.InvokeTimeout(addr, remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q)), "commitOffset": "0",
		}, nil), sendTimeout)
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("commit offset 0 on queue %d: %v %v", q, resp, err)
		}
	}
	var mu sync.Mutex
	pushed := map[int32]map[int64]bool{0: {}, 1: {}}
	var below []string
	startConsumerFunc(t, ns, consumerConf{group: group, topic: topic}, func(m *primitive.MessageExt) {
		mu.Lock()
		defer mu.Unlock()
		q := int32(m.Queue.QueueId)
		if m.QueueOffset < minOff[q] {
			below = append(below, fmt.Sprintf("%d:%d", q, m.QueueOffset))
		}
		pushed[q][m.QueueOffset] = true
	})
	harness.WaitFor(t, 2*consumeTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		for q := int32(0); q < 2; q++ {
			for off := minOff[q]; off < maxOff[q]; off++ {
				if !pushed[q][off] {
					return fmt.Errorf("queue %d: offset %d not received (%d of %d)", q, off, len(pushed[q]), maxOff[q]-minOff[q])
				}
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(below) > 0 {
		t.Fatalf("received offsets below the minimum: %v", below[:min(len(below), 10)])
	}
}
