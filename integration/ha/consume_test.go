package ha

import (
	"bufio"
	"errors"
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
	"github.com/rmqio/rmq/remoting"
)

// The stock Java 4.9.8 client (testdata/HaJavaClient.java), compiled once per
// test binary against the jars of integration/java's client4 profile: the Go
// client v2 asks only a master for a group's offsets, so it cannot start a
// consumer while the master is down (against Java brokers too); the Java
// client falls back on the slave, as issue 44 requires of rmq.

var (
	javaClientOnce sync.Once
	javaClientCP   string // classpath: the compiled class and the client jars
	javaClientErr  error
	errNoJavaTools = errors.New("a Java tool is missing")
)

// javaClient returns the classpath of HaJavaClient, or skips t.
func javaClient(t *testing.T) string {
	t.Helper()
	javaClientOnce.Do(func() { javaClientCP, javaClientErr = buildJavaClient() })
	if errors.Is(javaClientErr, errNoJavaTools) {
		t.Skipf("the Java 4.9.8 client cannot be built here: %v", javaClientErr)
	}
	if javaClientErr != nil {
		t.Fatalf("the Java 4.9.8 client: %v", javaClientErr)
	}
	return javaClientCP
}

func buildJavaClient() (string, error) {
	for _, tool := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%w: %s is not on PATH", errNoJavaTools, tool)
		}
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "rmq-ha-javaclient-")
	if err != nil {
		return "", err
	}
	cpFile := filepath.Join(dir, "cp.txt")
	mvn := exec.Command("mvn", "-B", "-q", "-f", filepath.Join(root, "integration", "java", "pom.xml"), "-Pclient4",
		"-Dstyle.color=never", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile, "-Dmdep.includeScope=runtime")
	if out, err := mvn.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mvn dependency:build-classpath (client4): %v\n%s", err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return "", err
	}
	src, _ := filepath.Abs(filepath.Join("testdata", "HaJavaClient.java"))
	javac := exec.Command("javac", "-nowarn", "-cp", string(cp), "-d", dir, src)
	if out, err := javac.CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac HaJavaClient: %v\n%s", err, out)
	}
	return dir + string(os.PathListSeparator) + strings.TrimSpace(string(cp)), nil
}

// javaDelivery is one line MSG of HaJavaClient.
type javaDelivery struct {
	id, offsetMsgID, broker string
	queue                   int
	queueOffset             int64
}

// javaConsumer is a running HaJavaClient consume.
type javaConsumer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	got   []javaDelivery
	out   []string
	done  chan struct{}
}

func startJavaConsumer(t *testing.T, ns, topic, group string) *javaConsumer {
	t.Helper()
	cp := javaClient(t)
	home := t.TempDir() // the client's logs and local files
	cmd := exec.Command("java", "-Xmx256m", "-Duser.home="+home, "-Drocketmq.client.logRoot="+home,
		"-cp", cp, "HaJavaClient", "consume", ns, topic, group)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &javaConsumer{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			if f := strings.Fields(line); len(f) == 6 && f[0] == "MSG" {
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				c.got = append(c.got, javaDelivery{id: f[1], queue: q, queueOffset: off, offsetMsgID: f[4], broker: f[5]})
			} else {
				c.out = append(c.out, line)
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		c.stop(t)
		if t.Failed() {
			c.mu.Lock()
			t.Logf("Java consumer output:\n%s", strings.Join(c.out, "\n"))
			c.mu.Unlock()
		}
	})
	return c
}

// stop closes the client's input (it shuts down, persisting its offsets)
// and waits for it; it is killed after 30 s.
func (c *javaConsumer) stop(t *testing.T) {
	if c.stdin == nil {
		return
	}
	c.stdin.Close()
	c.stdin = nil
	exited := make(chan error, 1)
	go func() { <-c.done; exited <- c.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Errorf("the Java consumer did not exit 30 s after its input closed")
		c.cmd.Process.Kill()
		<-exited
	}
}

// deliveries returns a copy of what was delivered so far.
func (c *javaConsumer) deliveries() []javaDelivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]javaDelivery(nil), c.got...)
}

// waitDelivered waits until every message of want was delivered (by id) and
// returns how many deliveries were duplicates.
func (c *javaConsumer) waitDelivered(t *testing.T, want []sent, timeout time.Duration) int {
	t.Helper()
	dups := 0
	harness.WaitFor(t, timeout, func() error {
		seen := map[string]javaDelivery{}
		dups = 0
		for _, d := range c.deliveries() {
			if _, ok := seen[d.id]; ok {
				dups++
			}
			seen[d.id] = d
		}
		missing := 0
		for _, s := range want {
			d, ok := seen[s.id]
			if !ok {
				missing++
				continue
			}
			if d.queue != s.queue || d.queueOffset != s.queueOffset || d.offsetMsgID != s.offsetMsgID {
				t.Fatalf("%s delivered as queue %d offset %d msgId %s; acknowledged as queue %d offset %d msgId %s",
					s.id, d.queue, d.queueOffset, d.offsetMsgID, s.queue, s.queueOffset, s.offsetMsgID)
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d messages not delivered yet", missing, len(want))
		}
		return nil
	})
	return dups
}

// committedOffsets asks the broker at addr for group's offset of every queue
// of topic (QUERY_CONSUMER_OFFSET; -1 when it has none).
func committedOffsets(cl *remoting.Client, addr, group, topic string) ([]int64, error) {
	offs := make([]int64, queues)
	for q := range offs {
		req := remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil)
		resp, err := cl.InvokeTimeout(addr, req, 3*time.Second)
		if err != nil {
			return nil, err
		}
		switch resp.Code {
		case remoting.Success:
			if offs[q], err = strconv.ParseInt(resp.Ext()["offset"], 10, 64); err != nil {
				return nil, err
			}
		case remoting.QueryNotFound:
			offs[q] = -1
		default:
			return nil, fmt.Errorf("QUERY_CONSUMER_OFFSET %s at %s: code %d %q", group, addr, resp.Code, resp.Remark)
		}
	}
	return offs, nil
}

// waitOffsets waits until the broker at addr holds want as group's offsets.
func waitOffsets(t *testing.T, addr, group, topic string, want []int64, timeout time.Duration) {
	t.Helper()
	cl := rawClient(t)
	harness.WaitFor(t, timeout, func() error {
		got, err := committedOffsets(cl, addr, group, topic)
		if err != nil {
			return err
		}
		for q := range want {
			if got[q] != want[q] {
				return fmt.Errorf("offsets of %s at %s: %v, want %v", group, addr, got, want)
			}
		}
		return nil
	})
}

// TestJavaConsumerOnSlave: a stock Java push consumer consumes a first
// batch through the master (its offsets reach the slave with the slave's
// periodic copy); then, with a second batch replicated and the master killed,
// the same group starts again, reads the second batch from the slave from
// the offsets the slave kept, and commits its new offsets to the slave.
func TestJavaConsumerOnSlave(t *testing.T) {
	forEachPairing(t, func(t *testing.T, p pairing, lib string) {
		javaClient(t)
		pr := startPair(t, p, lib, harness.RoleAsyncMaster)
		topic := uniqueName("topic")
		group := uniqueName("cg")
		createTopic(t, pr, topic)
		prod := newProducer(t, pr.NamesrvAddr())
		first := append(waitFollowing(t, pr, prod, topic), sendBatch(t, prod, topic, "a", 200)...)

		c := startJavaConsumer(t, pr.NamesrvAddr(), topic, group)
		c.waitDelivered(t, first, 2*time.Minute)
		cl := rawClient(t)
		maxes, err := harness.WaitCaughtUp(cl, pr.Master.Addr(), pr.Slave.Addr(), topic, queues, catchUpTimeout)
		if err != nil {
			t.Fatal(err)
		}
		waitOffsets(t, pr.Master.Addr(), group, topic, maxes, time.Minute)
		c.stop(t)
		// SlaveSynchronize copies consumer offsets every 10 s (4.9.x).
		waitOffsets(t, pr.Slave.Addr(), group, topic, maxes, time.Minute)

		second := sendBatch(t, prod, topic, "b", 200)
		if maxes, err = harness.WaitCaughtUp(cl, pr.Master.Addr(), pr.Slave.Addr(), topic, queues, catchUpTimeout); err != nil {
			t.Fatal(err)
		}
		if err := pr.Master.Kill(); err != nil {
			t.Fatal(err)
		}

		c2 := startJavaConsumer(t, pr.NamesrvAddr(), topic, group)
		dups := c2.waitDelivered(t, second, 2*time.Minute)
		old := 0
		for _, d := range c2.deliveries() {
			if strings.HasPrefix(d.id, "a-") || strings.HasPrefix(d.id, "warm-") {
				old++
			}
			if d.broker != pr.BrokerName() {
				t.Fatalf("delivered from broker name %q, want %q", d.broker, pr.BrokerName())
			}
		}
		if old > 0 {
			t.Errorf("%d messages of the first batch delivered again: the slave did not keep the group's offsets", old)
		}
		t.Logf("master down: %d messages consumed from the slave, %d duplicates", len(second), dups)
		waitOffsets(t, pr.Slave.Addr(), group, topic, maxes, time.Minute)
	})
}
