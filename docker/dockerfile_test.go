package docker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword in upper case and
// the rest of its (joined) line with runs of blanks folded to one space.
type instruction struct {
	cmd  string
	args string
	line int
}

func (i instruction) String() string { return i.cmd + " " + i.args }

// stage is a FROM and the instructions after it up to the next FROM.
type stage struct {
	from instruction
	body []instruction
}

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM and the
// stages.
type dockerfile struct {
	path   string
	global []instruction
	stages []stage
}

// parseDockerfile reads the subset of the syntax the two files use:
// comment lines, blank lines, backslash continuations (comment lines inside
// a continuation are dropped, as Docker does) and one instruction a line.
func parseDockerfile(t *testing.T, file string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	df := dockerfile{path: file}
	var cur []string
	start := 0
	flush := func() {
		if len(cur) == 0 {
			return
		}
		fields := strings.Fields(strings.Join(cur, " "))
		cur = nil
		in := instruction{cmd: strings.ToUpper(fields[0]), args: strings.Join(fields[1:], " "), line: start}
		switch {
		case in.cmd == "FROM":
			df.stages = append(df.stages, stage{from: in})
		case len(df.stages) == 0:
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", file, in.line, in.cmd)
			}
			df.global = append(df.global, in)
		default:
			s := &df.stages[len(df.stages)-1]
			s.body = append(s.body, in)
		}
	}
	for n, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(cur) == 0 {
			start = n + 1
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur = append(cur, cont)
			continue
		}
		cur = append(cur, line)
		flush()
	}
	if len(cur) != 0 {
		t.Fatalf("%s: ends inside a continuation", file)
	}
	if len(df.stages) == 0 {
		t.Fatalf("%s: no FROM", file)
	}
	return df
}

// argDefault is the default of a global ARG NAME=default.
func (df dockerfile) argDefault(t *testing.T, name string) string {
	t.Helper()
	for _, in := range df.global {
		if k, v, ok := strings.Cut(in.args, "="); ok && k == name {
			return v
		}
	}
	t.Fatalf("%s: no global ARG %s=<default>", df.path, name)
	return ""
}

// named is the stage FROM ... AS name.
func (df dockerfile) named(t *testing.T, name string) stage {
	t.Helper()
	for _, s := range df.stages {
		if f := strings.Fields(s.from.args); len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") && f[len(f)-1] == name {
			return s
		}
	}
	t.Fatalf("%s: no stage %q", df.path, name)
	return stage{}
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func (s stage) has(cmd, args string) bool {
	return slices.ContainsFunc(s.body, func(in instruction) bool { return in.cmd == cmd && in.args == args })
}

func (s stage) declaresArg(name string) bool {
	return slices.ContainsFunc(s.all("ARG"), func(in instruction) bool {
		k, _, _ := strings.Cut(in.args, "=")
		return k == name
	})
}

const (
	rootDockerfile    = "../Dockerfile"
	offlineDockerfile = "Dockerfile"
)

// TestDockerfilesShareTheLastStage: the image users build from a registry
// and the one make image builds offline are the same image. Both last
// stages are FROM scratch and the same instructions, and the default
// ROCKETMQ_VERSION is the same.
func TestDockerfilesShareTheLastStage(t *testing.T) {
	root, offline := parseDockerfile(t, rootDockerfile), parseDockerfile(t, offlineDockerfile)
	rl, ol := root.stages[len(root.stages)-1], offline.stages[len(offline.stages)-1]
	if rl.from.args != "scratch" || ol.from.args != "scratch" {
		t.Fatalf("last stages: FROM %s (root), FROM %s (docker/), want FROM scratch", rl.from.args, ol.from.args)
	}
	n := max(len(rl.body), len(ol.body))
	for i := range n {
		var r, o string
		if i < len(rl.body) {
			r = rl.body[i].String()
		}
		if i < len(ol.body) {
			o = ol.body[i].String()
		}
		if r != o {
			t.Errorf("last stages differ at instruction %d:\n  Dockerfile:        %s\n  docker/Dockerfile: %s", i+1, r, o)
		}
	}
	if r, o := root.argDefault(t, "ROCKETMQ_VERSION"), offline.argDefault(t, "ROCKETMQ_VERSION"); r != o {
		t.Errorf("ROCKETMQ_VERSION defaults differ: %s (root), %s (docker/)", r, o)
	}
}

// TestLastStageLayout pins what stock compose files and recipes rely on:
// the stock variables, working directory, user, volume and ports, and that
// the last stage only copies layout.sh's two trees.
func TestLastStageLayout(t *testing.T) {
	df := parseDockerfile(t, offlineDockerfile)
	last := df.stages[len(df.stages)-1]
	for _, want := range []struct{ cmd, args string }{
		{"ARG", "ROCKETMQ_VERSION"},
		{"COPY", "--from=rootfs /out/root/ /"},
		{"COPY", "--from=rootfs --chown=3000:3000 /out/home/ /home/"},
		{"ENV", "ROCKETMQ_VERSION=${ROCKETMQ_VERSION}"},
		{"USER", "3000:3000"},
		{"WORKDIR", "${ROCKETMQ_HOME}/bin"},
		{"VOLUME", `["/home/rocketmq/store"]`},
		{"CMD", `["./rmq", "standalone"]`},
	} {
		if !last.has(want.cmd, want.args) {
			t.Errorf("last stage: no %s %s", want.cmd, want.args)
		}
	}
	env := map[string]string{}
	for _, in := range last.all("ENV") {
		for _, kv := range strings.Fields(in.args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("line %d: ENV %s: want KEY=value", in.line, in.args)
			}
			env[k] = v
		}
	}
	for k, want := range map[string]string{
		"ROCKETMQ_HOME": "/home/rocketmq/rocketmq-${ROCKETMQ_VERSION}",
		"HOME":          "/home/rocketmq",
	} {
		if env[k] != want {
			t.Errorf("ENV %s=%q, want %q", k, env[k], want)
		}
	}
	if !slices.Contains(strings.Split(env["PATH"], ":"), "/home/rocketmq/rmq/bin") {
		t.Errorf("PATH %q lacks /home/rocketmq/rmq/bin", env["PATH"])
	}
	var ports []string
	for _, in := range last.all("EXPOSE") {
		ports = append(ports, strings.Fields(in.args)...)
	}
	for _, p := range []string{"9876", "10911", "10909", "8081"} {
		if !slices.Contains(ports, p) {
			t.Errorf("EXPOSE %v lacks %s", ports, p)
		}
	}
	for _, in := range last.body {
		if in.cmd == "RUN" || in.cmd == "ADD" || in.cmd == "ENTRYPOINT" {
			t.Errorf("line %d: %s in the last stage: the layout belongs in layout.sh, and nothing may run on the target platform", in.line, in)
		}
	}
	// The stock version the layout names is the one rmq follows.
	if got, want := df.argDefault(t, "ROCKETMQ_VERSION"), protocolVersion(t); got != want {
		t.Errorf("ROCKETMQ_VERSION default %s, cmd/rmq's protocolVersion %s", got, want)
	}
}

// TestRootDockerfileCrossCompiles pins the multi-platform build: the Go
// toolchain image of go.mod's version on the build platform, a static
// cross-compiled rmq, the target's busybox only copied, layout.sh run on
// the build platform.
func TestRootDockerfileCrossCompiles(t *testing.T) {
	df := parseDockerfile(t, rootDockerfile)
	if len(df.stages) < 3 {
		t.Fatalf("%d stages, want a build stage, a layout stage and the image", len(df.stages))
	}
	if got, want := df.argDefault(t, "GO_VERSION"), goModVersion(t); got != want {
		t.Errorf("ARG GO_VERSION=%s, go.mod says go %s", got, want)
	}

	build := df.named(t, "build")
	if !strings.HasPrefix(build.from.args, "--platform=$BUILDPLATFORM golang:${GO_VERSION} ") {
		t.Errorf("build stage: FROM %s, want --platform=$BUILDPLATFORM golang:${GO_VERSION}", build.from.args)
	}
	for _, a := range []string{"TARGETOS", "TARGETARCH", "VERSION"} {
		if !build.declaresArg(a) {
			t.Errorf("build stage: no ARG %s", a)
		}
	}
	var gobuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			gobuild = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "-X main.version=${VERSION}", "./cmd/rmq", "-o /out/rmq"} {
		if !strings.Contains(gobuild, want) {
			t.Errorf("build stage's go build %q lacks %s", gobuild, want)
		}
	}

	bb := df.named(t, "busybox")
	if strings.Contains(bb.from.args, "--platform") || !strings.Contains(bb.from.args, "-musl") {
		t.Errorf("busybox stage: FROM %s: want the target platform's static (musl) busybox", bb.from.args)
	}
	layout := df.named(t, "rootfs")
	if !strings.HasPrefix(layout.from.args, "--platform=$BUILDPLATFORM busybox:") {
		t.Errorf("rootfs stage: FROM %s, want the build platform's busybox", layout.from.args)
	}
	for _, want := range []string{"--from=busybox /bin/busybox /src/busybox", "--from=build /out/rmq /src/rmq", "docker/layout.sh /src/layout.sh",
		"conf/2m-2s-sync/ /src/conf/2m-2s-sync/", "conf/2m-2s-async/ /src/conf/2m-2s-async/", "conf/controller/ /src/conf/controller/"} {
		if !layout.has("COPY", want) {
			t.Errorf("rootfs stage: no COPY %s", want)
		}
	}
	if !layout.has("RUN", `sh /src/layout.sh /src /out "$ROCKETMQ_VERSION"`) {
		t.Errorf("rootfs stage does not run layout.sh as docker/Dockerfile does")
	}
	offline := parseDockerfile(t, offlineDockerfile).named(t, "rootfs")
	if !slices.ContainsFunc(offline.all("RUN"), func(in instruction) bool {
		return strings.HasSuffix(in.args, `sh /src/layout.sh /src /out "$ROCKETMQ_VERSION"`)
	}) {
		t.Errorf("docker/Dockerfile's rootfs stage does not run layout.sh")
	}

	// Every file the root Dockerfile copies from the context exists, and
	// .dockerignore keeps none of them (nor any Go source) out.
	ignore := dockerignore(t)
	for _, s := range df.stages {
		for _, in := range s.all("COPY") {
			f := strings.Fields(in.args)
			if strings.HasPrefix(f[0], "--from=") {
				continue
			}
			for _, src := range f[:len(f)-1] {
				if src == "." || strings.HasPrefix(src, "--") {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(src))); err != nil {
					t.Errorf("line %d: COPY source %s: %v", in.line, src, err)
				}
				if p := ignore.match(strings.TrimSuffix(src, "/")); p != "" {
					t.Errorf("line %d: COPY source %s is excluded by .dockerignore's %q", in.line, src, p)
				}
			}
		}
	}
	out, err := exec.Command("git", "-C", "..", "ls-files", "--", "*.go", "go.mod", "go.sum").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the .dockerignore check needs the tree's file list)", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if p := ignore.match(f); p != "" {
			t.Errorf(".dockerignore's %q excludes %s, which the build stage compiles", p, f)
		}
	}
}

// pairConfDirs are the stock distribution's master/slave config
// directories the image ships under $ROCKETMQ_HOME/conf.
var pairConfDirs = []string{"2m-2s-sync", "2m-2s-async"}

// TestLayout runs layout.sh as the rootfs stages do, with a stand-in
// busybox on PATH that lists a few applets, and checks the tree: the stock
// paths lead to the same files as /home/rocketmq/rmq.
func TestLayout(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("layout.sh is a POSIX sh script")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	tmp := t.TempDir()
	src, out, fakeBin := filepath.Join(tmp, "src"), filepath.Join(tmp, "out"), filepath.Join(tmp, "path")
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(fakeBin, "busybox"), "#!/bin/sh\n[ \"$1\" = --list-full ] && printf 'bin/busybox\\nbin/sh\\nbin/ls\\nusr/bin/awk\\nsbin/ifconfig\\n'\n", 0o755)
	write(filepath.Join(src, "busybox"), "target busybox", 0o644)
	write(filepath.Join(src, "rmq"), "target rmq", 0o644)
	for _, s := range []string{"mqnamesrv", "mqbroker", "mqadmin", "mqshutdown", "rmqenv.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "scripts", s))
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(src, "scripts", s), string(b), 0o644)
	}
	for _, c := range []string{"broker.conf", "namesrv.conf"} {
		b, err := os.ReadFile(filepath.Join("..", "conf", c))
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(src, "conf", c), string(b), 0o644)
	}
	if err := os.CopyFS(filepath.Join(src, "rootfs"), os.DirFS("rootfs")); err != nil {
		t.Fatal(err)
	}
	// The stock distribution's pair configs, as the Dockerfiles and image.sh
	// stage them.
	for _, d := range append(pairConfDirs, "controller") {
		if err := os.CopyFS(filepath.Join(src, "conf", d), os.DirFS(filepath.Join("..", "conf", d))); err != nil {
			t.Fatal(err)
		}
	}

	version := parseDockerfile(t, offlineDockerfile).argDefault(t, "ROCKETMQ_VERSION")
	cmd := exec.Command("sh", "layout.sh", src, out, version, "5.1.4")
	cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("layout.sh: %v\n%s", err, b)
	}

	root, home := filepath.Join(out, "root"), filepath.Join(out, "home", "rocketmq")
	link := func(p, want string) {
		t.Helper()
		got, err := os.Readlink(p)
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want -> %q", p, got, err, want)
		}
	}
	for _, a := range []string{"bin/sh", "bin/ls", "usr/bin/awk", "sbin/ifconfig"} {
		link(filepath.Join(root, a), "/bin/busybox")
	}
	if b, err := os.ReadFile(filepath.Join(root, "bin", "busybox")); err != nil || string(b) != "target busybox" {
		t.Errorf("/bin/busybox is not SRC/busybox: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: %v %v, want drwxrwxrwt", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc", "passwd")); err != nil || !strings.Contains(string(b), "rocketmq:x:3000:3000:rocketmq:/home/rocketmq:") {
		t.Errorf("/etc/passwd has no rocketmq user 3000: %q %v", b, err)
	}
	if ents, err := os.ReadDir(filepath.Join(root, "home")); err != nil || len(ents) != 0 {
		t.Errorf("root/home: %v %v, want an empty directory (home/ is copied there, owned by rocketmq)", ents, err)
	}

	for _, v := range []string{version, "4.9.8", "5.3.3", "5.1.4"} {
		link(filepath.Join(home, "rocketmq-"+v), "rmq")
	}
	link(filepath.Join(home, "rmq", "bin", "store"), "/home/rocketmq/store")
	// ROCKETMQ_HOME and WORKDIR as the last stage sets them, resolved in the
	// tree: the scripts, the binary and the stock conf path.
	rocketmqHome := filepath.Join(home, "rocketmq-"+version)
	for _, f := range []string{"bin/rmq", "bin/mqnamesrv", "bin/mqbroker", "bin/mqadmin", "bin/mqshutdown"} {
		fi, err := os.Stat(filepath.Join(rocketmqHome, f))
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("${ROCKETMQ_HOME}/%s: %v, want an executable", f, err)
		}
	}
	for _, f := range []string{"bin/rmqenv.sh", "conf/broker.conf", "conf/namesrv.conf"} {
		if _, err := os.Stat(filepath.Join(rocketmqHome, f)); err != nil {
			t.Errorf("${ROCKETMQ_HOME}/%s: %v", f, err)
		}
	}
	// $ROCKETMQ_HOME/conf/2m-2s-{sync,async}/broker-{a,b}[-s].properties,
	// as stock's distribution has them, byte for byte the repository's.
	for _, d := range pairConfDirs {
		for _, f := range []string{"broker-a.properties", "broker-a-s.properties", "broker-b.properties", "broker-b-s.properties"} {
			want, err := os.ReadFile(filepath.Join("..", "conf", d, f))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(rocketmqHome, "conf", d, f))
			if err != nil || string(got) != string(want) {
				t.Errorf("${ROCKETMQ_HOME}/conf/%s/%s: %v, want conf/%s/%s's bytes", d, f, err, d, f)
			}
		}
	}
	// $ROCKETMQ_HOME/conf/controller/*.conf, byte for byte the repository's,
	// and their .run/ stores on the store volume.
	ctlConfs, _ := filepath.Glob(filepath.Join("..", "conf", "controller", "*.conf"))
	if len(ctlConfs) == 0 {
		t.Fatal("no conf/controller/*.conf")
	}
	for _, f := range ctlConfs {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(rocketmqHome, "conf", "controller", filepath.Base(f)))
		if err != nil || string(got) != string(want) {
			t.Errorf("${ROCKETMQ_HOME}/conf/controller/%s: %v, want %s's bytes", filepath.Base(f), err, f)
		}
	}
	for _, l := range []string{"store", ".run"} {
		if dst, err := os.Readlink(filepath.Join(rocketmqHome, "bin", l)); err != nil || dst != "/home/rocketmq/store" {
			t.Errorf("${ROCKETMQ_HOME}/bin/%s: %q %v, want a link to /home/rocketmq/store", l, dst, err)
		}
	}
	for _, d := range []string{"store", "logs"} {
		if fi, err := os.Stat(filepath.Join(home, d)); err != nil || !fi.IsDir() {
			t.Errorf("/home/rocketmq/%s: %v", d, err)
		}
	}

	// A bad version is refused, not turned into a path elsewhere.
	bad := exec.Command("sh", "layout.sh", src, filepath.Join(tmp, "bad"), "../x")
	bad.Env = cmd.Env
	if b, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(b), "bad version") {
		t.Errorf("layout.sh with version ../x: %v %s, want a refusal", err, b)
	}
}

// ignorePatterns is .dockerignore, read as the root Dockerfile's context
// uses it (only the forms the file uses: a path from the root, with an
// optional leading and trailing slash, or a pattern for base names).
type ignorePatterns []string

func dockerignore(t *testing.T) ignorePatterns {
	t.Helper()
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var ps ignorePatterns
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") {
			t.Fatalf(".dockerignore: exceptions (%s) are not understood by this test", l)
		}
		ps = append(ps, l)
	}
	return ps
}

// match returns the pattern that excludes the slash-separated path p, or "".
func (ps ignorePatterns) match(p string) string {
	for _, pat := range ps {
		clean := strings.Trim(pat, "/")
		if !strings.Contains(clean, "/") && !strings.HasPrefix(pat, "/") {
			// A bare name or glob: Docker matches it against the root only,
			// but treat it as matching any path element to be safe.
			for _, el := range strings.Split(p, "/") {
				if ok, _ := path.Match(clean, el); ok {
					return pat
				}
			}
			continue
		}
		if p == clean || strings.HasPrefix(p, clean+"/") {
			return pat
		}
	}
	return ""
}

// goModVersion is the go directive of the main module's go.mod.
func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

// protocolVersion is cmd/rmq's protocolVersion constant.
func protocolVersion(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../cmd/rmq/version.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name == "protocolVersion" && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						return v
					}
				}
			}
		}
	}
	t.Fatal("cmd/rmq/version.go declares no protocolVersion string constant")
	return ""
}
