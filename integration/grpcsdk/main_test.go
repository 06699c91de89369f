//go:build !race

package grpcsdk

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/internal/sdklog"
	"github.com/rmqio/rmq/internal/testutil"
)

var hostBin string // built by TestMain

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runAll(m))
}

func runAll(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "rmq-grpcsdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer sdklog.RemoveAfter()() // its call log, which stays in /tmp
	// The Go SDK logs to files under its log root; keep them out of $HOME.
	os.Setenv("rocketmq.client.logRoot", tmp)
	hostBin, err = harness.Build(tmp, "./grpcapi/internal/sdkhost", "sdkhost")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// hostConf is how a test's sdkhost runs (its flags).
type hostConf struct {
	manualClock                    bool
	minLongPolling, maxLongPolling int64 // milliseconds; 0 keeps the default
	fastTxCheck                    bool
	aclFile                        string // plain_acl.yml; "" runs without ACL
	// authJSON, when set, is written as <store>/config/auth.json and ACL
	// 2.0 is turned on (-auth).
	authJSON string
}

// testServer is a running sdkhost: a broker with its gRPC endpoint.
type testServer struct {
	t    *testing.T
	addr string
	in   io.WriteCloser
	out  *bufio.Scanner
	cmd  *exec.Cmd
}

func (ts *testServer) endpoint() string { return ts.addr }

// startServer starts an sdkhost for the test, stopped (stdin closed, exit
// awaited) at its end.
func startServer(t *testing.T, hc hostConf) *testServer {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against sdkhost; skipped with -short")
	}
	storeDir := t.TempDir()
	args := []string{"-store", storeDir, "-listen-port", strconv.Itoa(testutil.FreePortPair(t))}
	if hc.authJSON != "" {
		if err := os.MkdirAll(filepath.Join(storeDir, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(storeDir, "config", "auth.json"), []byte(hc.authJSON), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-auth")
	}
	if hc.manualClock {
		args = append(args, "-manual-clock")
	}
	if hc.minLongPolling > 0 {
		args = append(args, "-min-long-polling", strconv.FormatInt(hc.minLongPolling, 10))
	}
	if hc.maxLongPolling > 0 {
		args = append(args, "-max-long-polling", strconv.FormatInt(hc.maxLongPolling, 10))
	}
	if hc.fastTxCheck {
		args = append(args, "-fast-tx-check")
	}
	if hc.aclFile != "" {
		args = append(args, "-acl-file", hc.aclFile)
	}
	cmd := exec.Command(hostBin, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sdkhost: %v", err)
	}
	ts := &testServer{t: t, in: in, out: bufio.NewScanner(stdout), cmd: cmd}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("sdkhost exit: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("sdkhost did not exit within 30 s of stdin closing")
		}
	})
	if !ts.out.Scan() {
		t.Fatalf("sdkhost exited before it was ready: %v", ts.out.Err())
	}
	addr, ok := strings.CutPrefix(ts.out.Text(), "ready ")
	if !ok {
		t.Fatalf("sdkhost said %q, want ready ADDR", ts.out.Text())
	}
	ts.addr = addr
	return ts
}

// startConsumeServer is an sdkhost on a manual clock with short long
// polling (100-300 ms), as grpcapi's startConsumeServer.
func startConsumeServer(t *testing.T) *testServer {
	t.Helper()
	return startServer(t, hostConf{manualClock: true, minLongPolling: 100, maxLongPolling: 300})
}

// do runs one sdkhost command and returns its answer.
func (ts *testServer) do(format string, args ...any) string {
	ts.t.Helper()
	line := fmt.Sprintf(format, args...)
	if _, err := fmt.Fprintln(ts.in, line); err != nil {
		ts.t.Fatalf("sdkhost %q: %v", line, err)
	}
	if !ts.out.Scan() {
		ts.t.Fatalf("sdkhost %q: no answer: %v", line, ts.out.Err())
	}
	reply, ok := strings.CutPrefix(ts.out.Text(), "ok")
	if !ok {
		ts.t.Fatalf("sdkhost %q: %s", line, ts.out.Text())
	}
	return strings.TrimSpace(reply)
}

func (ts *testServer) ints(format string, args ...any) []int64 {
	ts.t.Helper()
	fields := strings.Fields(ts.do(format, args...))
	out := make([]int64, len(fields))
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			ts.t.Fatalf("sdkhost answer %q: %v", f, err)
		}
		out[i] = n
	}
	return out
}

// createTopic makes a read-write topic with n queues.
func (ts *testServer) createTopic(name string, n int32) { ts.do("topic %s %d", name, n) }

// maxOffset is the max offset of topic's queue q.
func (ts *testServer) maxOffset(topic string, q int32) int64 {
	return ts.ints("offset %s %d", topic, q)[0]
}

// queueCounts is the number of messages in each queue of topic.
func (ts *testServer) queueCounts(topic string, n int32) []int64 {
	return ts.ints("counts %s %d", topic, n)
}

// total is the number of messages in topic's n queues.
func (ts *testServer) total(topic string, n int32) int64 {
	var s int64
	for _, c := range ts.queueCounts(topic, n) {
		s += c
	}
	return s
}

// popStats is the broker's messages in flight, revived, and its dispatch
// backlog.
func (ts *testServer) popStats() (inFlight, revived, dispatchBehind int64) {
	v := ts.ints("pop")
	return v[0], v[1], v[2]
}

func (ts *testServer) inFlight() int64 {
	n, _, _ := ts.popStats()
	return n
}

// advance moves the broker's manual clock.
func (ts *testServer) advance(d time.Duration) { ts.do("advance %d", d.Milliseconds()) }

// setOrderly makes group a consumeMessageOrderly group.
func (ts *testServer) setOrderly(group string) { ts.do("orderly %s", group) }

// fifoQueue is the queue of n a FIFO message of group goes to.
func (ts *testServer) fifoQueue(group string, n int) int {
	return int(ts.ints("fifoqueue %s %d", group, n)[0])
}

// waitCount waits until topic's n queues hold want messages in all (the
// store dispatches to the consume queues in the background).
func (ts *testServer) waitCount(t *testing.T, topic string, n int32, want int64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool { return ts.total(topic, n) == want },
		fmt.Sprintf("%d messages on %s", want, topic))
}

// waitRevived waits until n messages were revived in all and are on their
// retry queue.
func (ts *testServer) waitRevived(t *testing.T, n int64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		_, revived, behind := ts.popStats()
		return revived >= n && behind == 0
	}, strconv.FormatInt(n, 10)+" revived messages")
}
