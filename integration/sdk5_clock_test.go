package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/integration/harness"
)

// TestSDK5PythonClock: clock control from a Python test (integration/sdk5/python/clock.py). Against a broker
// with clockControlEnable=true, the Python 5.x SDK sends a timer message due in 2 hours through the gRPC
// endpoint, sees nothing to receive, runs `rmq admin fastForward -c DefaultCluster -d 2h1m` and receives the
// message within seconds. A 4.x consumer reads it back here: stored at (never before) its delivery time on
// the broker's clock.
func TestSDK5PythonClock(t *testing.T) {
	t.Parallel()
	deps := os.Getenv("RMQ_SDK5_PYTHON")
	if deps == "" {
		t.Skip("RMQ_SDK5_PYTHON is not set: the python SDK is installed and this test run by integration/sdk5/run.sh (make test-sdk5)")
	}
	tool, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python SDK: python3 is not on PATH")
	}
	grpcPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := ownRMQ(t, "grpcServerPort="+strconv.Itoa(grpcPort), "clockControlEnable=true")
	run := uniqueName(t, "python")
	topic := run + "_timer"
	// A 5.x timer message is of type DELAY: its topic says so, as the
	// gRPC endpoint (like the stock proxy) checks it by default.
	createTopic(t, p, topic, 2, "+message.type=DELAY")
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: topic + "_cg", topic: topic}, col)

	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, filepath.Join(root, "integration/sdk5/python/clock.py"))
	home := t.TempDir() // the SDK logs under $HOME/logs
	cmd.Env = append(os.Environ(), "PYTHONPATH="+deps, "HOME="+home,
		"RMQ_ENDPOINT=127.0.0.1:"+strconv.Itoa(grpcPort), "RMQ_NAMESRV="+p.NamesrvAddr(), "RMQ_BIN="+rmqBin,
		"SDK5_TOPIC="+topic, "SDK5_GROUP="+run+"_simple_cg", "SDK5_RUN="+run)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", tool, err)
	}
	// The program bounds its own steps (the receive: 30 s after the fast-forward); this bounds a hang.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(sdk5Deadline):
		_ = cmd.Process.Kill()
		err = <-done
		t.Errorf("clock.py still running after %v", sdk5Deadline)
	}
	if err != nil || t.Failed() {
		logSDKFiles(t, home)
		t.Fatalf("clock.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	recs := map[string]map[string]any{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			t.Fatalf("clock.py printed a line that is not a record: %q", sc.Text())
		}
		s, _ := r["scenario"].(string)
		recs[s] = r
	}
	sent, ff, got := recs["sent"], recs["fastforward"], recs["received"]
	if sent == nil || ff == nil || got == nil {
		t.Fatalf("clock.py reported %v", recs)
	}
	if out, _ := ff["output"].(string); !strings.Contains(out, p.BrokerAddr()+" fast-forwarded 2h1m0s") {
		t.Errorf("fastForward printed %q", out)
	}
	key, _ := sent["key"].(string)
	if got["key"] != key || got["id"] != sent["id"] {
		t.Errorf("received %v, sent %v", got, sent)
	}
	waitAll(t, consumeTimeout, []string{key}, col)
	m := col.first(key)
	deliver := int64(sent["deliver"].(float64))
	if m.StoreTimestamp < deliver || m.StoreTimestamp > deliver+time.Minute.Milliseconds() {
		t.Errorf("stored at %d, delivery time %d: want at (never before) it on the broker's clock", m.StoreTimestamp, deliver)
	}
	t.Logf("python SDK: 2-hour timer received %vs after the fast-forward, stored %d ms after its delivery time",
		got["seconds"], m.StoreTimestamp-deliver)
}
