package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// The Python and Node.js 5.x SDKs (integration/sdk5, installed by its run.sh, `make test-sdk5`) against
// rmq's gRPC endpoint: each SDK's program sends normal, FIFO, delay and transactional messages (commit,
// rollback, check-back) and reports every send as a JSON line; a 4.x push consumer reads the topics back.
// The program's SimpleConsumer receives and acks, changes one message's invisible duration and takes its
// redelivery, and sees no acked message again; it checks those itself and reports each receive.

const (
	// sdk5DelayMs is how far ahead the delay scenario's delivery timestamp is.
	sdk5DelayMs = 3000
	// sdk5Deadline bounds one program's run: a cold interpreter start, the sends, and the transaction
	// check-back (transactionCheckInterval 5 s after the half message's 6 s timeout).
	sdk5Deadline = 120 * time.Second
)

// sdk5Record is one JSON line of a program's stdout.
type sdk5Record struct {
	Scenario string `json:"scenario"`
	Key      string `json:"key"`
	ID       string `json:"id"`
	Deliver  int64  `json:"deliver"`
	Attempt  int    `json:"attempt"`
}

// sdk5Program describes how one SDK's program is run.
type sdk5Program struct {
	env  string // names the SDK's install directory; set by integration/sdk5/run.sh
	tool string // the interpreter
	// command returns the interpreter's arguments and extra environment for the install directory deps.
	command func(root, deps string) (args, env []string)
}

var sdk5Programs = map[string]sdk5Program{
	"python": {env: "RMQ_SDK5_PYTHON", tool: "python3", command: func(root, deps string) ([]string, []string) {
		return []string{filepath.Join(root, "integration/sdk5/python/producer.py")}, []string{"PYTHONPATH=" + deps}
	}},
	"node": {env: "RMQ_SDK5_NODE", tool: "node", command: func(root, deps string) ([]string, []string) {
		return []string{filepath.Join(root, "integration/sdk5/node/producer.js")}, []string{"NODE_PATH=" + deps}
	}},
}

// runtime returns the interpreter and the SDK's install directory, or skips
// the test when integration/sdk5/run.sh has not installed the SDK or the
// interpreter is missing.
func (prog sdk5Program) runtime(t *testing.T, sdk string) (tool, deps string) {
	t.Helper()
	deps = os.Getenv(prog.env)
	if deps == "" {
		t.Skipf("%s is not set: the %s SDK is installed and this test run by integration/sdk5/run.sh (make test-sdk5)", prog.env, sdk)
	}
	tool, err := exec.LookPath(prog.tool)
	if err != nil {
		t.Skipf("%s SDK: %s is not on PATH", sdk, prog.tool)
	}
	return tool, deps
}

func TestSDK5Python(t *testing.T) { runSDK5(t, "python") }

func TestSDK5Node(t *testing.T) { runSDK5(t, "node") }

// createTopic creates topic on the broker with UPDATE_AND_CREATE_TOPIC (attributes in 5.x's "+key=value"
// form, comma-separated, or "") and waits for its route.
func createTopic(t *testing.T, p *harness.Process, topic string, queues int, attributes string) {
	t.Helper()
	createTopicAt(t, p.BrokerAddr(), topic, queues, attributes)
	waitRoute(t, p, topic)
}

// createTopicAt creates topic on the broker at addr with UPDATE_AND_CREATE_TOPIC, as createTopic, and does not
// wait for the route.
func createTopicAt(t *testing.T, addr, topic string, queues int, attributes string) {
	t.Helper()
	n := strconv.Itoa(queues)
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": n, "writeQueueNums": n,
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	if attributes != "" {
		ext["attributes"] = attributes
	}
	resp, err := rawClient(t).InvokeTimeout(addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil), sendTimeout)
	if err != nil {
		t.Fatalf("UPDATE_AND_CREATE_TOPIC %s at %s: %v", topic, addr, err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("UPDATE_AND_CREATE_TOPIC %s at %s: code %d %q", topic, addr, resp.Code, resp.Remark)
	}
}

// runSDK5 runs in parallel with the other SDK's test: each has its own
// broker and names, and both mostly wait for the delay and the check-back.
func runSDK5(t *testing.T, sdk string) {
	t.Parallel()
	prog := sdk5Programs[sdk]
	tool, deps := prog.runtime(t, sdk)
	grpcPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// Topics typed as 5.x has them (message.type), checked on send: the SDKs get the accepted types in the
	// route and validate_message_type in the Settings, and the broker refuses a kind a topic does not take.
	p := ownRMQ(t, "transactionCheckInterval=5000", "grpcServerPort="+strconv.Itoa(grpcPort), "enableTopicMessageTypeCheck=true")
	ns := p.NamesrvAddr()

	run := uniqueName(t, sdk)
	topics := map[string]string{}
	for _, tc := range []struct {
		scenario, typ string
		queues        int
	}{{"normal", "NORMAL", 4}, {"fifo", "FIFO", 4}, {"delay", "DELAY", 2}, {"tx", "TRANSACTION", 1}, {"simple", "NORMAL", 2}} {
		topics[tc.scenario] = run + "_" + tc.scenario
		createTopic(t, p, topics[tc.scenario], tc.queues, "+message.type="+tc.typ)
	}
	cols := map[string]*collector{}
	for scenario, topic := range topics {
		if scenario == "simple" {
			continue // the SDK's own consumer's
		}
		cols[scenario] = newCollector()
		startConsumer(t, ns, consumerConf{group: topic + "_cg", topic: topic}, cols[scenario])
	}

	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args, env := prog.command(root, deps)
	cmd := exec.Command(tool, args...)
	// The SDKs log under $HOME/logs: a directory of the test's, shown when the test fails.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "HOME="+home)
	cmd.Env = append(cmd.Env, "RMQ_ENDPOINT=127.0.0.1:"+strconv.Itoa(grpcPort), "SDK5_RUN="+run,
		"SDK5_TOPIC_NORMAL="+topics["normal"], "SDK5_TOPIC_FIFO="+topics["fifo"],
		"SDK5_TOPIC_DELAY="+topics["delay"], "SDK5_TOPIC_TX="+topics["tx"],
		"SDK5_TOPIC_SIMPLE="+topics["simple"], "SDK5_GROUP="+run+"_simple_cg",
		"SDK5_DELAY_MS="+strconv.Itoa(sdk5DelayMs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", tool, err)
	}
	var (
		waitErr error
		exited  = make(chan struct{}) // closed once the program exited; waitErr is its status

		mu      sync.Mutex
		records = map[string][]sdk5Record{}
		bad     []string
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r sdk5Record
			mu.Lock()
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Scenario == "" || r.Key == "" {
				bad = append(bad, sc.Text())
			} else {
				records[r.Scenario] = append(records[r.Scenario], r)
			}
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-readDone
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", sdk, stderr.String())
			logSDKFiles(t, home)
		}
	})
	snapshot := func() (map[string][]sdk5Record, []string) {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]sdk5Record{}
		for k, v := range records {
			out[k] = append([]sdk5Record(nil), v...)
		}
		return out, append([]string(nil), bad...)
	}

	// Every send reported and the check-back answered (the program waits for it), or the program failed.
	want := map[string]int{"normal": 3, "fifo": 5, "delay": 1, "rollback": 1, "commit": 1, "checkback": 1, "checked": 1,
		"received": 3, "redelivered": 1, "consumed": 1}
	missing := func(got map[string][]sdk5Record) string {
		for s, n := range want {
			if len(got[s]) < n {
				return fmt.Sprintf("%d of %d %q lines", len(got[s]), n, s)
			}
		}
		return ""
	}
	deadline := time.Now().Add(sdk5Deadline)
	for {
		got, _ := snapshot()
		miss := missing(got)
		if miss == "" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("%s program exited (%v) with %s", sdk, waitErr, miss)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s program: %s after %v", sdk, miss, sdk5Deadline)
		}
	}
	got, badLines := snapshot()
	if len(badLines) > 0 {
		t.Fatalf("%s printed lines that are not records: %q", sdk, badLines)
	}

	keys := func(scenarios ...string) []string {
		var out []string
		for _, s := range scenarios {
			for _, r := range got[s] {
				out = append(out, r.Key)
			}
		}
		return out
	}
	waitAll(t, consumeTimeout, keys("normal"), cols["normal"])
	waitAll(t, consumeTimeout, keys("fifo"), cols["fifo"])
	waitAll(t, consumeTimeout, keys("delay"), cols["delay"])
	waitAll(t, consumeTimeout, keys("commit", "checkback"), cols["tx"])

	// Each message is the one the SDK sent: its id (UNIQ_KEY), body and tag.
	for _, s := range []string{"normal", "fifo", "delay", "commit", "checkback"} {
		col := cols[s]
		if s == "commit" || s == "checkback" {
			col = cols["tx"]
		}
		for _, r := range got[s] {
			m := col.first(r.Key)
			body := s + " " + r.Key
			if string(m.Body) != body || m.GetTags() != "sdk5" || m.GetProperty("UNIQ_KEY") != r.ID {
				t.Errorf("%s %s: body %q tag %q UNIQ_KEY %q, want %q, sdk5, %q", sdk, r.Key, m.Body, m.GetTags(), m.GetProperty("UNIQ_KEY"), body, r.ID)
			}
		}
	}

	// FIFO: one message group, so one queue, stored in send order.
	var prev int64 = -1
	queue := -1
	for _, r := range got["fifo"] {
		m := cols["fifo"].first(r.Key)
		if queue >= 0 && m.Queue.QueueId != queue {
			t.Errorf("%s FIFO %s in queue %d, the group's earlier messages in %d", sdk, r.Key, m.Queue.QueueId, queue)
		}
		queue = m.Queue.QueueId
		if m.QueueOffset <= prev {
			t.Errorf("%s FIFO %s at offset %d after %d: not in send order", sdk, r.Key, m.QueueOffset, prev)
		}
		prev = m.QueueOffset
	}

	// Delay: born before the delivery timestamp, stored in the topic not before it.
	for _, r := range got["delay"] {
		m := cols["delay"].first(r.Key)
		if m.BornTimestamp >= r.Deliver || m.StoreTimestamp < r.Deliver {
			t.Errorf("%s delay %s: born %d, stored %d, delivery timestamp %d", sdk, r.Key, m.BornTimestamp, m.StoreTimestamp, r.Deliver)
		}
	}

	// Rollback: the committed message was decided after the rolled-back one on the same one-queue topic,
	// so the rolled-back one would be there before it.
	for _, k := range keys("rollback") {
		if n := cols["tx"].count(k); n != 0 {
			t.Errorf("%s rolled-back %s delivered %d times", sdk, k, n)
		}
	}
	if d := cols["tx"].dups(); len(d) > 0 {
		t.Errorf("%s transactional messages delivered more than once: %v", sdk, d)
	}
	for _, s := range []string{"normal", "fifo", "delay"} {
		if d := cols[s].dups(); len(d) > 0 {
			t.Errorf("%s %s messages delivered more than once: %v", sdk, s, d)
		}
	}

	// The simple consumer: three messages received once each, the one whose invisible duration changed
	// received again as its second delivery attempt.
	received := map[string]string{}
	for _, r := range got["received"] {
		if _, dup := received[r.Key]; dup || r.Attempt != 1 || r.ID == "" {
			t.Errorf("%s simple consumer: receive %+v", sdk, r)
		}
		received[r.Key] = r.ID
	}
	if r := got["redelivered"][0]; received[r.Key] != r.ID || r.Attempt != 2 {
		t.Errorf("%s simple consumer: redelivery %+v, first receives %v", sdk, r, received)
	}

	// Let the program shut its producer down and exit.
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("%s program: %v", sdk, waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s program did not exit within 30s of its stdin closing", sdk)
	}
	t.Logf("%s SDK: %d normal, %d FIFO, %d delay, commit, rollback and check-back, %d received, acked and one redelivered verified (%s)",
		sdk, len(got["normal"]), len(got["fifo"]), len(got["delay"]), len(got["received"]), tool)
}

// logSDKFiles logs the last lines of every log file an SDK wrote under home.
func logSDKFiles(t *testing.T, home string) {
	_ = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		t.Logf("%s (last 100 lines):\n%s", path, strings.Join(lines[max(0, len(lines)-100):], "\n"))
		return nil
	})
}
