package soak

import (
	"bufio"
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

	"github.com/rmqio/rmq/integration/harness"
)

// The failover soak's second producer: the stock Java 5.x gRPC SDK
// (rocketmq-client-java 5.0.8) in a JVM of its own
// (grpcsender/SoakSender.java), sending plain messages to a NORMAL topic,
// timers (setDeliveryTimestamp) to a DELAY topic and transactional
// messages to a TRANSACTION topic, one each in turn with a pause, and
// printing a line per acknowledged or failed send. 5.x has no delay
// levels; the Go 4.x producers keep sending those.
//
// The topics have no message.type attribute (but the transaction topic
// with rmq brokers only, below), and the endpoint's check of a message's
// kind against its topic's type is off (enableTopicMessageTypeCheck=false
// in the proxy's rmq-proxy.json; in rmq's broker.conf with
// SOAK_FO_SDK_VIA=direct). The 5.x documentation has a user create typed
// topics ("+message.type=DELAY"), but a 5.3.3 cluster with controller-mode
// Java slaves cannot keep them: a Java slave's SlaveSynchronize.
// syncTopicConfig first deletes every topic of its table (SlaveSynchronize.
// java:91-99), then re-adds the master's through
// updateSingleTopicConfigWithoutPersist, whose AttributeUtil.
// alterCurrentAttributes(create=true) throws "only add attribute is
// supported while creating topic. key: message.type" at the first typed
// topic (AttributeUtil.java:49-54; the master's table stores the key
// without its "+"). The sync aborts with most of the slave's topics gone,
// and the slave that takes over serves none of the soak's topics (seen in
// stock:java: "topic[...] not exist" from the new master). A user of 5.3.3
// in controller mode turns the check off, as this soak does; the SDK then
// checks the kinds itself only until the endpoint's settings reach it (a
// few of its first timer and transactional sends may fail: failed sends,
// not losses). rmq slaves copy the master's table whole, attributes
// included (broker/role.go replaceFromMaster).
//
// A transaction whose commit is lost in a switch is settled only by a
// check-back: the stock proxy sends END_TRANSACTION oneway to the master
// its brokerName route names, which stays the old one until that route is
// reloaded (ClusterTopicRouteService.getBrokerAddr, 20 s), so the commit
// is refused there. Through the stock proxy (cluster mode), a check-back
// reaches the SDK only when its topic is typed TRANSACTION (all citations
// rocketmq-all-5.3.3, proxy module):
//
//   - the half's producer group (PGROUP) is its topic
//     (grpc/v2/producer/SendMessageActivity.java:100,269), and a broker
//     sends CHECK_TRANSACTION_STATE on a channel of that group
//     (broker AbstractTransactionalMessageCheckListener.java:51-64,
//     ProducerManager.java:279 getAvailableChannel);
//   - the proxy puts the group on the brokers with a oneway HEART_BEAT
//     (client id rmq-proxy-producer-client) every
//     transactionHeartbeatPeriodSecond, 20 s, only for the groups in
//     ClusterTransactionService.groupClusterData
//     (ClusterTransactionService.java:125-181), which only
//     addTransactionSubscription fills (:78-90);
//   - the gRPC path calls addTransactionSubscription only when the
//     publishing topic's message.type, read from a broker, is TRANSACTION
//     (grpc/v2/client/ClientActivity.java:288-301); a topic without the
//     attribute reads NORMAL (common TopicConfig.java:202-211). (The
//     remoting path, remoting/activity/SendMessageActivity.java:79-83,
//     goes by the message's own property; the gRPC one has no such call.)
//   - the proxy relays a check-back to the SDK's telemetry stream through
//     its own producer table, where the SDK is registered under the topic
//     (ProxyClientRemotingProcessor.java:56-76), so that part works.
//
// So with an untyped topic no broker, Java 5.3.3 or rmq, has the SDK's
// group ("rmq admin producer -b" lists the proxy's CLIENT_INNER_PRODUCER
// and the Go groups only), rmq logs "no producer of the group is
// connected", the SDK prints no CHECK line, and the halves are re-stored
// every check until transactionCheckMax discards them. TestProxyTxCheck
// (proxytx_test.go, make proxy-txcheck) shows both sides, on one rmq and
// one Java broker: a typed topic's halves are checked back and delivered,
// an untyped one's never are. Hence the soak types the transaction topic
// with rmq brokers only (foVariant.txTyped); with Java brokers those
// transactions are lost as the soak's rule wants, and gatedLost reports
// them beside the baseline's without failing the run.
//
// The SDK's SendReceipt has the message's unique key, not the offset
// msgId the soak reads back from each new master (nor a commitlog
// offset), so the SDK's acknowledged sends are checked by the push
// consumer at the end only: each must be delivered (lost otherwise), a
// timer not before its due time (early otherwise).

// sdkKinds are the kinds the SDK sends, in the ledger's terms.
var sdkKinds = map[string]kind{"plain": plain, "timer": timer, "txn": txn}

// sdkIDPrefix starts every SDK-sent id ("sdk-timer-12").
const sdkIDPrefix = "sdk-"

// sdkTopics are the three typed topics of a run.
type sdkTopics struct{ normal, delay, txn string }

func (s sdkTopics) all() []string { return []string{s.normal, s.delay, s.txn} }

// sdkSender is the running SDK producer process.
type sdkSender struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	led    *ledger
	exited chan struct{}

	mu     sync.Mutex
	acked  [numKinds]int
	failed [numKinds]int
	lines  []string // the last lines other than ACK, for a failure's log
	onAck  func(id string)
	quietC chan struct{} // closed at the QUIET line
}

// buildSDKSender compiles the 5.x SDK programs of grpcsender
// (SoakSender.java, TxCheckSender.java) against the SDK jar into dir and
// returns the class path to run them with.
func buildSDKSender(dir string) (string, error) {
	lib, err := harness.Client5Lib()
	if err != nil {
		return "", err
	}
	jars, _ := filepath.Glob(filepath.Join(lib, "rocketmq-client-java-*.jar"))
	if len(jars) == 0 {
		return "", fmt.Errorf("no rocketmq-client-java jar in %s", lib)
	}
	classes := filepath.Join(dir, "classes")
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return "", err
	}
	srcs, err := filepath.Glob(filepath.Join("grpcsender", "*.java"))
	if err != nil || len(srcs) == 0 {
		return "", fmt.Errorf("no Java source in grpcsender: %v", err)
	}
	args := append([]string{"-d", classes, "-cp", jars[0]}, srcs...)
	if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %v: %v\n%s", srcs, err, out)
	}
	return classes + string(os.PathListSeparator) + jars[0], nil
}

// startSDKSender starts the SDK producer against endpoints; it is killed
// when t ends if still running.
func startSDKSender(t *testing.T, dir, cp, endpoints string, topics sdkTopics, pause time.Duration, led *ledger) *sdkSender {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xms32m", "-Xmx160m", "-XX:+UseSerialGC", "-Duser.home="+dir,
		"-Drocketmq.log.level=warn", "-cp", cp, "SoakSender",
		endpoints, topics.normal, topics.delay, topics.txn, strconv.Itoa(int(pause/time.Millisecond)))
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
	errLog, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errLog
	outLog, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &sdkSender{cmd: cmd, stdin: stdin, led: led, exited: make(chan struct{}), quietC: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(s.exited)
		s.read(io.TeeReader(stdout, outLog), ready)
		_ = cmd.Wait()
		errLog.Close()
		outLog.Close()
	}()
	t.Cleanup(s.kill)
	select {
	case <-ready:
	case <-s.exited:
		t.Fatalf("the SDK sender exited before it was ready: %v", s.tail())
	case <-time.After(90 * time.Second):
		s.kill()
		t.Fatalf("the SDK sender was not ready in 90 s: %v", s.tail())
	}
	return s
}

// read turns the sender's lines into ledger entries.
func (s *sdkSender) read(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	readyOnce := sync.Once{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "ACK":
			k, ok := sdkKinds[f[2]]
			if !ok {
				break
			}
			var due time.Time
			if ms, _ := strconv.ParseInt(f[4], 10, 64); ms > 0 {
				due = time.UnixMilli(ms)
			}
			s.led.ack(f[1], k, due)
			s.mu.Lock()
			s.acked[k]++
			onAck := s.onAck
			s.mu.Unlock()
			if onAck != nil {
				onAck(f[1])
			}
			continue
		case len(f) >= 3 && f[0] == "FAIL":
			if k, ok := sdkKinds[f[2]]; ok {
				s.mu.Lock()
				s.failed[k]++
				s.mu.Unlock()
			}
		case len(f) == 1 && f[0] == "READY":
			readyOnce.Do(func() { close(ready) })
		case len(f) == 1 && f[0] == "QUIET":
			close(s.quietC)
		}
		s.mu.Lock()
		s.lines = append(s.lines, sc.Text())
		if len(s.lines) > 200 {
			s.lines = s.lines[len(s.lines)-100:]
		}
		s.mu.Unlock()
	}
}

// restart has the process replace its producer (after a switch).
func (s *sdkSender) restart() { _, _ = io.WriteString(s.stdin, "restart\n") }

// quiet stops the sends and waits until none is in flight (at most 30 s);
// the producer stays up, so that its transaction checker answers the
// check-backs of transactions whose commit was lost in a switch (the stock
// proxy sends END_TRANSACTION oneway to the broker its own lookup names,
// which can still be the old master for a while) until the drain ends.
func (s *sdkSender) quiet() {
	_, _ = io.WriteString(s.stdin, "quiet\n")
	select {
	case <-s.quietC:
	case <-s.exited:
	case <-time.After(30 * time.Second):
	}
}

// stop asks the process to stop and waits for it (kills it after 30 s).
func (s *sdkSender) stop() {
	_, _ = io.WriteString(s.stdin, "stop\n")
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
	}
}

// kill ends the process if it is still running.
func (s *sdkSender) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// counts are the acknowledged and failed sends per kind.
func (s *sdkSender) counts() (acked, failed [numKinds]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked, s.failed
}

// tail is the last lines that were not acknowledgements.
func (s *sdkSender) tail() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return head(s.lines[max(0, len(s.lines)-20):], 20)
}
