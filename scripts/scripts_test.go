package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
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
		"NS_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"BROKER_PORT="+strconv.Itoa(testutil.FreePortPair(t)),
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "PASS") {
		t.Fatalf("scripts_test.sh: %v\n%s", err, out)
	}
}
