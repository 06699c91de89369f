package pop_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// Environment of the crash child: its store directory and listen port.
const (
	crashDirEnv  = "RMQ_POP_CRASH_CHILD_DIR"
	crashPortEnv = "RMQ_POP_CRASH_CHILD_PORT"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		os.Exit(runCrashChild(dir))
	}
	os.Exit(m.Run())
}

func crashOptions(t testing.TB, dir string, port int) broker.Options {
	o := testbroker.Options(t, nil)
	o.StorePathRootDir, o.ListenPort = dir, port
	return o
}

// runCrashChild runs a broker on the wall clock until it is killed.
func runCrashChild(dir string) int {
	port, _ := strconv.Atoi(os.Getenv(crashPortEnv))
	o := broker.DefaultOptions()
	o.StorePathRootDir, o.ListenPort = dir, port
	o.ListenHost, o.BrokerIP1 = "127.0.0.1", "127.0.0.1"
	o.MappedFileSizeCommitLog = 1 << 20
	o.MappedFileSizeConsumeQueue = 20 * 1024
	o.MaxMessageSize = 64 << 10
	o.Logger = zerolog.Nop()
	b, err := broker.New(o)
	if err == nil {
		err = b.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		return 2
	}
	fmt.Println("READY")
	select {}
}

// TestKill9WithPoppedMessages pops six messages from a broker process,
// acks three, kills the process with SIGKILL (no shutdown: neither the
// consumer offsets nor the replay start are written) and restarts the
// broker on its store: the three unacked messages stay invisible until
// their invisible time ends, then come back once each; the acked ones never
// do.
func TestKill9WithPoppedMessages(t *testing.T) {
	dir := t.TempDir()
	port := testutil.FreePortPair(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashPortEnv+"="+strconv.Itoa(port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "READY"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("child did not start: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not start in time: %s", stderr.String())
	}

	cli := brokertest.NewClient(t, "127.0.0.1:"+strconv.Itoa(port))
	if resp := cli.Invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("T", 1, 6, "SINGLE_TAG"), nil); resp.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	for i := 0; i < 6; i++ {
		cli.MustSend(brokertest.Send{Topic: "T", Body: []byte(fmt.Sprintf("m%d", i))})
	}
	// The wall clock drives the child: pop with its bornTime.
	live := &env{t: t, clk: clock.NewManual(time.Now())}
	live.Broker = &testbroker.Broker{Client: cli, T: t, Opts: crashOptions(t, dir, port)}
	var ps []popped
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		live.clk.Set(time.Now())
		got, _ := live.pop("T", 0, 32, 5000, nil)
		ps = append(ps, got...)
		return len(ps) == 6
	}, "six messages popped")
	for _, i := range []int{0, 2, 4} {
		live.ack(ps[i])
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	cli.Close()

	e := &env{t: t, clk: clock.NewManual(time.Now())}
	o := crashOptions(t, dir, port)
	o.Clock = e.clk
	e.Broker = testbroker.Start(t, o)
	if st := e.Pop().Stats(); st.InFlight != 3 {
		t.Fatalf("after the crash: %+v, want 3 in flight", st)
	}
	if again, _ := e.pop("T", -1, 32, 5000, nil); len(again) != 0 {
		t.Fatalf("popped %v again before their invisible time", bodies(again))
	}
	e.advanceAndSettle(6*time.Second, e.reviveMax()+2)
	e.WaitDispatched()
	re, _ := e.pop("T", -1, 32, 5000, nil)
	got := bodies(re)
	sort.Strings(got)
	if !reflect.DeepEqual(got, []string{"m1", "m3", "m5"}) {
		t.Fatalf("after the invisible time: %v, want [m1 m3 m5]", got)
	}
	for _, p := range re {
		e.ack(p)
	}
	e.advanceAndSettle(time.Hour, e.reviveMax())
	if st := e.Pop().Stats(); st.InFlight != 0 || st.Revived != 3 {
		t.Fatalf("at the end: %+v", st)
	}
	if again, _ := e.pop("T", -1, 32, 5000, nil); len(again) != 0 {
		t.Fatalf("popped %v at the end", bodies(again))
	}
}
