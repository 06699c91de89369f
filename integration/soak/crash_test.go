package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/integration/harness"
)

// The crash-loop soak (make soak-crash; not part of make test): a
// SYNC_FLUSH rmq standalone in its own process takes plain, delay-level,
// timer and transactional messages from the stock Go client while it is
// killed with SIGKILL and restarted SOAK_CYCLES times (default 30). A push
// consumer runs throughout. After the last restart everything is drained and
// the test prints
//
//	acked      sends the broker acknowledged (SEND_OK; for a transaction,
//	           SEND_OK of the half message and a COMMIT decision)
//	lost       acknowledged messages never delivered
//	duplicates deliveries beyond the first (at-least-once allows them)
//	early      deliveries before their due time (delay level or timer)
//
// and fails unless lost and early are both 0. Timing varies from run to
// run (SOAK_SEED fixes the random choices); the verdict does not.

const (
	idProp  = "soakid"
	dueProp = "soakdue" // unix ms the message may be delivered at, for delay and timer kinds
)

// delayLevels are the broker's messageDelayLevel: short, so a run drains fast.
var delayLevels = []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}

// earlyTolerance absorbs the millisecond truncation of timestamps.
const earlyTolerance = 5 * time.Millisecond

type kind int

const (
	plain kind = iota
	delay
	timer
	txn
	numKinds
)

func (k kind) String() string { return [...]string{"plain", "delay", "timer", "txn"}[k] }

// ledger is what the producers had acknowledged and what the consumer got.
type ledger struct {
	mu        sync.Mutex
	acked     map[string]kind
	due       map[string]time.Time // delay and timer kinds
	delivered map[string]int
	early     map[string]time.Duration
	maxDue    time.Time
	sendErrs  [numKinds]int
	// lastHalf is the largest RMQ_SYS_TRANS_HALF_TOPIC queue offset of an
	// acknowledged transaction's half message (-1: none), the point the
	// broker's transaction check must pass before every such transaction
	// is settled (the failover soak's drain).
	lastHalf int64
}

func newLedger() *ledger {
	return &ledger{acked: map[string]kind{}, due: map[string]time.Time{}, delivered: map[string]int{}, early: map[string]time.Duration{},
		lastHalf: -1}
}

// ackHalf records an acknowledged transaction's half message offset: the
// send response's queueOffset, which for a half is its offset in queue 0 of
// RMQ_SYS_TRANS_HALF_TOPIC (the broker stores the half there before it
// answers; the response's queue is the real topic's).
func (l *ledger) ackHalf(off int64) {
	l.mu.Lock()
	l.lastHalf = max(l.lastHalf, off)
	l.mu.Unlock()
}

func (l *ledger) ack(id string, k kind, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[id] = k
	if !due.IsZero() {
		l.due[id] = due
		if due.After(l.maxDue) {
			l.maxDue = due
		}
	}
}

func (l *ledger) failed(k kind) {
	l.mu.Lock()
	l.sendErrs[k]++
	l.mu.Unlock()
}

// deliver records one delivery received at now. The due time travels in the
// message itself, so deliveries of unacknowledged sends are judged too.
func (l *ledger) deliver(m *primitive.MessageExt, now time.Time) {
	id := m.GetProperty(idProp)
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delivered[id]++
	if v := m.GetProperty(dueProp); v != "" {
		ms, _ := strconv.ParseInt(v, 10, 64)
		if due := time.UnixMilli(ms); now.Before(due.Add(-earlyTolerance)) {
			l.early[id] = due.Sub(now)
		}
	}
}

// missing lists acknowledged ids not delivered yet.
func (l *ledger) missing() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id := range l.acked {
		if l.delivered[id] == 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// txListener commits every transaction it executed and answers check-backs
// from that record, as a producer whose local transactions all succeed. One
// listener serves every producer generation of a soak, so an id whose local
// transaction said COMMIT is answered COMMIT by whichever generation the
// check reaches.
//
// A check can also arrive before the local transaction ran: the broker
// checks a half older than transactionTimeOut (1 s in the soaks), and a
// half's SEND_OK can take longer than that to reach the producer while a
// master is slow or switching. Such an id is still being sent (pending) and
// is answered UNKNOWN, which the broker ignores and checks again later;
// ROLLBACK there would drop a half the producer is about to commit and
// acknowledge (its one-way COMMIT then finds nothing). Only an id that is
// neither done nor pending, a send that failed after the broker stored the
// half, is rolled back.
type txListener struct {
	mu      sync.Mutex
	done    map[string]bool
	pending map[string]int
}

func newTxListener() *txListener {
	return &txListener{done: map[string]bool{}, pending: map[string]int{}}
}

// begin marks id as being sent; the returned function ends that.
func (l *txListener) begin(id string) (end func()) {
	l.mu.Lock()
	l.pending[id]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.pending[id]--; l.pending[id] <= 0 {
			delete(l.pending, id)
		}
		l.mu.Unlock()
	}
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	l.mu.Lock()
	l.done[m.GetProperty(idProp)] = true
	l.mu.Unlock()
	return primitive.CommitMessageState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	id := m.GetProperty(idProp)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.done[id]:
		return primitive.CommitMessageState
	case l.pending[id] > 0:
		return primitive.UnkonwnState
	}
	return primitive.RollbackMessageState
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestCrashLoopSoak(t *testing.T) {
	if os.Getenv("SOAK_CRASH") == "" {
		t.Skip("the crash-loop soak runs with make soak-crash (SOAK_CRASH=1)")
	}
	cycles := envInt(t, "SOAK_CYCLES", 30)
	seed := uint64(envInt(t, "SOAK_SEED", int(time.Now().UnixNano()%1_000_000)))
	randDur := seededDurations(seed)
	t.Logf("soak: %d kill -9 cycles, seed %d", cycles, seed)
	rlog.SetLogLevel("fatal")

	bin := rmqBin(t)
	levels := ""
	for _, d := range delayLevels {
		levels += fmt.Sprintf("%ds ", int(d/time.Second))
	}
	p := harness.Start(t, harness.Config{Bin: bin, WorkDir: t.TempDir(), BrokerConf: []string{
		"flushDiskType=SYNC_FLUSH",
		"messageDelayLevel=" + levels[:len(levels)-1],
		"transactionCheckInterval=1000", "transactionTimeOut=1000", "transactionCheckMax=100",
		"mappedFileSizeCommitLog=4194304", "mappedFileSizeTimerLog=1048576",
	}})
	ns := primitive.NewPassthroughResolver([]string{p.NamesrvAddr()})
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "soak_" + stamp
	led := newLedger()

	prod, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("soak_pg_"+stamp),
		producer.WithInstanceName("soak_pi_"+stamp), producer.WithRetry(1), producer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	txl := newTxListener()
	txProd, err := rocketmq.NewTransactionProducer(txl, producer.WithNsResolver(ns), producer.WithGroupName("soak_tx_"+stamp),
		producer.WithInstanceName("soak_ti_"+stamp), producer.WithRetry(1), producer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface{ Start() error }{prod, txProd} {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer prod.Shutdown()
	defer txProd.Shutdown()
	// The topic exists before the consumer subscribes (auto-created by a send).
	ctx := context.Background()
	warm := primitive.NewMessage(topic, []byte("warm-up"))
	if _, err := prod.SendSync(ctx, warm); err != nil {
		t.Fatalf("first send: %v", err)
	}

	startConsumer(t, ns, "soak", stamp, led, topic)

	// Senders run through every cycle: sends while the broker is down fail
	// and are not acknowledged.
	sender := &mixedSender{topic: topic, prod: prod, txProd: txProd, txl: txl, led: led, randDur: randDur}
	stop := sender.run(4)
	for c := 1; c <= cycles; c++ {
		time.Sleep(randDur(300*time.Millisecond, 2500*time.Millisecond))
		if err := p.Kill(); err != nil {
			t.Fatalf("cycle %d: kill: %v", c, err)
		}
		if err := p.Restart(); err != nil {
			t.Fatalf("cycle %d: restart: %v", c, err)
		}
		led.mu.Lock()
		t.Logf("cycle %d/%d: %d acked, %d delivered ids so far", c, cycles, len(led.acked), len(led.delivered))
		led.mu.Unlock()
	}
	stop()

	drain(t, led)

	led.mu.Lock()
	defer led.mu.Unlock()
	perKind := [numKinds]int{}
	for _, k := range led.acked {
		perKind[k]++
	}
	dups := 0
	for _, n := range led.delivered {
		dups += n - 1
	}
	unacked := 0
	for id := range led.delivered {
		if _, ok := led.acked[id]; !ok {
			unacked++
		}
	}
	lostIDs := []string{}
	for id := range led.acked {
		if led.delivered[id] == 0 {
			lostIDs = append(lostIDs, id)
		}
	}
	sort.Strings(lostIDs)
	summary := fmt.Sprintf("soak-crash: cycles=%d seed=%d acked=%d (plain %d, delay %d, timer %d, txn %d) lost=%d duplicates=%d early=%d "+
		"failed-sends=%v delivered-unacked=%d",
		cycles, seed, len(led.acked), perKind[plain], perKind[delay], perKind[timer], perKind[txn], len(lostIDs), dups, len(led.early),
		led.sendErrs, unacked)
	fmt.Println(summary)
	t.Log(summary)
	if len(lostIDs) > 0 {
		t.Errorf("lost %d acknowledged messages: %v", len(lostIDs), head(lostIDs, 20))
		t.Logf("rmq log tail (%s):\n%s", filepath.Base(p.StoreDir()), tail(p.Logs(), 4000))
	}
	if len(led.early) > 0 {
		t.Errorf("%d messages delivered early: %v", len(led.early), led.early)
	}
	if len(led.acked) == 0 {
		t.Error("nothing was acknowledged")
	}
}

// mixedSender sends plain, delay-level, timer and transactional messages in
// turn to one topic and records what was acknowledged in a ledger (the
// crash-loop and the replication soaks).
type mixedSender struct {
	topic   string
	prod    rocketmq.Producer
	txProd  rocketmq.TransactionProducer
	txl     *txListener // txProd's listener: told which ids are being sent
	led     *ledger
	randDur func(lo, hi time.Duration) time.Duration
	seq     atomic.Int64
	// onAck, when set, is told each acknowledged send's id and offset msgId
	// (where the master stored it: the topic, the schedule or timer topic,
	// or the half topic of a transaction).
	onAck func(id, offsetMsgID string)
	// pause, when set, is how long each worker waits between sends: a
	// soak that times something (the failover soak) keeps the load from
	// taking the cores the processes it times need.
	pause time.Duration
}

// send sends one message of kind k.
func (s *mixedSender) send(k kind) {
	id := fmt.Sprintf("%s-%d", k, s.seq.Add(1))
	m := primitive.NewMessage(s.topic, []byte("soak "+id))
	m.WithProperty(idProp, id)
	var due time.Time
	now := time.Now()
	switch k {
	case delay:
		lvl := 1 + int(s.randDur(0, time.Duration(len(delayLevels))))
		m.WithDelayTimeLevel(lvl)
		due = now.Add(delayLevels[lvl-1])
	case timer:
		due = now.Add(s.randDur(500*time.Millisecond, 4*time.Second)).Truncate(time.Millisecond)
		m.WithDelayTimestamp(due)
	}
	if !due.IsZero() {
		m.WithProperty(dueProp, strconv.FormatInt(due.UnixMilli(), 10))
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r *primitive.SendResult
	if k == txn {
		end := s.txl.begin(id)
		tr, err := s.txProd.SendMessageInTransaction(sctx, m)
		end()
		if err != nil || tr.Status != primitive.SendOK || tr.State != primitive.CommitMessageState {
			s.failed(k)
			return
		}
		r = tr.SendResult
		s.led.ackHalf(r.QueueOffset)
	} else {
		var err error
		if r, err = s.prod.SendSync(sctx, m); err != nil || r.Status != primitive.SendOK {
			s.failed(k)
			return
		}
	}
	s.led.ack(id, k, due)
	if s.onAck != nil {
		s.onAck(id, r.OffsetMsgID)
	}
}

// failed records a failed send and pauses the sender: with the broker (or
// its route) gone a send fails at once, and four senders retrying in a
// tight loop would take the cores the restart needs (the replication soak
// counted 685 000 failures per kind over 20 master kills without it).
func (s *mixedSender) failed(k kind) {
	s.led.failed(k)
	time.Sleep(failPause)
}

// failPause is how long a sender waits after a failed send.
const failPause = 10 * time.Millisecond

// run starts workers senders cycling through the kinds; the returned
// function stops them and waits.
func (s *mixedSender) run(workers int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				s.send(kind(i % int(numKinds)))
				if s.pause > 0 {
					time.Sleep(s.pause)
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// seededDurations returns a random duration in [lo, hi) per call, from
// seed (SOAK_SEED repeats a run's choices), safe for concurrent use.
func seededDurations(seed uint64) func(lo, hi time.Duration) time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed))
	var mu sync.Mutex
	return func(lo, hi time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startConsumer starts the soaks' push consumer (group <prefix>_cg_<stamp>,
// from the first offset) on topics, recording every delivery in led; it is
// shut down when t ends.
func startConsumer(t *testing.T, ns primitive.NsResolver, prefix, stamp string, led *ledger, topics ...string) {
	t.Helper()
	cons, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(prefix+"_cg_"+stamp),
		consumer.WithInstance(prefix+"_ci_"+stamp), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		err = cons.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				now := time.Now()
				for _, m := range msgs {
					led.deliver(m, now)
				}
				return consumer.ConsumeSuccess, nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cons.Shutdown() })
}

// rmqBin is the rmq binary a soak runs: RMQ_BIN (make builds bin/rmq), or
// one built for the test.
func rmqBin(t *testing.T) string {
	if bin := os.Getenv("RMQ_BIN"); bin != "" {
		return bin
	}
	bin, err := harness.BuildRMQ(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// drain waits until every acknowledged message was delivered and every due
// time passed (plus time for a late one to show up), at most
// SOAK_DRAIN_SECONDS (180 s).
func drain(t *testing.T, led *ledger) {
	deadline := time.Now().Add(time.Duration(envInt(t, "SOAK_DRAIN_SECONDS", 180)) * time.Second)
	for {
		led.mu.Lock()
		lastDue := led.maxDue
		led.mu.Unlock()
		if len(led.missing()) == 0 && time.Now().After(lastDue.Add(5*time.Second)) || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
