package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// sentMsg is one message of TestSendModesRoundTrip with what its send reported.
type sentMsg struct {
	mode string
	msg  *primitive.Message
	res  *primitive.SendResult // nil for oneway; shared by the members of a batch
	pos  int                   // position inside its batch
}

// TestSendModesRoundTrip sends with every producer mode (sync, async, oneway,
// batch) and checks what a push consumer receives field by field.
func TestSendModesRoundTrip(t *testing.T) {
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	ctx := context.Background()

	mk := func(mode string, i int) *primitive.Message {
		id := fmt.Sprintf("%s-%d", mode, i)
		m := testMsg(topic, id, []byte("body of "+id+" \x00\xff ü"))
		m.WithTag("Tag_" + mode)
		m.WithKeys([]string{"key-" + id, "shared-key"})
		m.WithProperty("color", "blue green")
		return m
	}
	var sent []*sentMsg

	for i := 0; i < 3; i++ {
		m := mk("sync", i)
		res := sendAll(t, prod, []*primitive.Message{m})[0]
		sent = append(sent, &sentMsg{mode: "sync", msg: m, res: res})
	}

	type asyncResult struct {
		i   int
		res *primitive.SendResult
		err error
	}
	asyncDone := make(chan asyncResult, 3)
	for i := 0; i < 3; i++ {
		m := mk("async", i)
		sent = append(sent, &sentMsg{mode: "async", msg: m})
		idx := len(sent) - 1
		err := prod.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			asyncDone <- asyncResult{i: idx, res: r, err: err}
		}, m)
		if err != nil {
			t.Fatalf("SendAsync: %v", err)
		}
	}
	for range 3 {
		select {
		case r := <-asyncDone:
			if r.err != nil {
				t.Fatalf("async send %s: %v", sent[r.i].msg.GetProperty(idProp), r.err)
			}
			if r.res.Status != primitive.SendOK {
				t.Fatalf("async send %s: status %d", sent[r.i].msg.GetProperty(idProp), r.res.Status)
			}
			sent[r.i].res = r.res
		case <-time.After(sendTimeout):
			t.Fatal("async send callback not called in time")
		}
	}

	for i := 0; i < 3; i++ {
		m := mk("oneway", i)
		if err := prod.SendOneWay(ctx, m); err != nil {
			t.Fatalf("SendOneWay: %v", err)
		}
		sent = append(sent, &sentMsg{mode: "oneway", msg: m})
	}

	batch := []*primitive.Message{mk("batch", 0), mk("batch", 1), mk("batch", 2)}
	bctx, cancel := context.WithTimeout(ctx, sendTimeout)
	bres, err := prod.SendSync(bctx, batch...)
	cancel()
	if err != nil {
		t.Fatalf("batch SendSync: %v", err)
	}
	if bres.Status != primitive.SendOK {
		t.Fatalf("batch status %d", bres.Status)
	}
	for i, m := range batch {
		sent = append(sent, &sentMsg{mode: "batch", msg: m, res: bres, pos: i})
	}
	batchOffsetIDs := strings.Split(bres.OffsetMsgID, ",")
	if len(batchOffsetIDs) != len(batch) {
		t.Errorf("batch send result offsetMsgId %q: %d ids, want one per message (%d)", bres.OffsetMsgID, len(batchOffsetIDs), len(batch))
	}

	for _, s := range sent {
		if s.res == nil {
			continue
		}
		if s.res.MessageQueue == nil || s.res.MessageQueue.Topic != topic {
			t.Errorf("%s: send result queue %v", s.msg.GetProperty(idProp), s.res.MessageQueue)
		}
		if s.mode != "batch" {
			if err := checkOffsetMsgID(s.res.OffsetMsgID, p.BrokerPort()); err != nil {
				t.Errorf("%s send result: %v", s.msg.GetProperty(idProp), err)
			}
		}
	}

	waitRoute(t, p, topic)
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
	ids := make([]string, len(sent))
	for i, s := range sent {
		ids[i] = s.msg.GetProperty(idProp)
	}
	waitAll(t, consumeTimeout, ids, col)

	for _, s := range sent {
		id := s.msg.GetProperty(idProp)
		got := col.first(id)
		t.Run(id, func(t *testing.T) {
			checkSameMessage(t, s.msg, got)
			if got.StoreHost != p.BrokerAddr() {
				t.Errorf("store host %q, want %q", got.StoreHost, p.BrokerAddr())
			}
			if err := checkOffsetMsgID(got.OffsetMsgId, p.BrokerPort()); err != nil {
				t.Error(err)
			}
			if got.ReconsumeTimes != 0 {
				t.Errorf("reconsume times %d", got.ReconsumeTimes)
			}
			switch s.mode {
			case "sync", "async", "oneway":
				uniq := s.msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
				if uniq == "" || got.MsgId != uniq {
					t.Errorf("msgId %q, want the producer's UNIQ_KEY %q", got.MsgId, uniq)
				}
			case "batch":
				// The Go client sets no UNIQ_KEY on batch members, so the
				// consumer falls back to the server id.
				if got.MsgId != got.OffsetMsgId {
					t.Errorf("batch member msgId %q, want its offsetMsgId %q", got.MsgId, got.OffsetMsgId)
				}
			}
			if s.res == nil {
				return
			}
			if got.Queue == nil || got.Queue.QueueId != s.res.MessageQueue.QueueId {
				t.Errorf("consumed from queue %v, send result says %d", got.Queue, s.res.MessageQueue.QueueId)
			}
			if want := s.res.QueueOffset + int64(s.pos); got.QueueOffset != want {
				t.Errorf("queue offset %d, want %d (send result %d + position %d)", got.QueueOffset, want, s.res.QueueOffset, s.pos)
			}
			switch s.mode {
			case "sync", "async":
				if got.MsgId != s.res.MsgID {
					t.Errorf("msgId %q, send result %q", got.MsgId, s.res.MsgID)
				}
				if got.OffsetMsgId != s.res.OffsetMsgID {
					t.Errorf("offsetMsgId %q, send result %q", got.OffsetMsgId, s.res.OffsetMsgID)
				}
			case "batch":
				if s.pos < len(batchOffsetIDs) && got.OffsetMsgId != batchOffsetIDs[s.pos] {
					t.Errorf("offsetMsgId %q, batch send result lists %q at %d", got.OffsetMsgId, batchOffsetIDs[s.pos], s.pos)
				}
			}
		})
	}
	if d := col.dups(); len(d) > 0 {
		t.Errorf("single consumer received duplicates: %v", d)
	}
}

// checkSameMessage compares what the application sees of a consumed message
// with what was sent.
func checkSameMessage(t *testing.T, want *primitive.Message, got *primitive.MessageExt) {
	t.Helper()
	if got == nil {
		t.Fatal("not consumed")
	}
	if got.Topic != want.Topic {
		t.Errorf("topic %q, want %q", got.Topic, want.Topic)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("body %q, want %q", trimBody(got.Body), trimBody(want.Body))
	}
	if got.GetTags() != want.GetTags() {
		t.Errorf("tags %q, want %q", got.GetTags(), want.GetTags())
	}
	if got.GetKeys() != want.GetKeys() {
		t.Errorf("keys %q, want %q", got.GetKeys(), want.GetKeys())
	}
	for k, v := range want.GetProperties() {
		if k == primitive.PropertyUniqueClientMessageIdKeyIndex {
			continue // checked against msgId by the caller
		}
		if g := got.GetProperty(k); g != v {
			t.Errorf("property %s = %q, want %q", k, g, v)
		}
	}
}

func trimBody(b []byte) []byte {
	if len(b) > 64 {
		return append(b[:64:64], "..."...)
	}
	return b
}

// TestCompressedBodyRoundTrip sends bodies around the Go client's 4 KiB
// compression threshold: the broker must store the compressed bytes and the
// compressed flag untouched, so the consumer can inflate them.
func TestCompressedBodyRoundTrip(t *testing.T) {
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	rng := rand.New(rand.NewSource(42))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")

	tests := []struct {
		name           string
		size           int
		wantCompressed bool
	}{
		{name: "just under the threshold", size: 4095, wantCompressed: false},
		{name: "exactly 4 KiB", size: 4096, wantCompressed: true},
		{name: "64 KiB", size: 64 << 10, wantCompressed: true},
		{name: "1 MiB", size: 1 << 20, wantCompressed: true},
	}
	msgs := make([]*primitive.Message, len(tests))
	ids := make([]string, len(tests))
	for i, tc := range tests {
		var b bytes.Buffer
		for b.Len() < tc.size {
			b.WriteString(words[rng.Intn(len(words))])
			fmt.Fprintf(&b, " %d ", rng.Intn(1000))
		}
		ids[i] = fmt.Sprintf("size-%d", tc.size)
		msgs[i] = testMsg(topic, ids[i], b.Bytes()[:tc.size])
	}
	sendAll(t, prod, msgs)
	waitRoute(t, p, topic)
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
	waitAll(t, consumeTimeout, ids, col)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := col.first(ids[i])
			if !bytes.Equal(got.Body, msgs[i].Body) {
				t.Fatalf("body of %d bytes differs from the %d bytes sent", len(got.Body), len(msgs[i].Body))
			}
			if compressed := got.SysFlag&primitive.FlagCompressed != 0; compressed != tc.wantCompressed {
				t.Errorf("sysFlag %#x: compressed=%v, want %v", got.SysFlag, compressed, tc.wantCompressed)
			}
		})
	}
}
