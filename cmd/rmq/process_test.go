package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

const bootDeadline = 30 * time.Second

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// rmqBinary builds the command once per test binary.
func rmqBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "rmq-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "rmq")
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running rmq process with its stdout lines and stderr captured.
type proc struct {
	name   string
	cmd    *exec.Cmd
	lines  chan string
	stderr *testutil.LockedBuffer
	done   chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{
		name:   name,
		cmd:    exec.Command(rmqBinary(t), args...),
		lines:  make(chan string, 64),
		stderr: &testutil.LockedBuffer{},
		done:   make(chan struct{}),
	}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
		}
	})
	return p
}

// waitLine returns the first stdout line containing substr.
func (p *proc) waitLine(t *testing.T, substr string) string {
	t.Helper()
	deadline := time.After(bootDeadline)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s: stdout closed before a line with %q (exit: %v)", p.name, substr, p.cmd.ProcessState)
			}
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("%s: no line with %q within %v", p.name, substr, bootDeadline)
		}
	}
}

// signal sends sig and returns the exit code, failing if the process does not
// exit in time.
func (p *proc) signal(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(bootDeadline):
		t.Fatalf("%s did not exit within %v of %v", p.name, bootDeadline, sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// clusterInfo returns the raw GET_BROKER_CLUSTER_INFO body of a name server.
func clusterInfo(cli *remoting.Client, nsAddr string) (string, error) {
	resp, err := cli.InvokeTimeout(nsAddr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), 3*time.Second)
	if err != nil {
		return "", err
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
	}
	return string(resp.Body), nil
}

func smallStoreConf(t *testing.T, extra string) string {
	t.Helper()
	return writeFile(t, "broker.conf", "brokerIP1=127.0.0.1\nmappedFileSizeCommitLog=8388608\nmappedFileSizeConsumeQueue=6000\ngrpcServerPort=0\n"+extra)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func TestStandaloneBootAndSigterm(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	np := testutil.FreePort(t)
	bp := testutil.FreePortPair(t, np)
	p := startProc(t, "standalone", "standalone", "-c", smallStoreConf(t, ""), "--store-dir", store,
		"--namesrv-port", fmt.Sprint(np), "--listen-port", fmt.Sprint(bp))

	if got, want := p.waitLine(t, "The Name Server boot success"), "The Name Server boot success. serializeType=JSON"; got != want {
		t.Fatalf("name server line %q, want %q", got, want)
	}
	wantBroker := fmt.Sprintf("The broker[broker-a, 127.0.0.1:%d] boot success. serializeType=JSON and name server is 127.0.0.1:%d", bp, np)
	if got := p.waitLine(t, "boot success"); got != wantBroker {
		t.Fatalf("broker line %q, want %q", got, wantBroker)
	}
	abort := filepath.Join(store, "abort")
	if !fileExists(abort) {
		t.Fatalf("%s missing while running", abort)
	}

	// The broker registered with the in-process name server, on both ports' address.
	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	nsAddr := fmt.Sprintf("127.0.0.1:%d", np)
	brokerAddr := fmt.Sprintf("127.0.0.1:%d", bp)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		body, err := clusterInfo(cli, nsAddr)
		return err == nil && strings.Contains(body, brokerAddr)
	}, "broker registration")
	for _, port := range []int{bp, bp - 2} {
		c, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", port), 3*time.Second)
		if err != nil {
			t.Fatalf("broker port %d: %v", port, err)
		}
		c.Close()
	}

	if code := p.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	if fileExists(abort) {
		t.Fatalf("%s left after a clean shutdown", abort)
	}
}

func TestSeparateNamesrvAndBroker(t *testing.T) {
	np := testutil.FreePort(t)
	bp := testutil.FreePortPair(t, np)
	nsAddr := fmt.Sprintf("127.0.0.1:%d", np)
	ns := startProc(t, "namesrv", "namesrv", "-c", "../../conf/namesrv.conf", "--listen-port", fmt.Sprint(np))
	if got, want := ns.waitLine(t, "boot success"), "The Name Server boot success. serializeType=JSON"; got != want {
		t.Fatalf("name server line %q, want %q", got, want)
	}

	store := filepath.Join(t.TempDir(), "store")
	b := startProc(t, "broker", "broker", "-n", nsAddr, "-c", smallStoreConf(t, "brokerName=broker-x\nbrokerClusterName=ClusterX\n"),
		"--store-dir", store, "--listen-port", fmt.Sprint(bp))
	wantBroker := fmt.Sprintf("The broker[broker-x, 127.0.0.1:%d] boot success. serializeType=JSON and name server is %s", bp, nsAddr)
	if got := b.waitLine(t, "boot success"); got != wantBroker {
		t.Fatalf("broker line %q, want %q", got, wantBroker)
	}

	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		body, err := clusterInfo(cli, nsAddr)
		return err == nil && strings.Contains(body, "broker-x") && strings.Contains(body, "ClusterX")
	}, "broker-x in cluster info")

	if code := b.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("broker exit code %d after SIGTERM", code)
	}
	if fileExists(filepath.Join(store, "abort")) {
		t.Fatal("abort file left after a clean broker shutdown")
	}
	// The broker unregistered (or its connection closed) on shutdown.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		body, err := clusterInfo(cli, nsAddr)
		return err == nil && !strings.Contains(body, "broker-x")
	}, "broker-x gone from cluster info")

	if code := ns.signal(t, syscall.SIGINT); code != 0 {
		t.Fatalf("name server exit code %d after SIGINT", code)
	}
}

func TestBrokerStartFailureExits(t *testing.T) {
	// The broker port is taken: start must fail with exit 1 and no boot line.
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bp := l.Addr().(*net.TCPAddr).Port
	store := filepath.Join(t.TempDir(), "store")
	p := startProc(t, "broker", "broker", "-c", smallStoreConf(t, ""), "--store-dir", store, "--listen-port", fmt.Sprint(bp))
	select {
	case <-p.done:
	case <-time.After(bootDeadline):
		t.Fatal("broker did not exit although its port is taken")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	for l := range p.lines {
		if strings.Contains(l, "boot success") {
			t.Fatalf("announced %q although start failed", l)
		}
	}
	if fileExists(filepath.Join(store, "abort")) {
		t.Fatal("abort file left after a failed start")
	}
}

// TestGRPCPortTakenNamesTheKeys: with the gRPC port taken, standalone exits
// 1 with an error that names grpcServerPort and enableGrpc (a second rmq on
// one machine meets this first); with a free one, the ready block lists it.
func TestGRPCPortTakenNamesTheKeys(t *testing.T) {
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	gp := l.Addr().(*net.TCPAddr).Port
	np := testutil.FreePort(t)
	bp := testutil.FreePortPair(t, np)
	p := startProc(t, "standalone", "standalone", "-c", smallStoreConf(t, fmt.Sprintf("grpcServerPort=%d\n", gp)),
		"--store-dir", filepath.Join(t.TempDir(), "store"), "--namesrv-port", fmt.Sprint(np), "--listen-port", fmt.Sprint(bp))
	select {
	case <-p.done:
	case <-time.After(bootDeadline):
		t.Fatal("standalone did not exit although the gRPC port is taken")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if out := p.stderr.String(); !strings.Contains(out, "grpcServerPort") || !strings.Contains(out, "enableGrpc=false") {
		t.Fatalf("the error does not name grpcServerPort and enableGrpc:\n%s", out)
	}
	l.Close()

	np = testutil.FreePort(t)
	bp = testutil.FreePortPair(t, np)
	p = startProc(t, "standalone", "standalone", "-c", smallStoreConf(t, fmt.Sprintf("grpcServerPort=%d\n", gp)),
		"--store-dir", filepath.Join(t.TempDir(), "store"), "--namesrv-port", fmt.Sprint(np), "--listen-port", fmt.Sprint(bp))
	p.waitLine(t, "boot success")
	want := fmt.Sprintf("gRPC         127.0.0.1:%d", gp)
	testutil.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(p.stderr.String(), want) }, "the ready block's gRPC line")
	if code := p.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}
