//go:build linux

package soak

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/integration/harness"
)

// javaBroker is the stock Java name server and broker (5.3.3 jars: delay
// levels and timers), run by the soak in place of rmq with the same broker
// settings (soak.java). Their logs go to a directory outside the capped
// store; only the store is on the tmpfs.
type javaBroker struct {
	ns, broker string
	procs      []*exec.Cmd
}

// Readiness lines of the stock Java processes (as bench/compare's).
const (
	javaNamesrvReady = "The Name Server boot success"
	javaBrokerReady  = "boot success. serializeType="
	javaBootTimeout  = 3 * time.Minute
)

// JVM settings of bench/compare (peer.go): a 1 GiB heap and the JDK 17
// opens the MappedFile cleaner needs.
var (
	javaOpens = []string{
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
	}
	javaBrokerJVM = []string{
		"-server", "-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g",
		"-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
		"-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
		"-XX:-OmitStackTraceInFastThrow",
	}
)

// startJavaBroker starts the Java name server and broker from the jars in
// lib, the store under storeDir, with brokerConf's lines added to the stock
// identity keys. Both are stopped (SIGTERM, then SIGKILL) when t ends.
func startJavaBroker(t *testing.T, lib, storeDir string, brokerConf []string) *javaBroker {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(lib, "rocketmq-broker-*.jar")); len(m) == 0 {
		t.Fatalf("soak.java: no rocketmq-broker jar in %s (make bench-compare fetches them to ~/.cache/rmq-bench-compare)", lib)
	}
	home := t.TempDir() // user.home and ROCKETMQ_HOME: logs stay off the tmpfs
	np, bp, err := harness.FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	jb := &javaBroker{ns: fmt.Sprintf("127.0.0.1:%d", np), broker: fmt.Sprintf("127.0.0.1:%d", bp)}
	t.Cleanup(jb.stop)

	nsConf := filepath.Join(home, "namesrv.conf")
	writeLines(t, nsConf, []string{fmt.Sprintf("listenPort=%d", np), "rocketmqHome=" + home})
	jb.run(t, home, javaNamesrvReady, []string{"-Xms256m", "-Xmx256m", "-XX:+UseG1GC",
		"-Duser.home=" + home, "-Drmq.logback.configurationFile=rmq.namesrv.logback.xml",
		"-cp", filepath.Join(lib, "*"), "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", nsConf})

	conf := append([]string{
		"brokerClusterName=DefaultCluster", "brokerName=broker-a", "brokerId=0",
		"brokerRole=ASYNC_MASTER", "flushDiskType=ASYNC_FLUSH", "brokerIP1=127.0.0.1",
		"namesrvAddr=" + jb.ns, fmt.Sprintf("listenPort=%d", bp),
		"storePathRootDir=" + storeDir, "storePathCommitLog=" + filepath.Join(storeDir, "commitlog"),
		"rocketmqHome=" + home, "autoCreateTopicEnable=true",
	}, brokerConf...)
	brokerConfFile := filepath.Join(home, "broker.conf")
	writeLines(t, brokerConfFile, conf)
	argv := append(append(append([]string{}, javaBrokerJVM...), javaOpens...),
		"-Duser.home="+home, "-Drmq.logback.configurationFile=rmq.broker.logback.xml",
		"-cp", filepath.Join(lib, "*"), "org.apache.rocketmq.broker.BrokerStartup", "-c", brokerConfFile)
	jb.run(t, home, javaBrokerReady, argv)
	return jb
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run starts java with argv and waits for ready on its standard output.
func (jb *javaBroker) run(t *testing.T, home, ready string, argv []string) {
	t.Helper()
	cmd := exec.Command("java", argv...)
	cmd.Env = append(os.Environ(), "ROCKETMQ_HOME="+home)
	cmd.Dir = home
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("soak.java: start java: %v", err)
	}
	jb.procs = append(jb.procs, cmd)
	seen := make(chan struct{})
	var mu sync.Mutex
	var tail []string
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			if !found {
				mu.Lock()
				tail = append(tail, sc.Text())
				mu.Unlock()
				if strings.Contains(sc.Text(), ready) {
					found = true
					close(seen)
				}
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case <-seen:
	case <-time.After(javaBootTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("soak.java: %q not printed within %v; output:\n%s", ready, javaBootTimeout, strings.Join(tail, "\n"))
	}
}

// stop ends the broker, then the name server: SIGTERM, SIGKILL after 30 s.
func (jb *javaBroker) stop() {
	for i := len(jb.procs) - 1; i >= 0; i-- {
		c := jb.procs[i]
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			<-done
		}
	}
}
