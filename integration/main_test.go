package integration

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/integration/harness"
)

var (
	rmqBin  string // built by TestMain
	tmpRoot string // removed by TestMain
)

// sharedProcess is a broker process started on first use and stopped by
// TestMain, so every test (and every -count iteration) that asks for it gets
// the same one.
type sharedProcess struct {
	name string   // its directory under tmpRoot
	conf []string // its broker.conf

	once sync.Once
	proc *harness.Process
	err  error
}

var (
	// shared serves the tests that need no restart and no special setting.
	shared = &sharedProcess{name: "shared", conf: sharedConf}
	// tracing serves TestMessageTrace. The stock Go client keeps one
	// process-wide trace client, named INNER_TRACE_CLIENT_DEFAULT, bound to
	// the first name server it is given (internal/trace.go
	// NewTraceDispatcher); for any other name server GetOrNewRocketMQClient
	// returns nil and WithTrace goes on with a nil dispatcher, which panics.
	// So every run of the test in one test binary must use the same broker.
	tracing = &sharedProcess{name: "tracing", conf: []string{"traceTopicEnable=true"}}
)

// sharedConf is the broker.conf of the shared process. The commitlog files are
// kept small so tests do not create gigabyte sparse files; 8 MiB still holds
// the largest message the tests send.
var sharedConf = []string{
	"brokerClusterName=ItCluster",
	"brokerName=it-broker-a",
	"mappedFileSizeCommitLog=8388608",
}

// parallelTests is how many t.Parallel tests run at once unless -parallel
// says otherwise. Each runs its own broker process and spends most of its
// time waiting (delay levels, retention rounds, redeliveries, offset
// commits), so the default, GOMAXPROCS (2 on a 2-core machine), left the
// cores idle while the package took two and a half minutes.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelTests))
	}
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runAll(m))
}

func runAll(m *testing.M) int {
	var err error
	tmpRoot, err = os.MkdirTemp("", "rmq-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmpRoot)
	rmqBin, err = harness.BuildRMQ(tmpRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rlog.SetLogger(clientLog)
	code := m.Run()
	for _, sp := range []*sharedProcess{shared, tracing} {
		if sp.proc == nil {
			continue
		}
		if err := sp.proc.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s rmq did not stop cleanly on SIGTERM: %v\n", sp.name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// skipShort skips integration tests under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against the rmq binary; skipped with -short")
	}
}

// sharedRMQ returns the process shared by the tests that need no restart,
// starting it on first use.
func sharedRMQ(t *testing.T) *harness.Process {
	t.Helper()
	return shared.get(t)
}

// get returns the process, starting it on first use.
func (sp *sharedProcess) get(t *testing.T) *harness.Process {
	t.Helper()
	skipShort(t)
	sp.once.Do(func() {
		dir := filepath.Join(tmpRoot, sp.name)
		if sp.err = os.Mkdir(dir, 0o755); sp.err != nil {
			return
		}
		sp.proc, sp.err = harness.Launch(harness.Config{Bin: rmqBin, WorkDir: dir, BrokerConf: sp.conf})
	})
	if sp.err != nil {
		t.Fatalf("%s rmq: %v", sp.name, sp.err)
	}
	if !sp.proc.Running() {
		t.Fatalf("%s rmq is not running; output:\n%s", sp.name, sp.proc.Logs())
	}
	sp.proc.AttachLogs(t)
	attachClientLog(t)
	return sp.proc
}

// ownRMQ starts a process for this test alone (restart and crash tests).
func ownRMQ(t *testing.T, conf ...string) *harness.Process {
	t.Helper()
	skipShort(t)
	p := harness.Start(t, harness.Config{Bin: rmqBin, BrokerConf: conf})
	attachClientLog(t)
	return p
}
