package transaction_test

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// The wire names and remarks the transaction tests expect (stock values;
// package transaction keeps its own unexported copies).
const (
	txCheckMaxTopic          = "TRANS_CHECK_MAX_TIME_TOPIC"
	txSysGroup               = "CID_RMQ_SYS_TRANS"
	txResumeCheckHalfMessage = int32(323) // RESUME_CHECK_HALF_MESSAGE

	txRemarkNotFound    = "Find prepared transaction message failed"
	txRemarkGroup       = "The producer group wrong"
	txRemarkTableOffset = "The transaction state table offset wrong"
	txRemarkBadDecision = "commitOrRollback field wrong"
)

// txEnv is a broker on a manual clock with a producer connection of group
// "PG" (the producerGroup brokertest.Send uses) that records the state checks it
// receives.
type txEnv struct {
	*testbroker.Broker
	t    *testing.T
	clk  *clock.Manual
	opts broker.Options
	logs *testutil.LockedBuffer
	prod *txProducer
}

// txProducer is a producer connection that records CHECK_TRANSACTION_STATE.
type txProducer = brokertest.TxProducer

// startTxBroker starts a broker with transactionTimeOut 6 s, check interval
// 60 s and 15 checks unless mutate says otherwise.
func startTxBroker(t *testing.T, mutate func(*broker.Options)) *txEnv {
	t.Helper()
	clk := clock.NewManual(time.Now().Truncate(time.Second))
	logs := &testutil.LockedBuffer{}
	o := testbroker.Options(t, func(o *broker.Options) {
		o.Clock = clk
		o.TransactionTimeOut = 6000
		o.TransactionCheckInterval = 60000
		o.TransactionCheckMax = 15
		if mutate != nil {
			mutate(o)
		}
	})
	o.Logger = zerolog.New(logs).Level(zerolog.InfoLevel)
	e := &txEnv{t: t, clk: clk, opts: o, logs: logs}
	e.Broker = testbroker.Start(t, o)
	e.prod = e.connectProducer("PG")
	return e
}

// restart stops the broker and starts it again on the same store directory,
// port and clock; the producer reconnects.
func (e *txEnv) restart() {
	e.t.Helper()
	e.prod.Cl.Close()
	e.Broker = e.Broker.Restart()
	e.prod = e.connectProducer("PG")
}

// txStats are the transaction service's counters.
func (e *txEnv) txStats() transaction.Stats { return e.Transactions().Stats() }

// storeHost is the broker's STOREHOST, as offsetMsgIds encode it.
func (e *txEnv) storeHost() netip.AddrPort {
	return netip.MustParseAddrPort(e.Broker.Broker.Addr())
}

// connectProducer opens a connection that heartbeats as a producer of group.
func (e *txEnv) connectProducer(group string) *txProducer {
	e.t.Helper()
	return brokertest.ConnectTxProducer(e.t, e.Broker.Broker.Addr(), group, strconv.Itoa(int(time.Now().UnixNano()%1e6)))
}

// sendHalf sends a transactional message (born now on the broker clock) and
// returns the response.
func (e *txEnv) sendHalf(topic string, queueID int32, uniq string, extra ...string) *remoting.Command {
	e.t.Helper()
	kv := append([]string{"TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", uniq, "TAGS", "tt"}, extra...)
	a := brokertest.Send{Topic: topic, QueueID: queueID, Body: []byte("body-" + uniq), SysFlag: message.TransactionPreparedType, Props: brokertest.Props(kv...)}
	ext := a.Ext()
	ext["g"] = strconv.FormatInt(e.clk.Now().UnixMilli(), 10)
	resp := e.Invoke(remoting.SendMessageV2, ext, a.Body)
	if resp.Code != remoting.Success {
		e.t.Fatalf("half send: code %d %q", resp.Code, resp.Remark)
	}
	return resp
}

// txRef names a half message the way END_TRANSACTION does.
type txRef struct {
	queueOffset int64
	phyOffset   int64
}

func (e *txEnv) refOf(resp *remoting.Command) txRef {
	e.t.Helper()
	_, phy, err := message.DecodeMessageID(resp.ExtFields["msgId"])
	if err != nil {
		e.t.Fatalf("msgId %q: %v", resp.ExtFields["msgId"], err)
	}
	return txRef{queueOffset: brokertest.ExtInt(e.t, resp, "queueOffset"), phyOffset: phy}
}

func (e *txEnv) checkRef(check *remoting.Command) txRef {
	e.t.Helper()
	q, err1 := strconv.ParseInt(check.ExtFields["tranStateTableOffset"], 10, 64)
	p, err2 := strconv.ParseInt(check.ExtFields["commitLogOffset"], 10, 64)
	if err1 != nil || err2 != nil {
		e.t.Fatalf("check header %v", check.ExtFields)
	}
	return txRef{queueOffset: q, phyOffset: p}
}

// end sends END_TRANSACTION as a request (so the reply can be read).
func (e *txEnv) end(ref txRef, decision int32, fromCheck bool, group string) *remoting.Command {
	e.t.Helper()
	return e.Invoke(remoting.EndTransaction, map[string]string{
		"producerGroup": group, "tranStateTableOffset": strconv.FormatInt(ref.queueOffset, 10),
		"commitLogOffset": strconv.FormatInt(ref.phyOffset, 10), "commitOrRollback": strconv.Itoa(int(decision)),
		"fromTransactionCheck": strconv.FormatBool(fromCheck), "msgId": "UNIQ",
	}, nil)
}

func (e *txEnv) mustEnd(ref txRef, decision int32, fromCheck bool) {
	e.t.Helper()
	if resp := e.end(ref, decision, fromCheck, "PG"); resp.Code != remoting.Success {
		e.t.Fatalf("end transaction %d: code %d %q", decision, resp.Code, resp.Remark)
	}
}

// messages returns every dispatched message of topic/queue.
func (e *txEnv) messages(topic string, queueID int32) []*message.MessageExt {
	e.t.Helper()
	e.WaitDispatched()
	res := e.Store().GetMessage(topic, queueID, 0, 1000, 64<<20, nil)
	if res.Status != store.Found {
		return nil
	}
	return brokertest.Records(e.t, res.Body())
}

// pass advances the clock by one check interval and waits for the pass.
func (e *txEnv) pass() {
	e.t.Helper()
	e.WaitDispatched()
	n := e.txStats().Passes
	e.clk.Advance(time.Duration(e.opts.TransactionCheckInterval) * time.Millisecond)
	testutil.WaitFor(e.t, testutil.DefaultTimeout, func() bool { return e.txStats().Passes > n }, "a check pass")
}

// waitChecks waits until the producer received n checks and the service
// sent exactly n.
func (e *txEnv) waitChecks(p *txProducer, n int) []*remoting.Command {
	e.t.Helper()
	testutil.WaitFor(e.t, testutil.DefaultTimeout, func() bool { return len(p.Received()) >= n }, strconv.Itoa(n)+" checks")
	got := p.Received()
	if len(got) != n {
		e.t.Fatalf("received %d checks, want %d", len(got), n)
	}
	return got
}

func TestTransactionEndDecisions(t *testing.T) {
	cases := []struct {
		name       string
		decision   int32
		fromCheck  bool
		wantStored bool
		wantOp     bool
	}{
		{name: "commit", decision: message.TransactionCommitType, wantStored: true, wantOp: true},
		{name: "rollback", decision: message.TransactionRollbackType, wantOp: true},
		{name: "commit from check", decision: message.TransactionCommitType, fromCheck: true, wantStored: true, wantOp: true},
		{name: "rollback from check", decision: message.TransactionRollbackType, fromCheck: true, wantOp: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startTxBroker(t, nil)
			e.sendHalf("TxT", 0, "warmup") // the half queue offset of the next one is 1, not 0
			resp := e.sendHalf("TxT", 2, "U-"+c.name)
			ref := e.refOf(resp)
			if ref.queueOffset != 1 || resp.ExtFields["queueId"] != "2" || resp.ExtFields["transactionId"] != "U-"+c.name {
				t.Fatalf("half send reply %v", resp.ExtFields)
			}
			halves := e.messages(message.TopicTransHalf, 0)
			if len(halves) != 2 {
				t.Fatalf("%d half messages", len(halves))
			}
			h := halves[1]
			if h.PhysicalOffset != ref.phyOffset || h.Properties["REAL_TOPIC"] != "TxT" || h.Properties["REAL_QID"] != "2" ||
				message.TransactionType(h.SysFlag) != message.TransactionNotType || h.QueueOffset != 1 {
				t.Fatalf("half message %+v props %v", h, h.Properties)
			}
			if n := len(e.messages("TxT", 2)); n != 0 {
				t.Fatalf("%d messages visible before the decision", n)
			}

			e.mustEnd(ref, c.decision, c.fromCheck)
			for range 2 { // a duplicate, and then the opposite decision, change nothing
				e.mustEnd(ref, c.decision, c.fromCheck)
				e.mustEnd(ref, message.TransactionCommitType+message.TransactionRollbackType-c.decision, false)
			}
			got := e.messages("TxT", 2)
			if !c.wantStored {
				if len(got) != 0 {
					t.Fatalf("rolled back message stored: %+v", got[0])
				}
			} else {
				if len(got) != 1 {
					t.Fatalf("%d committed messages, want 1", len(got))
				}
				m := got[0]
				if string(m.Body) != "body-U-"+c.name || m.Flag != 7 || m.Properties["UNIQ_KEY"] != "U-"+c.name ||
					m.Properties["PGROUP"] != "PG" || m.Properties["TAGS"] != "tt" {
					t.Fatalf("committed message %+v props %v", m, m.Properties)
				}
				for _, k := range []string{"REAL_TOPIC", "REAL_QID", "TRAN_MSG"} {
					if _, ok := m.Properties[k]; ok {
						t.Fatalf("committed message keeps %s: %v", k, m.Properties)
					}
				}
				if message.TransactionType(m.SysFlag) != message.TransactionCommitType || m.PreparedTransactionOffset != ref.phyOffset {
					t.Fatalf("committed sysFlag %#x preparedTransactionOffset %d", m.SysFlag, m.PreparedTransactionOffset)
				}
			}
			ops := e.messages(message.TopicTransOpHalf, 0)
			if !c.wantOp {
				if len(ops) != 0 {
					t.Fatalf("op entries %d", len(ops))
				}
				return
			}
			if len(ops) != 1 || string(ops[0].Body) != "1" || ops[0].Properties["TAGS"] != "d" {
				t.Fatalf("op entries %+v", ops)
			}
		})
	}
}

func TestTransactionUnknownDecisionLeavesTheMessage(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxU", 0, "U1"))
	req := remoting.NewRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": "PG", "tranStateTableOffset": strconv.FormatInt(ref.queueOffset, 10),
		"commitLogOffset": strconv.FormatInt(ref.phyOffset, 10), "commitOrRollback": "0", "msgId": "U1",
	}, nil)
	if err := e.JSON.Oneway(e.Broker.Broker.Addr(), req); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return strings.Contains(e.logs.String(), "still unknown") }, "the unknown answer to be logged")
	if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 0 {
		t.Fatalf("%d op entries after an unknown answer", n)
	}
	e.mustEnd(ref, message.TransactionRollbackType, false)
	if n := len(e.messages("TxU", 0)); n != 0 {
		t.Fatalf("%d messages", n)
	}
	if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 1 {
		t.Fatalf("%d op entries after unknown then rollback, want 1", n)
	}
}

func TestTransactionEndRefusals(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxR", 0, "U1"))
	plain := e.MustSend(brokertest.Send{Topic: "TxR", Body: []byte("plain"), Props: brokertest.Props("PGROUP", "PG")})
	_, plainPhy, _ := message.DecodeMessageID(plain.ExtFields["msgId"])
	cases := []struct {
		name   string
		ext    map[string]string
		remark string
	}{
		{name: "wrong group", ext: map[string]string{"producerGroup": "OTHER"}, remark: txRemarkGroup},
		{name: "wrong table offset", ext: map[string]string{"tranStateTableOffset": "7"}, remark: txRemarkTableOffset},
		{name: "no record there", ext: map[string]string{"commitLogOffset": "999999"}, remark: txRemarkNotFound},
		{name: "not a half message", ext: map[string]string{"commitLogOffset": strconv.FormatInt(plainPhy, 10), "tranStateTableOffset": "0"}, remark: txRemarkNotFound},
		{name: "bad decision", ext: map[string]string{"commitOrRollback": "5"}, remark: txRemarkBadDecision},
		{name: "missing msgId", ext: map[string]string{"msgId": ""}, remark: "msgId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := map[string]string{
				"producerGroup": "PG", "tranStateTableOffset": strconv.FormatInt(ref.queueOffset, 10),
				"commitLogOffset": strconv.FormatInt(ref.phyOffset, 10), "commitOrRollback": "8", "msgId": "U1",
			}
			for k, v := range c.ext {
				if v == "" {
					delete(ext, k)
				} else {
					ext[k] = v
				}
			}
			resp := e.Invoke(remoting.EndTransaction, ext, nil)
			if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.remark) {
				t.Fatalf("code %d remark %q, want SYSTEM_ERROR %q", resp.Code, resp.Remark, c.remark)
			}
		})
	}
	if n := len(e.messages("TxR", 0)); n != 1 {
		t.Fatalf("%d messages on TxR, want only the plain one", n)
	}
	if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 0 {
		t.Fatalf("%d op entries after refusals", n)
	}
}

func TestTransactionConcurrentCommitsApplyOnce(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxC", 1, "U1"))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := remoting.NewRequest(remoting.EndTransaction, map[string]string{
				"producerGroup": "PG", "tranStateTableOffset": strconv.FormatInt(ref.queueOffset, 10),
				"commitLogOffset": strconv.FormatInt(ref.phyOffset, 10), "commitOrRollback": "8", "msgId": "U1",
			}, nil)
			if resp, err := e.JSON.InvokeTimeout(e.Broker.Broker.Addr(), req, testutil.DefaultTimeout); err != nil || resp.Code != remoting.Success {
				t.Errorf("end transaction: %v %v", err, resp)
			}
		}()
	}
	wg.Wait()
	if n := len(e.messages("TxC", 1)); n != 1 {
		t.Fatalf("%d committed messages, want 1", n)
	}
	if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 1 {
		t.Fatalf("%d op entries, want 1", n)
	}
}

func TestTransactionCheckScheduling(t *testing.T) {
	cases := []struct {
		name       string
		timeoutMs  int64
		intervalMs int64
		// passes without a check before the first one
		quietPasses int
	}{
		{name: "stock defaults", timeoutMs: 6000, intervalMs: 60000, quietPasses: 0},
		{name: "interval shorter than timeout", timeoutMs: 6000, intervalMs: 2000, quietPasses: 2},
		{name: "interval equal to timeout", timeoutMs: 5000, intervalMs: 5000, quietPasses: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startTxBroker(t, func(o *broker.Options) {
				o.TransactionTimeOut, o.TransactionCheckInterval = c.timeoutMs, c.intervalMs
			})
			resp := e.sendHalf("TxS", 3, "U-check", "k", "v")
			ref := e.refOf(resp)
			for range c.quietPasses {
				e.pass()
				if n := len(e.prod.Received()); n != 0 {
					t.Fatalf("checked before the timeout (%d)", n)
				}
			}
			e.pass()
			check := e.waitChecks(e.prod, 1)[0]
			cr := e.checkRef(check)
			if cr.queueOffset != ref.queueOffset+1 || cr.phyOffset <= ref.phyOffset {
				t.Fatalf("check names %+v, want the copy after %+v", cr, ref)
			}
			h := check.ExtFields
			if h["msgId"] != "U-check" || h["transactionId"] != "U-check" || h["offsetMsgId"] != message.CreateMessageID(e.storeHost(), cr.phyOffset) {
				t.Fatalf("check header %v", h)
			}
			body := brokertest.Records(t, check.Body)
			if len(body) != 1 {
				t.Fatalf("check body holds %d records", len(body))
			}
			m := body[0]
			if m.Topic != "TxS" || m.QueueID != 3 || string(m.Body) != "body-U-check" || m.Flag != 7 || m.QueueOffset != cr.queueOffset ||
				m.PhysicalOffset != cr.phyOffset || m.Properties["PGROUP"] != "PG" || m.Properties["TRANSACTION_CHECK_TIMES"] != "1" ||
				m.Properties["k"] != "v" || m.Properties["UNIQ_KEY"] != "U-check" {
				t.Fatalf("check body %+v props %v", m, m.Properties)
			}

			// The answer commits the copy; later passes check nothing.
			e.mustEnd(cr, message.TransactionCommitType, true)
			for range 3 {
				e.pass()
			}
			e.waitChecks(e.prod, 1)
			got := e.messages("TxS", 3)
			if len(got) != 1 || got[0].PreparedTransactionOffset != cr.phyOffset || got[0].Flag != 7 || got[0].Properties["TRANSACTION_CHECK_TIMES"] != "1" {
				t.Fatalf("committed %+v", got)
			}
		})
	}
}

func TestTransactionCheckBudgetDiscardsAndResume(t *testing.T) {
	e := startTxBroker(t, func(o *broker.Options) {
		o.TransactionTimeOut, o.TransactionCheckInterval, o.TransactionCheckMax = 1000, 10000, 3
	})
	e.sendHalf("TxD", 0, "U-max")
	for i := 1; i <= 3; i++ {
		e.pass()
		checks := e.waitChecks(e.prod, i)
		if got := brokertest.Records(t, checks[i-1].Body)[0].Properties["TRANSACTION_CHECK_TIMES"]; got != strconv.Itoa(i) {
			t.Fatalf("check %d carries TRANSACTION_CHECK_TIMES=%s", i, got)
		}
	}
	e.pass()
	e.pass()
	e.waitChecks(e.prod, 3)
	dropped := e.messages(txCheckMaxTopic, 0)
	if len(dropped) != 1 || dropped[0].Properties["REAL_TOPIC"] != "TxD" || dropped[0].Properties["TRANSACTION_CHECK_TIMES"] != "3" {
		t.Fatalf("discarded messages %+v", dropped)
	}
	if tc := e.Topics().Get(txCheckMaxTopic); tc == nil || tc.WriteQueueNums != 1 {
		t.Fatalf("topic config %+v", tc)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "checked too many times") || !strings.Contains(logs, "U-max") {
		t.Fatalf("no discard log line in:\n%s", logs)
	}

	resp := e.Invoke(txResumeCheckHalfMessage, map[string]string{"msgId": dropped[0].MsgID}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("resume: %d %q", resp.Code, resp.Remark)
	}
	e.pass()
	checks := e.waitChecks(e.prod, 4)
	if got := brokertest.Records(t, checks[3].Body)[0].Properties["TRANSACTION_CHECK_TIMES"]; got != "1" {
		t.Fatalf("resumed check carries TRANSACTION_CHECK_TIMES=%s", got)
	}
	e.mustEnd(e.checkRef(checks[3]), message.TransactionCommitType, true)
	if n := len(e.messages("TxD", 0)); n != 1 {
		t.Fatalf("%d messages after the resumed commit", n)
	}
	if resp := e.Invoke(txResumeCheckHalfMessage, map[string]string{"msgId": "nonsense"}, nil); resp.Code != remoting.SystemError {
		t.Fatalf("resume of a bad id: %d", resp.Code)
	}
}

func TestTransactionLateDecisionAfterCheck(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxL", 0, "U-late"))
	e.pass()
	check := e.waitChecks(e.prod, 1)[0]
	// The producer's own decision arrives after the check copy was made,
	// and then its answer to the check: one message.
	e.mustEnd(ref, message.TransactionCommitType, false)
	e.mustEnd(e.checkRef(check), message.TransactionCommitType, true)
	for range 3 {
		e.pass()
	}
	e.waitChecks(e.prod, 1)
	if n := len(e.messages("TxL", 0)); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	if n := len(e.messages(message.TopicTransOpHalf, 0)); n != 1 {
		t.Fatalf("%d op entries, want 1", n)
	}
}

func TestTransactionChecksGoToALiveProducer(t *testing.T) {
	e := startTxBroker(t, nil)
	e.prod.Cl.Close() // the sending producer died
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Clients().Producers.AvailableConn("PG") == nil }, "the producer to be dropped")
	e.sendHalf("TxP", 0, "U-orphan")
	e.pass()
	if n := e.txStats().Checks; n != 0 {
		t.Fatalf("%d checks sent with no producer connected", n)
	}
	other := e.connectProducer("PG")
	e.pass()
	check := e.waitChecks(other, 1)[0]
	if got := brokertest.Records(t, check.Body)[0].Properties["TRANSACTION_CHECK_TIMES"]; got != "2" {
		t.Fatalf("TRANSACTION_CHECK_TIMES=%s, want 2 (the unanswered pass counts)", got)
	}
	e.mustEnd(e.checkRef(check), message.TransactionRollbackType, true)
	e.pass()
	e.waitChecks(other, 1)
	if n := len(e.messages("TxP", 0)); n != 0 {
		t.Fatalf("%d messages after rollback", n)
	}
}

func TestTransactionImmunityDelaysTheFirstCheck(t *testing.T) {
	e := startTxBroker(t, func(o *broker.Options) { o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 10000 })
	e.sendHalf("TxI", 0, "U-imm", "CHECK_IMMUNITY_TIME_IN_SECONDS", "25")
	e.pass()
	e.pass()
	if n := len(e.prod.Received()); n != 0 {
		t.Fatalf("checked within the immunity time (%d)", n)
	}
	e.pass()
	check := e.waitChecks(e.prod, 1)[0]
	m := brokertest.Records(t, check.Body)[0]
	if m.Properties["TRANSACTION_CHECK_TIMES"] != "1" || m.Properties["TRAN_PREPARED_QUEUE_OFFSET"] != "0" {
		t.Fatalf("check after immunity: %v", m.Properties)
	}
	if half := e.Store().MaxOffsetInQueue(message.TopicTransHalf, 0); half != 4 {
		t.Fatalf("half queue holds %d records, want original, 2 immunity copies and the check copy", half)
	}
}

func TestTransactionDelayAppliesOnCommit(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxDelay", 1, "U-delay", "DELAY", "2"))
	if halves := e.messages(message.TopicTransHalf, 0); len(halves) != 1 || halves[0].Properties["DELAY"] != "2" {
		t.Fatalf("the half message must keep DELAY and stay on the half topic: %+v", halves)
	}
	if n := len(e.messages("SCHEDULE_TOPIC_XXXX", 1)); n != 0 {
		t.Fatalf("half message delayed before the commit")
	}
	e.mustEnd(ref, message.TransactionCommitType, false)
	sched := e.messages("SCHEDULE_TOPIC_XXXX", 1)
	if len(sched) != 1 || sched[0].Properties["REAL_TOPIC"] != "TxDelay" || sched[0].Properties["REAL_QID"] != "1" ||
		message.TransactionType(sched[0].SysFlag) != message.TransactionCommitType {
		t.Fatalf("committed delayed message %+v", sched)
	}
	if n := len(e.messages("TxDelay", 1)); n != 0 {
		t.Fatalf("delivered before the delay")
	}
}

func TestTransactionProgressOffsets(t *testing.T) {
	e := startTxBroker(t, func(o *broker.Options) { o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 10000 })
	first := e.refOf(e.sendHalf("TxO", 0, "U1"))
	e.sendHalf("TxO", 0, "U2")
	e.mustEnd(first, message.TransactionCommitType, false)
	e.pass() // U1 decided, U2 checked (copy at 2)
	check := e.waitChecks(e.prod, 1)[0]
	e.mustEnd(e.checkRef(check), message.TransactionRollbackType, true)
	for range 3 {
		e.pass()
	}
	half, _ := e.Clients().Offsets.Query(txSysGroup, message.TopicTransHalf, 0)
	op, _ := e.Clients().Offsets.Query(txSysGroup, message.TopicTransOpHalf, 0)
	if half != 3 || op != 2 {
		t.Fatalf("progress half=%d op=%d, want 3 and 2", half, op)
	}
	st := e.txStats()
	left, ops := st.DecidedChains, st.OpEntries
	if left != 0 || ops != 0 {
		t.Fatalf("%d decided chains and %d op entries kept after release", left, ops)
	}
	if tc := e.Topics().Get(message.TopicTransHalf); tc == nil {
		t.Fatal("half topic config not created by the check")
	}
}

func TestTransactionRestart(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *txEnv)
	}{
		{name: "decision after restart", run: func(t *testing.T, e *txEnv) {
			ref := e.refOf(e.sendHalf("TxRs", 0, "U1"))
			e.restart()
			e.mustEnd(ref, message.TransactionCommitType, false)
			e.mustEnd(ref, message.TransactionCommitType, false)
			if n := len(e.messages("TxRs", 0)); n != 1 {
				t.Fatalf("%d messages", n)
			}
		}},
		{name: "duplicate after restart", run: func(t *testing.T, e *txEnv) {
			ref := e.refOf(e.sendHalf("TxRs", 0, "U1"))
			e.mustEnd(ref, message.TransactionCommitType, false)
			e.restart()
			e.mustEnd(ref, message.TransactionCommitType, false)
			e.pass()
			if n := len(e.messages("TxRs", 0)); n != 1 {
				t.Fatalf("%d messages", n)
			}
			if n := len(e.prod.Received()); n != 0 {
				t.Fatalf("%d checks of a decided message", n)
			}
		}},
		{name: "pending check copy after restart", run: func(t *testing.T, e *txEnv) {
			ref := e.refOf(e.sendHalf("TxRs", 0, "U1"))
			e.pass()
			check := e.waitChecks(e.prod, 1)[0]
			e.mustEnd(ref, message.TransactionCommitType, false)
			e.restart()
			e.mustEnd(e.checkRef(check), message.TransactionCommitType, true)
			for range 3 {
				e.pass()
			}
			if n := len(e.prod.Received()); n != 0 {
				t.Fatalf("%d checks after restart", n)
			}
			if n := len(e.messages("TxRs", 0)); n != 1 {
				t.Fatalf("%d messages", n)
			}
		}},
		{name: "unknown is checked after restart", run: func(t *testing.T, e *txEnv) {
			e.sendHalf("TxRs", 0, "U1")
			e.pass()
			e.waitChecks(e.prod, 1)
			e.restart()
			e.pass()
			check := e.waitChecks(e.prod, 1)[0]
			if got := brokertest.Records(t, check.Body)[0].Properties["TRANSACTION_CHECK_TIMES"]; got != "2" {
				t.Fatalf("TRANSACTION_CHECK_TIMES=%s after restart, want 2", got)
			}
			e.mustEnd(e.checkRef(check), message.TransactionCommitType, true)
			if n := len(e.messages("TxRs", 0)); n != 1 {
				t.Fatalf("%d messages", n)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, startTxBroker(t, nil))
		})
	}
}

// A producer repeating a refused END_TRANSACTION writes one warning per
// interval, each counted (issue 42 defect 8).
func TestTransactionEndRefusalsRateLimited(t *testing.T) {
	e := startTxBroker(t, nil)
	ref := e.refOf(e.sendHalf("TxRL", 0, "U1"))
	ext := map[string]string{
		"producerGroup": "PG", "tranStateTableOffset": strconv.FormatInt(ref.queueOffset, 10),
		"commitLogOffset": "999999", "commitOrRollback": "8", "msgId": "U1",
	}
	const n = 50
	for range n {
		if resp := e.Invoke(remoting.EndTransaction, ext, nil); resp.Code != remoting.SystemError {
			t.Fatalf("code %d %q", resp.Code, resp.Remark)
		}
	}
	if got := strings.Count(e.logs.String(), "end transaction refused"); got != 1 {
		t.Fatalf("%d lines for %d refusals, want 1:\n%s", got, n, e.logs.String())
	}
	if got := e.Refusals().Total("end_transaction_refused", remoting.SystemError); got != n {
		t.Fatalf("counted %d, want %d", got, n)
	}
}

// TestTransactionTakeoverChecksAChainOnce: a broker taking the check over
// starts from a half-queue progress behind the records the old master
// already checked and put back (its progress is copied with a lag). Each
// undecided chain is checked once from its newest copy, not once per older
// record in the window, which forked chains at every switch.
func TestTransactionTakeoverChecksAChainOnce(t *testing.T) {
	e := startTxBroker(t, func(o *broker.Options) {
		o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 10000
	})
	e.sendHalf("TxK", 0, "U-fork")
	for i := 1; i <= 2; i++ {
		e.pass()
		e.waitChecks(e.prod, i)
	}
	// The progress copied from an old master: back at the first record.
	svc := e.Transactions()
	svc.SetActive(false)
	e.Clients().Offsets.Commit(txSysGroup, "RMQ_SYS_TRANS_HALF_TOPIC", 0, 0)
	svc.SetActive(true)
	e.pass()
	e.waitChecks(e.prod, 3)
	e.pass()
	checks := e.waitChecks(e.prod, 4)
	for i, c := range checks[2:] {
		if got := brokertest.Records(t, c.Body)[0].Properties["TRANSACTION_CHECK_TIMES"]; got != strconv.Itoa(3+i) {
			t.Fatalf("check %d after the takeover carries TRANSACTION_CHECK_TIMES=%s, want %d: an older record of the chain was checked again", 3+i, got, 3+i)
		}
	}
}
