package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestGoInstallFromModuleProxy installs cmd/rmq as a user's
// `go install github.com/rmqio/rmq/cmd/rmq@<version>` would: from a module
// proxy, here a file:// one holding this tree as a module version (the files
// git tracks, without the directories that are modules of their own). `go
// install` refuses a module whose go.mod has a replace directive, and the
// patched gnet must come with the module, not from upstream: the installed
// binary's build info must list no github.com/panjf2000/gnet module.
//
// The dependencies come from the module cache's download directory first
// (offline), then from the proxy `go env GOPROXY` names.
func TestGoInstallFromModuleProxy(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	root := moduleRootDir(t, goTool)
	const module, version = "github.com/rmqio/rmq", "v0.0.0-20260101000000-000000000000"

	files, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files in %s: %v (the test needs the tree's file list)", root, err)
	}
	var paths, nested []string
	seen := map[string]bool{}
	for _, p := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if seen[p] {
			continue // a path in a merge conflict is listed once per stage
		}
		seen[p] = true
		paths = append(paths, p)
		if path.Base(p) == "go.mod" && p != "go.mod" {
			nested = append(nested, path.Dir(p)+"/")
		}
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	added := 0
	for _, p := range paths {
		skip := false
		for _, n := range nested {
			skip = skip || strings.HasPrefix(p, n)
		}
		if skip {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(module + "@" + version + "/" + p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		added++
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	dir := filepath.Join(proxy, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2026-01-01T00:00:00Z"})
	for name, b := range map[string][]byte{
		"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod, version + ".zip": zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	goEnv := func(key string) string {
		out, err := exec.Command(goTool, "env", key).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", key, err)
		}
		return strings.TrimSpace(string(out))
	}
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(goEnv("GOMODCACHE"), "cache", "download"))
	if p := goEnv("GOPROXY"); p != "" && p != "off" {
		proxies += "," + p
	}
	gobin := filepath.Join(tmp, "bin")
	cmd := exec.Command(goTool, "install", module+"/cmd/rmq@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"GOPROXY="+proxies, "GOSUMDB=off", "GOWORK=off", "GOFLAGS=-modcacherw", "GONOSUMDB=", "GOPRIVATE=",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOBIN="+gobin)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/rmq@%s (%d files in the module zip): %v\n%s", module, version, added, err, out)
	}
	t.Logf("go install took %v (%d files in the module zip)", time.Since(start).Round(time.Second), added)

	bin := filepath.Join(gobin, "rmq")
	buildInfo, err := exec.Command(goTool, "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if !strings.Contains(string(buildInfo), "mod\t"+module+"\t"+version) {
		t.Errorf("build info does not name %s %s:\n%s", module, version, buildInfo)
	}
	if strings.Contains(string(buildInfo), "github.com/panjf2000/gnet") {
		t.Errorf("the installed binary builds upstream gnet, not third_party/gnet:\n%s", buildInfo)
	}
	// Nothing set main.version: the version comes from the build info.
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
		t.Errorf("%s version: %v\n%s", bin, err, out)
	} else if !strings.HasPrefix(string(out), "rmq "+version+" (") {
		t.Errorf("%s version: %q, want the module version %s", bin, out, version)
	}
}

// moduleRootDir is the directory of the main module's go.mod.
func moduleRootDir(t *testing.T, goTool string) string {
	t.Helper()
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
