package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
)

// mqadmin5Lib is the directory of the rocketmq-tools 5.3.3 jars and their
// dependencies: $RMQ_MQADMIN5_LIB, else the one make controller-oracle
// fetches (integration/java/controller-oracle.sh).
func mqadmin5Lib(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java on PATH: stock mqadmin 5.3.3 cannot run")
	}
	dir := os.Getenv("RMQ_MQADMIN5_LIB")
	if dir == "" {
		dir = filepath.Join("java", "target", "controller-oracle-5.3.3", "lib")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "rocketmq-tools-5.3.3.jar")); len(m) == 0 {
		t.Skipf("no rocketmq-tools-5.3.3.jar in %s (set RMQ_MQADMIN5_LIB, or run make controller-oracle once)", dir)
	}
	return dir
}

// logbackNoise is what stock tools print besides the command's output:
// logback's status lines and stack frames (the controller oracle drops
// the same).
var logbackNoise = regexp.MustCompile(`^[0-9:,]+ \|-|^\s+at `)

// runMQAdmin5 runs stock mqadmin 5.3.3 in its own JVM (bounded: 60 s,
// -Xmx128m) and returns its output without logback's lines.
func runMQAdmin5(t *testing.T, lib string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"logback.xml", "rmq.tools.logback.xml", "logback_tools.xml"} {
		if err := os.WriteFile(filepath.Join(home, "conf", f), []byte(`<configuration><root level="WARN"/></configuration>`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Xms32m", "-Xmx128m", "-Duser.home="+home, "-Drocketmq.client.logRoot="+filepath.Join(home, "logs"),
		"-cp", filepath.Join(lib, "*"), "org.apache.rocketmq.tools.command.MQAdminStartup")
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), "ROCKETMQ_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mqadmin %v: %v\n%s", args, err, out)
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if !logbackNoise.MatchString(l) {
			keep = append(keep, l)
		}
	}
	s := strings.Join(keep, "\n")
	if strings.Contains(s, "Exception") {
		t.Fatalf("mqadmin %v failed:\n%s", args, s)
	}
	return s
}

// Stock mqadmin 5.3.3 haStatus against an rmq SYNC_MASTER and its SLAVE
// prints the slave's connection (ack at the master's end, diff 0, OK),
// and rmq admin haStatus prints the same text but for the KB/s figure
// (the last second's bytes, which moves between the two calls); against
// the slave it prints the master's HA address and the slave's offset.
func TestStockMQAdminHAStatus(t *testing.T) {
	lib := mqadmin5Lib(t)
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	m := tc.Broker.Broker
	s := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) { o.BrokerRole, o.BrokerID = "SLAVE", 1 })).Broker
	s.SetHAMasterAddress(m.HAAddr())
	for i := 0; i < 10; i++ { // SYNC_MASTER: SEND_OK once the slave has it
		tc.Broker.MustSend(brokertest.Send{Topic: "HaStatusStock", Body: []byte("body-" + strconv.Itoa(i))})
	}
	end := m.Store().MaxPhyOffset()
	testutil.WaitFor(t, 30*time.Second, func() bool {
		st, _ := m.HAMasterStats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset == end
	}, "the slave to connect and ack")
	st, _ := m.HAMasterStats()
	slave := st.Slaves[0].Addr

	out := runMQAdmin5(t, lib, "haStatus", "-n", tc.NamesrvAddr(), "-b", m.Addr())
	t.Logf("mqadmin 5.3.3 haStatus -b master:\n%s", out)
	e := strconv.FormatInt(end, 10)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(slave) + `\s+` + e + `\s+0\s+\d+\.\d\d\s+OK\s+` + e + `$`)
	if !strings.Contains(out, "#MasterAddr\t"+m.Addr()+"\n#MasterCommitLogMaxOffset\t"+e+"\n#SlaveNum\t1\n#InSyncSlaveNum\t1\n") || !row.MatchString(out) {
		t.Fatalf("mqadmin haStatus -b master lacks the slave's connection %s (ack %s):\n%s", slave, e, out)
	}

	a := admin.New(admin.Options{NamesrvAddr: tc.NamesrvAddr()})
	defer a.Close()
	sts, err := a.HAStatuses(context.Background(), m.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	var ours strings.Builder
	admin.PrintHAStatus(&ours, sts[0])
	speed := regexp.MustCompile(`\d+\.\d\d`)
	if g, w := speed.ReplaceAllString(strings.TrimSpace(ours.String()), "K.KK"), speed.ReplaceAllString(strings.TrimSpace(out), "K.KK"); g != w {
		t.Fatalf("rmq admin haStatus:\n%s\nstock mqadmin:\n%s", g, w)
	}

	out = runMQAdmin5(t, lib, "haStatus", "-n", tc.NamesrvAddr(), "-b", s.Addr())
	t.Logf("mqadmin 5.3.3 haStatus -b slave:\n%s", out)
	if !strings.Contains(out, "#MasterAddr\t"+m.HAAddr()+"\n#CommitLogMaxOffset\t"+e+"\n#TransferSpeed(KB/s)\t") ||
		!regexp.MustCompile(`#LastReadTime\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\n`).MatchString(out) ||
		!strings.Contains(out, "#MasterFlushOffset\t0") {
		t.Fatalf("mqadmin haStatus -b slave:\n%s", out)
	}
}

// Stock mqadmin 5.3.3 haStatus against two rmq brokers in controller mode
// under an rmq controller (AutoSwitch HA): the master the controller
// elected prints its commitlog end, one slave in the sync state set and the
// slave's connection (ack at the end, diff 0, OK), as 5.3.3's
// AutoSwitchHAService.getRuntimeInfo fills it; the slave prints itself as
// a slave (#MasterAddr the master's HA address, its commitlog end).
func TestStockMQAdminHAStatusControllerMode(t *testing.T) {
	lib := mqadmin5Lib(t)
	mb, sb := testbroker.StartControllerPair(t)
	m, s := mb.Broker, sb.Broker
	for i := 0; i < 10; i++ {
		mb.MustSend(brokertest.Send{Topic: "HaStatusCtl", Body: []byte("body-" + strconv.Itoa(i))})
	}
	end := m.Store().MaxPhyOffset()
	testutil.WaitFor(t, 30*time.Second, func() bool {
		st, _ := s.ControllerState()
		return s.Store().MaxPhyOffset() == end && st.ConfirmOffset == end
	}, "the slave to hold and confirm the sends")
	ns := m.Options().NamesrvAddr
	e := strconv.FormatInt(end, 10)

	out := runMQAdmin5(t, lib, "haStatus", "-n", ns, "-b", m.Addr())
	t.Logf("mqadmin 5.3.3 haStatus -b master (controller mode):\n%s", out)
	row := regexp.MustCompile(`(?m)^127\.0\.0\.1:\d+\s+` + e + `\s+0\s+\d+\.\d\d\s+OK\s+` + e + `$`)
	if !strings.Contains(out, "#MasterAddr\t"+m.Addr()+"\n#MasterCommitLogMaxOffset\t"+e+"\n#SlaveNum\t1\n#InSyncSlaveNum\t1\n") || !row.MatchString(out) {
		t.Fatalf("mqadmin haStatus -b master lacks the slave's connection (ack %s):\n%s", e, out)
	}

	out = runMQAdmin5(t, lib, "haStatus", "-n", ns, "-b", s.Addr())
	t.Logf("mqadmin 5.3.3 haStatus -b slave (controller mode):\n%s", out)
	if !regexp.MustCompile(`#MasterAddr\t127\.0\.0\.1:\d+\n#CommitLogMaxOffset\t`+e+`\n#TransferSpeed\(KB/s\)\t`).MatchString(out) ||
		strings.Contains(out, "#SlaveNum") ||
		!regexp.MustCompile(`#LastReadTime\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\n`).MatchString(out) ||
		strings.Contains(out, "#LastReadTime\t1970") || strings.Contains(out, "#LastWriteTime\t1970") ||
		!strings.Contains(out, "#MasterFlushOffset\t0") {
		t.Fatalf("mqadmin haStatus -b slave:\n%s", out)
	}
	// The HA client's times are of its last read and write (the slave
	// reports on every chunk and heartbeat): within the last minute.
	// masterFlushOffset is stock's store checkpoint value, 0 unless 906/908
	// set it (AutoSwitchHAService.getRuntimeInfo :390).
	a := admin.New(admin.Options{NamesrvAddr: ns})
	defer a.Close()
	info, err := a.HAStatus(context.Background(), s.Addr())
	if err != nil {
		t.Fatalf("rmq admin haStatus -b slave: %v", err)
	}
	cl, now := info.HAClientRuntimeInfo, time.Now().UnixMilli()
	for name, ms := range map[string]int64{"lastReadTimestamp": cl.LastReadTimestamp, "lastWriteTimestamp": cl.LastWriteTimestamp} {
		if ms < now-60_000 || ms > now+1000 {
			t.Errorf("slave %s %d, want within the last minute of %d", name, ms, now)
		}
	}
	if cl.MasterFlushOffset != 0 || cl.MaxOffset != end {
		t.Errorf("slave client info %+v, want masterFlushOffset 0 and maxOffset %d", cl, end)
	}
}
