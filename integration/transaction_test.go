package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// Transactional messages with the stock Go client (NewTransactionProducer):
//
//	SendMessageInTransaction ──half──▶ broker ──▶ ExecuteLocalTransaction
//	   commit / rollback ──END_TRANSACTION (oneway)──▶ broker
//	   unknown ──▶ broker checks every transactionCheckInterval ──CHECK_TRANSACTION_STATE──▶
//	              a live producer of the group ──CheckLocalTransaction──▶ END_TRANSACTION
//
// The broker runs with 1 s timeout and interval so checks come quickly, and
// 100 checks so a "canary" transaction that always answers unknown is asked
// once per pass: its check count is the test's clock of broker passes.
// "Exactly once" is measured on the broker (the sum of the topic's queue
// max offsets is the number of stored messages), not only on a consumer.

var txBrokerConf = []string{"transactionCheckInterval=1000", "transactionTimeOut=1000", "transactionCheckMax=100"}

const txCanary = "canary"

// txScript is what a listener answers for one message id.
type txScript struct {
	exec  primitive.LocalTransactionState
	check primitive.LocalTransactionState
	gate  chan struct{} // when set, ExecuteLocalTransaction waits for it to close
}

// txListener answers from scripts by the idProp of each message and counts
// the calls.
type txListener struct {
	mu      sync.Mutex
	scripts map[string]txScript
	execs   map[string]int
	checks  map[string]int
	entered map[string]chan struct{} // closed when the execution of the id starts
}

func newTxListener(scripts map[string]txScript) *txListener {
	l := &txListener{scripts: scripts, execs: map[string]int{}, checks: map[string]int{}, entered: map[string]chan struct{}{}}
	for id := range scripts {
		l.entered[id] = make(chan struct{})
	}
	return l
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	id := m.GetProperty(idProp)
	l.mu.Lock()
	s, ok := l.scripts[id]
	l.execs[id]++
	if ch := l.entered[id]; ch != nil && l.execs[id] == 1 {
		close(ch)
	}
	l.mu.Unlock()
	if !ok {
		return primitive.UnkonwnState
	}
	if s.gate != nil {
		<-s.gate
	}
	return s.exec
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	id := m.GetProperty(idProp)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks[id]++
	if s, ok := l.scripts[id]; ok {
		return s.check
	}
	return primitive.UnkonwnState
}

func (l *txListener) checked(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[id]
}

func (l *txListener) counts() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("executions %v, checks %v", l.execs, l.checks)
}

// newTxProducer starts a transaction producer of group with its own instance.
func newTxProducer(t *testing.T, ns, group string, l *txListener) (rocketmq.TransactionProducer, func()) {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(group),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatalf("new transaction producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start transaction producer: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := p.Shutdown(); err != nil {
				t.Errorf("transaction producer shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return p, stop
}

// sendTx sends one transactional message and requires SEND_OK.
func sendTx(t *testing.T, p rocketmq.TransactionProducer, topic, id string) *primitive.TransactionSendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.SendMessageInTransaction(ctx, testMsg(topic, id, bodyFor(id)))
	if err != nil {
		t.Fatalf("transactional send %s: %v", id, err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("transactional send %s: status %d", id, res.Status)
	}
	return res
}

// storedCount is the number of messages stored on topic: the sum of its
// queues' max offsets.
func storedCount(t *testing.T, p *harness.Process, topic string) int64 {
	t.Helper()
	route := waitRoute(t, p, topic)
	cl := rawClient(t)
	var total int64
	for q := 0; q < int(route.QueueDatas[0].ReadQueueNums); q++ {
		req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil)
		resp, err := cl.InvokeTimeout(p.BrokerAddr(), req, 3*time.Second)
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("GET_MAX_OFFSET %s/%d: %v %v", topic, q, err, resp)
		}
		n, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		if err != nil {
			t.Fatalf("GET_MAX_OFFSET %s/%d: offset %q", topic, q, resp.ExtFields["offset"])
		}
		total += n
	}
	return total
}

// waitPasses waits until the canary has been checked n more times, so the
// broker made at least n-1 whole passes since the call.
func waitPasses(t *testing.T, l *txListener, n int) {
	t.Helper()
	from := l.checked(txCanary)
	harness.WaitFor(t, consumeTimeout, func() error {
		if got := l.checked(txCanary) - from; got < n {
			return fmt.Errorf("canary checked %d more times, want %d (%s)", got, n, l.counts())
		}
		return nil
	})
}

// waitProducers waits until the broker lists n connections of a producer group.
func waitProducers(t *testing.T, p *harness.Process, group string, n int) {
	t.Helper()
	cl := rawClient(t)
	harness.WaitFor(t, routeTimeout, func() error {
		req := remoting.NewRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil)
		resp, err := cl.InvokeTimeout(p.BrokerAddr(), req, 3*time.Second)
		if err != nil {
			return err
		}
		if n == 0 && resp.Code != remoting.Success {
			return nil // stock answers SYSTEM_ERROR for a group without connections
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("GET_PRODUCER_CONNECTION_LIST %s: code %d %q", group, resp.Code, resp.Remark)
		}
		var body remoting.ProducerConnection
		if err := remoting.UnmarshalBody(resp.Body, &body); err != nil {
			return err
		}
		if len(body.ConnectionSet) != n {
			return fmt.Errorf("group %s has %d producer connections, want %d", group, len(body.ConnectionSet), n)
		}
		return nil
	})
}

func TestTransactionGoClientDecisions(t *testing.T) {
	p := ownRMQ(t, txBrokerConf...)
	topic, group := uniqueName(t, "t"), uniqueName(t, "pg")
	cases := []struct {
		id         string
		exec       primitive.LocalTransactionState
		check      primitive.LocalTransactionState
		wantStored bool
		wantCheck  bool
	}{
		{id: "commit", exec: primitive.CommitMessageState, check: primitive.RollbackMessageState, wantStored: true},
		{id: "rollback", exec: primitive.RollbackMessageState, check: primitive.CommitMessageState},
		{id: "unknown-then-commit", exec: primitive.UnkonwnState, check: primitive.CommitMessageState, wantStored: true, wantCheck: true},
		{id: "unknown-then-rollback", exec: primitive.UnkonwnState, check: primitive.RollbackMessageState, wantCheck: true},
	}
	scripts := map[string]txScript{txCanary: {exec: primitive.UnkonwnState, check: primitive.UnkonwnState}}
	for _, c := range cases {
		scripts[c.id] = txScript{exec: c.exec, check: c.check}
	}
	l := newTxListener(scripts)
	prod, _ := newTxProducer(t, p.NamesrvAddr(), group, l)
	sendTx(t, prod, topic, txCanary)
	results := make(map[string]*primitive.TransactionSendResult)
	for _, c := range cases {
		res := sendTx(t, prod, topic, c.id)
		if res.State != c.exec || res.MsgID == "" {
			t.Fatalf("%s: state %d msgId %q", c.id, res.State, res.MsgID)
		}
		results[c.id] = res
	}

	col := newCollector()
	waitRoute(t, p, topic)
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
	var stored []string
	for _, c := range cases {
		if c.wantStored {
			stored = append(stored, c.id)
		}
	}
	waitAll(t, consumeTimeout, stored, col)
	harness.WaitFor(t, consumeTimeout, func() error {
		for _, c := range cases {
			if c.wantCheck && l.checked(c.id) == 0 {
				return fmt.Errorf("%s not checked yet (%s)", c.id, l.counts())
			}
		}
		return nil
	})
	waitPasses(t, l, 3)

	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			want := 0
			if c.wantStored {
				want = 1
			}
			if got := col.count(c.id); got != want {
				t.Fatalf("consumed %d times, want %d", got, want)
			}
			if checked := l.checked(c.id); c.wantCheck != (checked > 0) {
				t.Fatalf("checked %d times, want checks: %v", checked, c.wantCheck)
			}
			if !c.wantStored {
				return
			}
			m := col.first(c.id)
			checkSameMessage(t, testMsg(topic, c.id, bodyFor(c.id)), m)
			if m.MsgId != results[c.id].MsgID {
				t.Errorf("msgId %q, want the send's %q", m.MsgId, results[c.id].MsgID)
			}
			if v := m.GetProperty(primitive.PropertyTransactionPrepared); v != "" {
				t.Errorf("consumed message keeps %s=%q", primitive.PropertyTransactionPrepared, v)
			}
		})
	}
	if n := storedCount(t, p, topic); n != int64(len(stored)) {
		t.Fatalf("%d messages stored on %s, want %d (%s)", n, topic, len(stored), l.counts())
	}
}

func TestTransactionCheckedByAnotherProducer(t *testing.T) {
	p := ownRMQ(t, txBrokerConf...)
	topic, group := uniqueName(t, "t"), uniqueName(t, "pg")

	// The first instance sends and dies without deciding.
	dying := newTxListener(map[string]txScript{"orphan": {exec: primitive.UnkonwnState, check: primitive.UnkonwnState}})
	a, stopA := newTxProducer(t, p.NamesrvAddr(), group, dying)
	sendTx(t, a, topic, "orphan")
	stopA()
	waitProducers(t, p, group, 0)

	// Another instance of the group knows the transaction committed.
	alive := newTxListener(map[string]txScript{
		"orphan":  {check: primitive.CommitMessageState},
		"b-first": {exec: primitive.CommitMessageState, check: primitive.RollbackMessageState},
		txCanary:  {exec: primitive.UnkonwnState, check: primitive.UnkonwnState},
	})
	b, _ := newTxProducer(t, p.NamesrvAddr(), group, alive)
	sendTx(t, b, topic, "b-first")
	sendTx(t, b, topic, txCanary)
	waitProducers(t, p, group, 1)

	col := newCollector()
	waitRoute(t, p, topic)
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
	waitAll(t, consumeTimeout, []string{"orphan", "b-first"}, col)
	waitPasses(t, alive, 3)
	if alive.checked("orphan") == 0 {
		t.Fatalf("the live instance was never asked (%s)", alive.counts())
	}
	if n := col.count("orphan"); n != 1 {
		t.Fatalf("orphan consumed %d times", n)
	}
	if n := storedCount(t, p, topic); n != 2 {
		t.Fatalf("%d messages stored, want 2 (%s / dead instance: %s)", n, alive.counts(), dying.counts())
	}
}

func TestTransactionRestartBetweenHalfAndDecision(t *testing.T) {
	cases := []struct {
		name string
		// restartAfterDecision restarts once the decision was made instead of
		// between the half send and the decision.
		restartAfterDecision bool
	}{
		{name: "restart before the decision"},
		{name: "restart after the decision", restartAfterDecision: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ownRMQ(t, txBrokerConf...)
			topic, group := uniqueName(t, "t"), uniqueName(t, "pg")
			gate := make(chan struct{})
			l := newTxListener(map[string]txScript{
				"tx":     {exec: primitive.CommitMessageState, check: primitive.CommitMessageState, gate: gate},
				txCanary: {exec: primitive.UnkonwnState, check: primitive.UnkonwnState},
			})
			prod, _ := newTxProducer(t, p.NamesrvAddr(), group, l)
			sendTx(t, prod, topic, txCanary)

			sent := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				_, err := prod.SendMessageInTransaction(ctx, testMsg(topic, "tx", bodyFor("tx")))
				sent <- err
			}()
			l.mu.Lock()
			entered := l.entered["tx"]
			l.mu.Unlock()
			select {
			case <-entered:
			case <-time.After(sendTimeout):
				t.Fatal("the half message was not acknowledged")
			}
			restart := func() {
				if err := p.Stop(); err != nil {
					t.Fatalf("SIGTERM: %v", err)
				}
				if err := p.Restart(); err != nil {
					t.Fatalf("restart: %v", err)
				}
			}
			if !c.restartAfterDecision {
				restart()
			}
			close(gate)
			if err := <-sent; err != nil {
				t.Fatalf("transactional send: %v", err)
			}
			if c.restartAfterDecision {
				harness.WaitFor(t, consumeTimeout, func() error {
					if n := storedCount(t, p, topic); n != 1 {
						return fmt.Errorf("%d messages stored", n)
					}
					return nil
				})
				restart()
			}

			col := newCollector()
			waitRoute(t, p, topic)
			startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, col)
			waitAll(t, consumeTimeout, []string{"tx"}, col)
			// The producer re-registers with its next heartbeat; from then on
			// the canary is checked every pass.
			waitPasses(t, l, 3)
			if n := storedCount(t, p, topic); n != 1 {
				t.Fatalf("%d messages stored after the restart, want 1 (%s)", n, l.counts())
			}
			if n := col.count("tx"); n != 1 {
				t.Fatalf("consumed %d times", n)
			}
		})
	}
}
