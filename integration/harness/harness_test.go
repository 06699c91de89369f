package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeRMQ is a stand-in for the rmq binary. Its behaviour is picked by the
// last argument (Config.Args). It records its pid and counts its starts in the
// store directory, which Restart must keep.
const fakeRMQ = `#!/bin/sh
mode=ok
for a in "$@"; do mode=$a; done
while [ $# -gt 0 ]; do
  case $1 in --store-dir) store=$2; shift;; --listen-port) bp=$2; shift;; esac
  shift
done
mkdir -p "$store"
echo $$ > "$store/pid"
echo x >> "$store/starts"
echo "args ok store=$store" >&2
case $mode in
  dirty) trap 'exit 3' TERM;;
  ignore-term) trap '' TERM;;
  *) trap 'echo bye >&2; exit 0' TERM;;
esac
case $mode in
  die) echo "The Name Server boot success. serializeType=JSON"; exit 7;;
  silent) echo "The Name Server boot success. serializeType=JSON";;
  *) echo "The Name Server boot success. serializeType=JSON"
     printf 'The broker[broker-a, 127.0.0.1:%s] boot' "$bp"
     sleep 0.1
     printf ' success. serializeType=JSON and name server is 127.0.0.1:1\n';;
esac
while :; do sleep 0.05; done
`

func writeFake(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fake-rmq")
	if err := os.WriteFile(bin, []byte(fakeRMQ), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func readPid(t *testing.T, store string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid no longer exists (it was reaped).
func gone(pid int) error {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("pid %d still exists", pid)
}

func TestFreePorts(t *testing.T) {
	np, bp, err := FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	ports := map[int]bool{np: true, bp: true, bp - 2: true, bp + 1: true}
	if len(ports) != 4 {
		t.Fatalf("ports collide: np=%d bp=%d", np, bp)
	}
	for p := range ports {
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
	}
}

func TestPoll(t *testing.T) {
	errNo := errors.New("not yet")
	tests := []struct {
		name      string
		okAfter   int // calls before cond holds; -1 = never
		timeout   time.Duration
		wantErr   bool
		wantCalls int // exact number of calls when it succeeds
	}{
		{name: "immediately", okAfter: 0, timeout: time.Second, wantCalls: 1},
		{name: "third call", okAfter: 2, timeout: 5 * time.Second, wantCalls: 3},
		{name: "never", okAfter: -1, timeout: 150 * time.Millisecond, wantErr: true},
		{name: "zero timeout still calls once", okAfter: 0, timeout: 0, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := Poll(tc.timeout, func() error {
				calls++
				if tc.okAfter >= 0 && calls > tc.okAfter {
					return nil
				}
				return errNo
			})
			if tc.wantErr {
				if !errors.Is(err, ErrTimeout) || !errors.Is(err, errNo) {
					t.Fatalf("err = %v, want ErrTimeout wrapping the condition error", err)
				}
				if el := time.Since(start); el < tc.timeout {
					t.Fatalf("gave up after %v, before the %v deadline", el, tc.timeout)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if calls != tc.wantCalls {
				t.Fatalf("calls = %d, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// recordTB captures Fatal instead of stopping the test.
type recordTB struct {
	testing.TB
	fatal string
}

func (r *recordTB) Helper()           {}
func (r *recordTB) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }

func TestWaitForFailsWithLastError(t *testing.T) {
	rec := &recordTB{TB: t}
	n := 0
	WaitFor(rec, 100*time.Millisecond, func() error { n++; return fmt.Errorf("attempt %d", n) })
	if !strings.Contains(rec.fatal, fmt.Sprintf("attempt %d", n)) {
		t.Fatalf("fatal = %q, want the last condition error (attempt %d)", rec.fatal, n)
	}
	rec = &recordTB{TB: t}
	WaitFor(rec, time.Second, func() error { return nil })
	if rec.fatal != "" {
		t.Fatalf("fatal = %q for a condition that holds", rec.fatal)
	}
}

func TestStreamSplitsLinesAndWatchesReadiness(t *testing.T) {
	tests := []struct {
		name      string
		writes    []string
		wantLines []string
		wantReady bool
	}{
		{
			name:      "both lines, broker line split across writes",
			writes:    []string{"The Name Server boot success. serializeType=JSON\nThe broker[b, 127.0.0.1:1] boot", " success. x\r\n"},
			wantLines: []string{"The Name Server boot success. serializeType=JSON", "The broker[b, 127.0.0.1:1] boot success. x"},
			wantReady: true,
		},
		{
			name:      "name server only",
			writes:    []string{"The Name Server boot success\n", "partial"},
			wantLines: []string{"The Name Server boot success"},
		},
		{
			name:      "boot success without the broker prefix",
			writes:    []string{"The Name Server boot success\nsomething boot success\n"},
			wantLines: []string{"The Name Server boot success", "something boot success"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := &logBuffer{}
			w := newReadyWatch()
			buf.setWatch(w)
			s := &stream{buf: buf, stdout: true}
			for _, chunk := range tc.writes {
				if n, err := s.Write([]byte(chunk)); err != nil || n != len(chunk) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := buf.since(0); got != strings.Join(tc.wantLines, "\n") {
				t.Fatalf("lines = %q, want %q", got, tc.wantLines)
			}
			select {
			case <-w.ready:
				if !tc.wantReady {
					t.Fatal("ready signalled")
				}
			default:
				if tc.wantReady {
					t.Fatal("ready not signalled")
				}
			}
		})
	}
}

func TestProcessLifecycle(t *testing.T) {
	bin := writeFake(t)
	p := Start(t, Config{Bin: bin, BrokerConf: []string{"flushDiskType=SYNC_FLUSH"}})
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	conf, err := os.ReadFile(filepath.Join(filepath.Dir(p.StoreDir()), "broker.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(conf) != "flushDiskType=SYNC_FLUSH\nbrokerIP1=127.0.0.1\nsmallStore=true\n" {
		t.Fatalf("broker.conf = %q", conf)
	}
	if !strings.Contains(p.Logs(), "args ok store="+p.StoreDir()) {
		t.Fatalf("stderr not captured or store dir not passed:\n%s", p.Logs())
	}
	if want := fmt.Sprintf("127.0.0.1:%d]", p.BrokerPort()); !strings.Contains(p.Logs(), want) {
		t.Fatalf("listen port not passed (%s):\n%s", want, p.Logs())
	}
	if p.BrokerVIPAddr() != fmt.Sprintf("127.0.0.1:%d", p.BrokerPort()-2) {
		t.Fatalf("VIP addr = %s", p.BrokerVIPAddr())
	}
	if err := p.Restart(); !errors.Is(err, ErrStillRunning) {
		t.Fatalf("Restart while running = %v", err)
	}

	first := readPid(t, p.StoreDir())
	mark := p.LogMark()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.ExitCode() != 0 || !strings.Contains(p.LogsSince(mark), "bye") {
		t.Fatalf("exit %d, output since stop: %q", p.ExitCode(), p.LogsSince(mark))
	}
	if err := p.Stop(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second Stop = %v", err)
	}

	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	second := readPid(t, p.StoreDir())
	if second == first || p.Pid() != second {
		t.Fatalf("pids: first %d second %d current %d", first, second, p.Pid())
	}
	starts, _ := os.ReadFile(filepath.Join(p.StoreDir(), "starts"))
	if strings.Count(string(starts), "x") != 2 {
		t.Fatalf("store dir not kept across restart: starts=%q", starts)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() || p.ExitCode() != -1 {
		t.Fatalf("after Kill: running=%v exit=%d", p.Running(), p.ExitCode())
	}
	WaitFor(t, 5*time.Second, func() error { return gone(second) })
}

func TestProcessFailures(t *testing.T) {
	bin := writeFake(t)
	tests := []struct {
		name          string
		mode          string
		readyTimeout  time.Duration
		stopTimeout   time.Duration
		wantLaunchErr error
		wantStopErr   error
	}{
		{name: "exits before ready", mode: "die", wantLaunchErr: ErrExitedEarly},
		{name: "never ready", mode: "silent", readyTimeout: 500 * time.Millisecond, wantLaunchErr: ErrNotReady},
		{name: "non-zero exit on SIGTERM", mode: "dirty", wantStopErr: ErrUncleanExit},
		{name: "ignores SIGTERM", mode: "ignore-term", stopTimeout: 300 * time.Millisecond, wantStopErr: ErrStopTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := Launch(Config{Bin: bin, WorkDir: dir, Args: []string{tc.mode},
				ReadyTimeout: tc.readyTimeout, StopTimeout: tc.stopTimeout})
			pid := readPid(t, filepath.Join(dir, "store"))
			if tc.wantLaunchErr != nil {
				if !errors.Is(err, tc.wantLaunchErr) || !strings.Contains(err.Error(), "args ok") {
					t.Fatalf("Launch err = %v, want %v carrying the output", err, tc.wantLaunchErr)
				}
				WaitFor(t, 5*time.Second, func() error { return gone(pid) })
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := p.Stop(); !errors.Is(err, tc.wantStopErr) {
				t.Fatalf("Stop = %v, want %v", err, tc.wantStopErr)
			}
			WaitFor(t, 5*time.Second, func() error { return gone(pid) })
		})
	}
}

func TestLaunchNeedsBinAndWorkDir(t *testing.T) {
	if _, err := Launch(Config{WorkDir: t.TempDir()}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("err = %v", err)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if !isRMQModule(filepath.Join(root, "go.mod")) {
		t.Fatalf("%s has no rmq go.mod", root)
	}
	wd, _ := os.Getwd()
	if !strings.HasPrefix(wd, root) {
		t.Fatalf("root %s is not above %s", root, wd)
	}
}
