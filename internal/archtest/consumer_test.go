package archtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userClientVersion is the stock Go client a user's module asks for beside
// rmqtest: a release tag, older than the pseudo-version rmq's own client
// tests use (integration/go.mod).
const userClientVersion = "v2.1.2"

// leakedModules are the module path prefixes that only rmq's benchmark and
// client tests need (the 5.x SDK, its Google API and OpenTelemetry
// dependencies). A user's module graph includes every requirement of rmq's
// go.mod, test-only ones too (graph pruning keeps a direct dependency's
// go.mod requirements), so none of them may be required there.
var leakedModules = []string{
	"github.com/apache/rocketmq-clients",
	"google.golang.org/api",
	"go.opentelemetry.io",
}

// TestImportingRMQTestKeepsTheUsersVersions builds the module graph of a
// throwaway module that imports rmqtest (rmq replaced by this checkout) and
// requires the stock Go client at a tag: the graph must hold none of
// leakedModules, and the client must stay at the tag. Before the benchmark
// harness and the client tests had modules of their own, importing rmqtest
// moved the client to a master pseudo-version and pulled in the 5.x SDK and
// google.golang.org/api.
//
// The go command runs with a module cache of its own (t.TempDir) that is
// filled from the user's module cache first (GOPROXY file://.../cache/download),
// then from the configured proxy; nothing is built, only go.mod files are read.
func TestImportingRMQTestKeepsTheUsersVersions(t *testing.T) {
	root, module := moduleRoot(t)
	env := goEnv(t, "GOMODCACHE", "GOPROXY")
	goLine := goDirective(t, filepath.Join(root, "go.mod"))

	dir := t.TempDir()
	gomod := "module example.com/rmqtestuser\n\n" + goLine + "\n\n" +
		"require (\n" +
		"\t" + module + " v0.0.0-00010101000000-000000000000\n" +
		"\tgithub.com/apache/rocketmq-client-go/v2 " + userClientVersion + "\n" +
		")\n\n" +
		"replace " + module + " => " + root + "\n"
	main := "package main\n\nimport _ \"" + module + "/rmqtest\"\n\nfunc main() {}\n"
	for name, text := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	proxy := "file://" + filepath.ToSlash(filepath.Join(env["GOMODCACHE"], "cache", "download"))
	if p := env["GOPROXY"]; p != "" {
		proxy += "," + p
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"),
		"GOPROXY="+proxy,
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all in a module importing rmqtest (GOPROXY=%s; the go.mod files of rocketmq-client-go %s and its requirements come from there): %v\n%s", proxy, userClientVersion, err, out)
	}

	var client string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, leaked := range leakedModules {
			if f[0] == leaked || strings.HasPrefix(f[0], leaked+"/") {
				t.Errorf("importing rmqtest brings %s %s into the user's module graph: rmq's go.mod requires it (move what needs it to integration/ or bench/compare)", f[0], f[1])
			}
		}
		if f[0] == "github.com/apache/rocketmq-client-go/v2" {
			client = f[1]
		}
	}
	if client != userClientVersion {
		t.Errorf("importing rmqtest moves the user's rocketmq-client-go/v2 from %s to %s", userClientVersion, client)
	}
}

// goEnv returns the go command's values of the named variables.
func goEnv(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("go env %v printed %q", names, out)
	}
	env := map[string]string{}
	for i, n := range names {
		env[n] = lines[i]
	}
	return env
}

// goDirective returns the "go 1.x" line of a go.mod file.
func goDirective(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "go ") {
			return line
		}
	}
	t.Fatalf("%s: no go directive", path)
	return ""
}
