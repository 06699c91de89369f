package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// TestProxyTxCheck is the failover soak's lost SDK transactions
// (failover_sdk_test.go) taken apart: one broker (rmq, and the stock
// 5.3.3 to compare) elected master by one rmq controller, the stock 5.3.3
// proxy in cluster mode, and the 5.x SDK (grpcsender/TxCheckSender.java)
// sending through the proxy transactions whose local transaction stays
// UNKNOWN and whose checker answers COMMIT, to two topics: one created
// with +message.type=TRANSACTION, one without a type (as the soak's).
//
// Only a broker's check-back can settle these halves, and a broker sends
// it on a channel of the half's producer group (PGROUP, which the proxy
// sets to the topic: grpc/v2/producer/SendMessageActivity.java:100,269).
// The proxy registers that group with the brokers, as the oneway
// HEART_BEAT of its ClusterTransactionService every
// transactionHeartbeatPeriodSecond (20 s), only for groups given to
// addTransactionSubscription, and the gRPC path calls that only when the
// topic's message.type, read from a broker, is TRANSACTION
// (grpc/v2/client/ClientActivity.java:296-299; an untyped topic reads as
// NORMAL, TopicConfig.java:202-210). So the typed topic's messages must be
// checked back and delivered; the untyped topic's must never be checked
// (the stock behaviour the soak meets), which the test asserts too, so
// that a change of that explanation shows.
//
// Run by make proxy-txcheck (SOAK_PROXYTX=1; PROXYTX_BROKERS picks "rmq",
// "java" or both, the default).
func TestProxyTxCheck(t *testing.T) {
	if os.Getenv("SOAK_PROXYTX") == "" {
		t.Skip("runs with make proxy-txcheck (SOAK_PROXYTX=1)")
	}
	rlog.SetLogLevel("fatal")
	bin := rmqBin(t)
	lib, err := harness.Java5Lib()
	if err != nil {
		t.Skipf("needs the stock 5.3.3 jars: %v", err)
	}
	proxyLib, err := harness.Proxy5Lib()
	if err != nil {
		t.Skipf("needs the stock 5.3.3 proxy: %v", err)
	}
	cp, err := buildSDKSender(t.TempDir())
	if err != nil {
		t.Fatalf("the 5.x SDK sender: %v", err)
	}
	brokers := os.Getenv("PROXYTX_BROKERS")
	if brokers == "" {
		brokers = "rmq,java"
	}
	for _, b := range strings.Split(brokers, ",") {
		impl := map[string]harness.Impl{"rmq": harness.ImplRMQ, "java": harness.ImplJava5}[b]
		if impl == "" {
			t.Fatalf("PROXYTX_BROKERS: %q is neither rmq nor java", b)
		}
		t.Run(b, func(t *testing.T) { runProxyTxCheck(t, bin, lib, proxyLib, cp, impl) })
	}
}

// proxyTxPerTopic is how many transactions the SDK sends to each topic.
const proxyTxPerTopic = 5

// proxyTxQuiet is how long after its last half the untyped topic must stay
// unchecked: a proxy heartbeat period (20 s) plus the brokers' check
// interval and timeout (1 s each) and a margin.
const proxyTxQuiet = 30 * time.Second

func runProxyTxCheck(t *testing.T, bin, lib, proxyLib, cp string, impl harness.Impl) {
	g := harness.StartCtlGroup(t, harness.CtlGroupConfig{
		RMQBin: bin, JavaLib: lib, Controller: harness.ControllerRMQ, Brokers: []harness.Impl{impl},
		Proxy: true, ProxyLib: proxyLib,
		Conf: []string{"transactionCheckInterval=1000", "transactionTimeOut=1000", "transactionCheckMax=60"},
	})
	adm := admin.New(admin.Options{NamesrvAddr: g.Namesrv.Addr(), Timeout: 3 * time.Second})
	defer adm.Close()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	c := &foControl{t: t, g: g, adm: adm, cl: cl}
	info, err := c.waitFullSync(foSyncTimeout)
	if err != nil {
		t.Fatalf("no master: %v", err)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	typed, plain := "ptx_"+stamp+"_typed", "ptx_"+stamp+"_plain"
	if err := harness.CreateTopicAttrs(cl, info.MasterAddress, typed, 4, "+message.type=TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if err := harness.CreateTopic(cl, info.MasterAddress, plain, 4); err != nil {
		t.Fatal(err)
	}
	// The consumer's start and the SDK's producer ask for the topics'
	// routes at once: wait until the name server has them.
	for _, topic := range []string{typed, plain} {
		c.topic = topic
		harness.WaitFor(t, 60*time.Second, func() error {
			if m, err := c.routeMaster(); err != nil || m != info.MasterAddress {
				return fmt.Errorf("route of %s: master %q, %v", topic, m, err)
			}
			return nil
		})
	}

	p := &txProbe{halves: map[string]time.Time{}, checked: map[string]bool{}, delivered: map[string]bool{}}
	ns := primitive.NewPassthroughResolver([]string{g.Namesrv.Addr()})
	cons, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("ptx_cg_"+stamp),
		consumer.WithInstance("ptx_ci_"+stamp), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{typed, plain} {
		err := cons.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					p.deliver(m.GetProperty("soakid"))
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
	defer func() { _ = cons.Shutdown() }()

	start := time.Now()
	stop := p.start(t, filepath.Join(t.TempDir(), "sdk"), cp, g.Proxy.GRPCAddr(), typed+","+plain)
	defer stop()
	harness.WaitFor(t, 90*time.Second, func() error {
		if n := p.count(typed, plain); n < 2*proxyTxPerTopic {
			return fmt.Errorf("%d of %d halves sent (lines: %v; stderr: %s)", n, 2*proxyTxPerTopic, p.tail(), p.stderrTail())
		}
		return nil
	})
	t.Logf("%d halves sent in %v", 2*proxyTxPerTopic, time.Since(start).Round(time.Millisecond))
	harness.WaitFor(t, 90*time.Second, func() error {
		if got := p.settled(typed); got < proxyTxPerTopic {
			return fmt.Errorf("%d of the typed topic's %d transactions checked back and delivered", got, proxyTxPerTopic)
		}
		return nil
	})
	t.Logf("typed topic: all %d transactions checked back (COMMIT) and delivered %v after the producer started",
		proxyTxPerTopic, time.Since(start).Round(time.Millisecond))
	if wait := time.Until(p.lastHalf().Add(proxyTxQuiet)); wait > 0 {
		time.Sleep(wait)
	}
	if got := p.touched(plain); got > 0 {
		t.Errorf("untyped topic: %d transactions checked back or delivered; the stock proxy registers no "+
			"producer group for a topic whose message.type is not TRANSACTION (see the test's comment)", got)
	} else {
		t.Logf("untyped topic: none of %d transactions checked back %v after the last half (stock proxy: no "+
			"transaction heartbeat for its group)", proxyTxPerTopic, proxyTxQuiet)
	}
}

// txProbe is the state of one TxCheckSender run: each half's send time,
// the ids checked back and those delivered.
type txProbe struct {
	mu        sync.Mutex
	halves    map[string]time.Time
	checked   map[string]bool
	delivered map[string]bool
	lines     []string // the last lines other than HALF and CHECK
	errPath   string   // the sender's stderr
}

// stderrTail is the end of the sender's stderr.
func (p *txProbe) stderrTail() string {
	b, _ := os.ReadFile(p.errPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (p *txProbe) deliver(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delivered[id] = true
}

// topicOf is the topic of an id ("topic#n").
func topicOf(id string) string {
	topic, _, _ := strings.Cut(id, "#")
	return topic
}

// count is how many halves of the topics were sent.
func (p *txProbe) count(topics ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for id := range p.halves {
		for _, topic := range topics {
			if topicOf(id) == topic {
				n++
			}
		}
	}
	return n
}

// settled is how many of topic's halves were checked back and delivered.
func (p *txProbe) settled(topic string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for id := range p.halves {
		if topicOf(id) == topic && p.checked[id] && p.delivered[id] {
			n++
		}
	}
	return n
}

// touched is how many of topic's ids were checked back or delivered.
func (p *txProbe) touched(topic string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for _, m := range []map[string]bool{p.checked, p.delivered} {
		for id := range m {
			if topicOf(id) == topic {
				seen[id] = true
			}
		}
	}
	return len(seen)
}

func (p *txProbe) lastHalf() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, at := range p.halves {
		if at.After(last) {
			last = at
		}
	}
	return last
}

func (p *txProbe) tail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// start runs TxCheckSender against endpoint and returns what stops it
// (end of its input, then a kill after 10 s).
func (p *txProbe) start(t *testing.T, dir, cp, endpoint, topics string) func() {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xms32m", "-Xmx160m", "-XX:+UseSerialGC", "-Duser.home="+dir,
		"-Drocketmq.log.level=warn", "-cp", cp, "TxCheckSender", endpoint, topics, strconv.Itoa(proxyTxPerTopic))
	cmd.Dir = dir
	cmd.SysProcAttr = harness.ProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.errPath = filepath.Join(dir, "stderr.log")
	errLog, err := os.Create(p.errPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		p.read(stdout)
		_ = cmd.Wait()
		errLog.Close()
	}()
	return func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
}

// read records the sender's HALF and CHECK lines and keeps the others.
func (p *txProbe) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		p.mu.Lock()
		switch {
		case len(f) == 3 && f[0] == "HALF":
			p.halves[f[1]] = time.Now()
		case len(f) == 3 && f[0] == "CHECK":
			p.checked[f[1]] = true
		default:
			if len(p.lines) >= 20 {
				p.lines = p.lines[1:]
			}
			p.lines = append(p.lines, sc.Text())
		}
		p.mu.Unlock()
	}
}
