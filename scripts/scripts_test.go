package scripts

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestScripts builds rmq and runs scripts_test.sh, which starts and stops a
// name server and a broker through the scripts.
func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	bin := filepath.Join(t.TempDir(), "rmq")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/rmq").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "scripts_test.sh")
	cmd.Env = append(os.Environ(),
		"RMQ_BIN="+bin,
		"WORK="+t.TempDir(),
		"NS_PORT="+strconv.Itoa(freePort(t)),
		"BROKER_PORT="+strconv.Itoa(freePortPair(t)),
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "PASS") {
		t.Fatalf("scripts_test.sh: %v\n%s", err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freePortPair finds a free port p whose VIP port p-2 is free too.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 100 {
		p := freePort(t)
		if p < 10002 {
			continue
		}
		if l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p-2)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port pair")
	return 0
}
