package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// Delay-level checks with the stock Go client. Due time and lateness:
//
//	born ──send──▶ stored on SCHEDULE_TOPIC_XXXX at S ──(level delay d)──▶ due S+d
//	     ──deliver: re-stored on the real topic at D ──pull──▶ received R
//
// born ≤ S, so "never early" holds for R ≥ born + d on the client clock and
// for D ≥ S + d on the broker clock (S is read back with VIEW_MESSAGE_BY_ID
// from the send result's offsetMsgId). Lateness is R − (born + d): it includes
// the send and pull legs, so it overstates the scheduler's own lateness D − (S + d).

// scheduleTopic is where the broker parks delayed messages (one queue per level).
const scheduleTopic = "SCHEDULE_TOPIC_XXXX"

// stockLevelDelays are the first delay levels of the stock messageDelayLevel.
var stockLevelDelays = map[int]time.Duration{1: time.Second, 2: 5 * time.Second, 3: 10 * time.Second, 4: 30 * time.Second}

const (
	// earlyTolerance absorbs millisecond truncation of born and store timestamps.
	earlyTolerance = 5 * time.Millisecond
	// lateLimit bounds lateness on a noisy shared machine; measured values are logged.
	lateLimit = 2 * time.Second
)

// arrival is one delivery as the application saw it.
type arrival struct {
	msg *primitive.MessageExt
	at  time.Time
}

// arrivals records every delivery by the idProp identity, duplicates included.
type arrivals struct {
	mu   sync.Mutex
	byID map[string][]arrival
}

func newArrivals() *arrivals { return &arrivals{byID: make(map[string][]arrival)} }

func (a *arrivals) add(m *primitive.MessageExt) {
	at := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	id := m.GetProperty(idProp)
	a.byID[id] = append(a.byID[id], arrival{msg: m, at: at})
}

func (a *arrivals) get(id string) []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]arrival(nil), a.byID[id]...)
}

// seen returns the set of identities received so far.
func (a *arrivals) seen() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]bool, len(a.byID))
	for id := range a.byID {
		out[id] = true
	}
	return out
}

// wait waits until every id was received at least once.
func (a *arrivals) wait(t *testing.T, timeout time.Duration, ids []string) {
	t.Helper()
	harness.WaitFor(t, timeout, func() error {
		got := a.seen()
		var miss []string
		for _, id := range ids {
			if !got[id] {
				miss = append(miss, id)
			}
		}
		if len(miss) > 0 {
			return fmt.Errorf("%d of %d messages not received, e.g. %v", len(miss), len(ids), miss[:min(len(miss), 5)])
		}
		return nil
	})
}

// offsetsByQueue returns the distinct queue offsets received, per queue id.
func (a *arrivals) offsetsByQueue() map[int]map[int64]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int]map[int64]bool)
	for _, l := range a.byID {
		for _, r := range l {
			q := r.msg.Queue.QueueId
			if out[q] == nil {
				out[q] = make(map[int64]bool)
			}
			out[q][r.msg.QueueOffset] = true
		}
	}
	return out
}

// distinctCopies returns one delivery of id per distinct (queue, offset):
// the stored copies, without the consumer's own redeliveries.
func (a *arrivals) distinctCopies(id string) []*primitive.MessageExt {
	a.mu.Lock()
	defer a.mu.Unlock()
	type pos struct {
		q   int
		off int64
	}
	seen := make(map[pos]bool)
	var out []*primitive.MessageExt
	for _, r := range a.byID[id] {
		k := pos{r.msg.Queue.QueueId, r.msg.QueueOffset}
		if !seen[k] {
			seen[k] = true
			out = append(out, r.msg)
		}
	}
	return out
}

// delayedSend is one acknowledged send of a delayed message.
type delayedSend struct {
	id     string
	level  int
	result *primitive.SendResult
}

// sendDelayed sends one message per level in levels (SendSync, in order).
func sendDelayed(t *testing.T, send func(context.Context, ...*primitive.Message) (*primitive.SendResult, error), topic, prefix string, levels []int) []delayedSend {
	t.Helper()
	out := make([]delayedSend, len(levels))
	for i, level := range levels {
		id := fmt.Sprintf("%s-L%d-%d", prefix, level, i)
		m := testMsg(topic, id, bodyFor(id))
		m.WithTag("TagDelay")
		m.WithDelayTimeLevel(level)
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		r, err := send(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %s: %v", id, err)
		}
		if r.Status != primitive.SendOK {
			t.Fatalf("send %s: status %d, want SEND_OK", id, r.Status)
		}
		out[i] = delayedSend{id: id, level: level, result: r}
	}
	return out
}

func idsOf(sends []delayedSend) []string {
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.id
	}
	return ids
}

// viewStored reads the record an offsetMsgId points at (VIEW_MESSAGE_BY_ID).
func viewStored(cl *remoting.Client, brokerAddr, offsetMsgID string) (*primitive.MessageExt, error) {
	mid, err := primitive.UnmarshalMsgID([]byte(offsetMsgID))
	if err != nil {
		return nil, fmt.Errorf("offset msg id %q: %w", offsetMsgID, err)
	}
	req := remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(mid.Offset, 10)}, nil)
	resp, err := cl.InvokeTimeout(brokerAddr, req, 3*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("VIEW_MESSAGE_BY_ID %d: code %d %q", mid.Offset, resp.Code, resp.Remark)
	}
	msgs := primitive.DecodeMessage(resp.Body)
	if len(msgs) != 1 {
		return nil, fmt.Errorf("VIEW_MESSAGE_BY_ID %d: %d records decoded, want 1", mid.Offset, len(msgs))
	}
	return msgs[0], nil
}

// latencySummary returns the 50th and 99th percentiles and the maximum.
func latencySummary(ds []time.Duration) (p50, p99, maxD time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// startWarmConsumer starts a push consumer of group on topic calling fn, and
// returns once it has received a plain warm-up message from every queue of
// the topic: from then on every queue is assigned and its pull parked on the
// broker, so a delivery's arrival time measures the broker, not the client's
// first rebalance.
func startWarmConsumer(t *testing.T, p *harness.Process, send func(context.Context, ...*primitive.Message) (*primitive.SendResult, error), cc consumerConf, fn func(*primitive.MessageExt)) func() {
	t.Helper()
	return startWarmConsumerResult(t, p, send, cc, func(m *primitive.MessageExt) consumer.ConsumeResult {
		fn(m)
		return consumer.ConsumeSuccess
	})
}

// startWarmConsumerResult is startWarmConsumer with a listener that decides
// each message's result. Warm-up messages are acknowledged without calling fn.
func startWarmConsumerResult(t *testing.T, p *harness.Process, send func(context.Context, ...*primitive.Message) (*primitive.SendResult, error), cc consumerConf, fn func(*primitive.MessageExt) consumer.ConsumeResult) func() {
	t.Helper()
	queues := int(waitRoute(t, p, cc.topic).QueueDatas[0].ReadQueueNums)
	warmID := "warm-" + cc.group
	var mu sync.Mutex
	warmQueues := make(map[int]bool)
	stop := startConsumerResult(t, p.NamesrvAddr(), cc, func(m *primitive.MessageExt) consumer.ConsumeResult {
		if m.GetProperty(idProp) == warmID {
			mu.Lock()
			warmQueues[m.Queue.QueueId] = true
			mu.Unlock()
			return consumer.ConsumeSuccess
		}
		return fn(m)
	})
	sendWarm := func() {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		if _, err := send(ctx, testMsg(cc.topic, warmID, bodyFor(warmID))); err != nil {
			t.Fatalf("send warm-up: %v", err)
		}
	}
	// The producer spreads sends round-robin; each poll that still misses a
	// queue sends one more, in case other sends shared the rotation.
	for range queues {
		sendWarm()
	}
	harness.WaitFor(t, consumeTimeout, func() error {
		mu.Lock()
		n := len(warmQueues)
		mu.Unlock()
		if n < queues {
			sendWarm()
			return fmt.Errorf("consumer %s got warm-up messages from %d of %d queues", cc.group, n, queues)
		}
		return nil
	})
	return stop
}

// TestDelayLevelsNeverEarlyAndOnTime sends messages at levels 1–4 (1 s, 5 s,
// 10 s, 30 s) to a consumer that is already pulling, and checks each arrives
// no earlier than due, within lateLimit after, on the queue the producer
// chose, intact. The stored schedule records are checked too: queue
// level−1, the real topic and queue kept in REAL_TOPIC/REAL_QID, and a level
// above the maximum clamped to it.
func TestDelayLevelsNeverEarlyAndOnTime(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())

	// The topic exists once a first message is stored; the consumer needs its route.
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	got := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)

	var levels []int
	for round := 0; round < 3; round++ {
		for level := 1; level <= 4; level++ {
			levels = append(levels, level)
		}
	}
	sends := sendDelayed(t, prod.SendSync, topic, "d", levels)
	// Level 25 is clamped to the highest stock level (18, 2 h): only the stored record is checked.
	clamped := sendDelayed(t, prod.SendSync, topic, "clamp", []int{25})[0]

	cl := rawClient(t)
	for _, s := range append(append([]delayedSend(nil), sends...), clamped) {
		rec, err := viewStored(cl, p.BrokerAddr(), s.result.OffsetMsgID)
		if err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		wantLevel := min(s.level, 18)
		if rec.Topic != scheduleTopic || rec.Queue.QueueId != wantLevel-1 {
			t.Errorf("%s: stored on %s/%d, want %s/%d", s.id, rec.Topic, rec.Queue.QueueId, scheduleTopic, wantLevel-1)
		}
		if rec.GetProperty(primitive.PropertyDelayTimeLevel) != strconv.Itoa(wantLevel) {
			t.Errorf("%s: stored DELAY=%q, want %d", s.id, rec.GetProperty(primitive.PropertyDelayTimeLevel), wantLevel)
		}
		if rec.GetProperty(primitive.PropertyRealTopic) != topic || rec.GetProperty(primitive.PropertyRealQueueId) != strconv.Itoa(s.result.MessageQueue.QueueId) {
			t.Errorf("%s: stored REAL_TOPIC=%q REAL_QID=%q, want %s and %d", s.id, rec.GetProperty(primitive.PropertyRealTopic),
				rec.GetProperty(primitive.PropertyRealQueueId), topic, s.result.MessageQueue.QueueId)
		}
	}

	got.wait(t, consumeTimeout, idsOf(sends))

	lateByLevel := make(map[int][]time.Duration)
	schedLateByLevel := make(map[int][]time.Duration)
	pullByLevel := make(map[int][]time.Duration)
	for _, s := range sends {
		a := got.get(s.id)
		if len(a) != 1 {
			t.Errorf("%s: received %d times, want once", s.id, len(a))
		}
		m, at := a[0].msg, a[0].at
		delay := stockLevelDelays[s.level]
		due := time.UnixMilli(m.BornTimestamp).Add(delay)
		if at.Before(due.Add(-earlyTolerance)) {
			t.Errorf("%s (level %d): received %v before born+%v", s.id, s.level, due.Sub(at), delay)
		}
		late := at.Sub(due)
		lateByLevel[s.level] = append(lateByLevel[s.level], late)
		if late > lateLimit {
			t.Errorf("%s (level %d): received %v after born+%v, limit %v", s.id, s.level, late, delay, lateLimit)
		}

		// Broker clock: the delivered record was stored no earlier than the
		// schedule record's store time plus the delay.
		rec, err := viewStored(cl, p.BrokerAddr(), s.result.OffsetMsgID)
		if err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		schedLateByLevel[s.level] = append(schedLateByLevel[s.level], time.Duration(m.StoreTimestamp-rec.StoreTimestamp)*time.Millisecond-delay)
		pullByLevel[s.level] = append(pullByLevel[s.level], at.Sub(time.UnixMilli(m.StoreTimestamp)))
		if m.StoreTimestamp < rec.StoreTimestamp+delay.Milliseconds() {
			t.Errorf("%s (level %d): delivered at store time %d, scheduled at %d: %d ms early", s.id, s.level,
				m.StoreTimestamp, rec.StoreTimestamp, rec.StoreTimestamp+delay.Milliseconds()-m.StoreTimestamp)
		}

		switch {
		case m.Topic != topic || m.Queue.QueueId != s.result.MessageQueue.QueueId:
			t.Errorf("%s: delivered on %s/%d, want the producer's queue %s/%d", s.id, m.Topic, m.Queue.QueueId, topic, s.result.MessageQueue.QueueId)
		case string(m.Body) != string(bodyFor(s.id)) || m.GetTags() != "TagDelay":
			t.Errorf("%s: body %q tags %q, want %q TagDelay", s.id, m.Body, m.GetTags(), bodyFor(s.id))
		case m.MsgId != s.result.MsgID:
			t.Errorf("%s: msgId (UNIQ_KEY) %s, send result said %s", s.id, m.MsgId, s.result.MsgID)
		case m.ReconsumeTimes != 0:
			t.Errorf("%s: reconsumeTimes %d, want 0", s.id, m.ReconsumeTimes)
		case m.BornTimestamp != rec.BornTimestamp:
			t.Errorf("%s: bornTimestamp %d, schedule record has %d", s.id, m.BornTimestamp, rec.BornTimestamp)
		case m.GetProperty(primitive.PropertyRealTopic) != topic || m.GetProperty(primitive.PropertyRealQueueId) != strconv.Itoa(s.result.MessageQueue.QueueId):
			t.Errorf("%s: delivered REAL_TOPIC=%q REAL_QID=%q", s.id, m.GetProperty(primitive.PropertyRealTopic), m.GetProperty(primitive.PropertyRealQueueId))
		}
	}
	for level := 1; level <= 4; level++ {
		p50, p99, maxL := latencySummary(lateByLevel[level])
		s50, _, smax := latencySummary(schedLateByLevel[level])
		q50, _, qmax := latencySummary(pullByLevel[level])
		t.Logf("level %d (%v): %d messages; received after born+delay p50 %v p99 %v max %v; "+
			"of which delivery after store+delay p50 %v max %v, pull after delivery p50 %v max %v",
			level, stockLevelDelays[level], len(lateByLevel[level]), p50, p99, maxL, s50, smax, q50, qmax)
	}
}

// delayOffsetFile is config/delayOffset.json under a store directory.
func delayOffsetFile(storeDir string) string {
	return filepath.Join(storeDir, "config", "delayOffset.json")
}

var offsetEntry = regexp.MustCompile(`"?(\d+)"?\s*:\s*(-?\d+)`)

// readDelayOffsets parses delayOffset.json ({"offsetTable":{"1":23}}, bare
// keys accepted as Java writes them). A missing file is empty.
func readDelayOffsets(storeDir string) (map[int]int64, error) {
	b, err := os.ReadFile(delayOffsetFile(storeDir))
	if os.IsNotExist(err) {
		return map[int]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int]int64)
	for _, m := range offsetEntry.FindAllSubmatch(b, -1) {
		level, _ := strconv.Atoi(string(m[1]))
		off, _ := strconv.ParseInt(string(m[2]), 10, 64)
		out[level] = off
	}
	return out, nil
}

// queueMaxOffsets asks the broker for the max offset of queues 0..n-1 of topic.
func queueMaxOffsets(cl *remoting.Client, brokerAddr, topic string, n int) (map[int]int64, error) {
	out := make(map[int]int64, n)
	for q := 0; q < n; q++ {
		req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil)
		resp, err := cl.InvokeTimeout(brokerAddr, req, 3*time.Second)
		if err != nil {
			return nil, err
		}
		if resp.Code != remoting.Success {
			return nil, fmt.Errorf("GET_MAX_OFFSET %s/%d: code %d %q", topic, q, resp.Code, resp.Remark)
		}
		off, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("GET_MAX_OFFSET %s/%d: offset %q", topic, q, resp.ExtFields["offset"])
		}
		out[q] = off
	}
	return out, nil
}

// TestDelayedMessagesSurviveKill crashes the broker (SIGKILL, SYNC_FLUSH)
// with delayed messages in three states and checks, by reading the real
// topic from the start with a fresh group after the restart:
//
//	A  level 1, delivered, progress persisted in delayOffset.json   → exactly one copy
//	C  level 1, delivered just before the kill                      → two copies if its schedule-queue
//	                                                                  offset ≥ the persisted one, else one
//	B  level 3 (10 s), acknowledged and still pending at the kill   → one copy each (two only for a B
//	                                                                  stored before the kill past the
//	                                                                  persisted offset)
//
// and that no copy was stored before its due time, every copy keeps its
// UNIQ_KEY, and the consumer that lived through the crash receives every B.
func TestDelayedMessagesSurviveKill(t *testing.T) {
	t.Parallel()
	// delayOffset.json every 2 s: A can be waited for, and C's progress is
	// usually not yet written when the broker is killed right after C arrives.
	p := ownRMQ(t, "flushDiskType=SYNC_FLUSH", "flushDelayOffsetInterval=2000",
		"mappedFileSizeCommitLog=4194304", "maxMessageSize=262144")
	topic := uniqueName(t, "t")
	prod, stopProd := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	live := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, live.add)

	const nA, nB, nC = 30, 200, 30
	repeat := func(level, n int) []int {
		l := make([]int, n)
		for i := range l {
			l[i] = level
		}
		return l
	}
	sendsA := sendDelayed(t, prod.SendSync, topic, "a", repeat(1, nA))
	live.wait(t, consumeTimeout, idsOf(sendsA))
	harness.WaitFor(t, consumeTimeout, func() error {
		offs, err := readDelayOffsets(p.StoreDir())
		if err != nil {
			return err
		}
		if offs[1] < nA {
			return fmt.Errorf("delayOffset.json level 1 = %d, want >= %d (A persisted); file: %v", offs[1], nA, offs)
		}
		return nil
	})

	bSentAt := time.Now()
	sendsB := sendDelayed(t, prod.SendSync, topic, "b", repeat(3, nB))
	sendsC := sendDelayed(t, prod.SendSync, topic, "c", repeat(1, nC))
	live.wait(t, consumeTimeout, idsOf(sendsC))
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAfter := time.Since(bSentAt)
	seenBeforeKill := live.seen()
	persisted, err := readDelayOffsets(p.StoreDir())
	if err != nil {
		t.Fatalf("read delayOffset.json after the kill: %v", err)
	}
	bSeen := 0
	for _, s := range sendsB {
		if seenBeforeKill[s.id] {
			bSeen++
		}
	}
	t.Logf("killed %v after the first B send; B received before the kill: %d of %d; persisted delay offsets %v",
		killedAfter.Round(time.Millisecond), bSeen, nB, persisted)
	stopProd()

	if err := p.Restart(); err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
	route := waitRoute(t, p, topic)
	// The consumer that lived through the crash gets every pending message.
	live.wait(t, consumeTimeout, idsOf(sendsB))

	// A fresh group reads the real topic from the start, to its end: every
	// copy the scheduler stored, each at its own (queue, offset).
	cl := rawClient(t)
	copies := newArrivals()
	startConsumerFunc(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, copies.add)
	queues := int(route.QueueDatas[0].ReadQueueNums)
	harness.WaitFor(t, consumeTimeout, func() error {
		maxOffs, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, queues)
		if err != nil {
			return err
		}
		read := copies.offsetsByQueue()
		for q, hi := range maxOffs {
			if int64(len(read[q])) < hi {
				return fmt.Errorf("fresh group read %d of %d offsets of queue %d", len(read[q]), hi, q)
			}
		}
		return nil
	})

	// Where each message sat in its level's queue decides whether its
	// delivery was covered by the persisted progress.
	sched := make(map[string]*primitive.MessageExt)
	for _, s := range append(append(append([]delayedSend(nil), sendsA...), sendsB...), sendsC...) {
		rec, err := viewStored(cl, p.BrokerAddr(), s.result.OffsetMsgID)
		if err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		sched[s.id] = rec
	}
	uniq := make(map[string]bool)
	dups := map[string]int{}
	check := func(batch string, sends []delayedSend, allSeenBeforeKill bool) {
		for _, s := range sends {
			rec := sched[s.id]
			cs := copies.distinctCopies(s.id)
			// A delivery at or after the persisted offset is repeated after
			// the restart; B messages not yet received may or may not have
			// been stored before the kill.
			rewound := rec.QueueOffset >= persisted[s.level]
			delivered := seenBeforeKill[s.id]
			lo, hi := 1, 1
			switch {
			case rewound && delivered:
				lo, hi = 2, 2
			case rewound && !allSeenBeforeKill:
				hi = 2
			}
			if len(cs) < lo || len(cs) > hi {
				t.Errorf("%s %s (level %d, schedule offset %d, persisted %d, received before the kill %v): %d copies on the topic, want %d..%d",
					batch, s.id, s.level, rec.QueueOffset, persisted[s.level], delivered, len(cs), lo, hi)
			}
			if len(cs) > 1 {
				dups[batch]++
			}
			delay := stockLevelDelays[s.level]
			for _, c := range cs {
				uniq[c.MsgId] = true
				if c.MsgId != s.result.MsgID {
					t.Errorf("%s: copy at %d/%d has UNIQ_KEY %s, send result said %s", s.id, c.Queue.QueueId, c.QueueOffset, c.MsgId, s.result.MsgID)
				}
				if c.StoreTimestamp < rec.StoreTimestamp+delay.Milliseconds() {
					t.Errorf("%s: copy at %d/%d stored at %d, due at %d", s.id, c.Queue.QueueId, c.QueueOffset,
						c.StoreTimestamp, rec.StoreTimestamp+delay.Milliseconds())
				}
			}
		}
	}
	check("A", sendsA, true)
	check("B", sendsB, false)
	check("C", sendsC, true)
	if len(uniq) != nA+nB+nC {
		t.Errorf("%d distinct UNIQ_KEYs on the topic, want %d", len(uniq), nA+nB+nC)
	}
	t.Logf("after the restart: %d distinct UNIQ_KEYs; duplicated (progress not persisted): A %d, B %d, C %d",
		len(uniq), dups["A"], dups["B"], dups["C"])
}
