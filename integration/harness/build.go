package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoRepoRoot is returned when no enclosing directory holds the rmq go.mod.
// modulePath is the module this harness builds (go.mod).
const modulePath = "github.com/rmqio/rmq"

var ErrNoRepoRoot = errors.New("harness: no enclosing go.mod of module " + modulePath)

// RepoRoot returns the directory of the go.mod declaring module modulePath, searching
// from the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("harness: working directory: %w", err)
	}
	for {
		if isRMQModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoRepoRoot
		}
		dir = parent
	}
}

func isRMQModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// BuildRMQ compiles ./cmd/rmq of the enclosing repository into outDir and
// returns the binary's path. The go tool's output is part of the error.
func BuildRMQ(outDir string) (string, error) {
	return Build(outDir, "./cmd/rmq", "rmq")
}

// Build compiles the main package pkg (a path relative to the repository
// root, such as ./cmd/rmq) into outDir/name and returns the binary's path.
func Build(outDir, pkg, name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(outDir, name)
	cmd := exec.Command(goTool(), "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// goTool finds the go command: PATH first, then the standard install location
// (CI runs with a minimal PATH).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/local/go/bin/go", filepath.Join(os.Getenv("HOME"), "go", "bin", "go")} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
