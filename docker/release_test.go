package docker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// goreleaserConfig is the part of .goreleaser.yaml (goreleaser v2) that the
// release depends on.
type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
		Files []archiveFile `yaml:"files"`
	} `yaml:"archives"`
}

// archiveFile is an archives.files entry: a path (glob) or {src: ...}.
type archiveFile struct{ Src string }

func (f *archiveFile) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&f.Src)
	}
	var m struct {
		Src string `yaml:"src"`
	}
	err := n.Decode(&m)
	f.Src = m.Src
	return err
}

// TestGoreleaserConfig: goreleaser is not installed by the project, so this
// pins what a release needs from .goreleaser.yaml: a static rmq for linux,
// darwin, windows and freebsd on amd64 and arm64 with main.version set, and
// archives holding the notices, the README, conf/ and the scripts, each of
// which exists (a rename breaks the release, so it breaks this test).
func TestGoreleaserConfig(t *testing.T) {
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if c.Version != 2 {
		t.Errorf("version: %d, want 2 (goreleaser v2's format)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	bd := c.Builds[0]
	if bd.Main != "./cmd/rmq" || bd.Binary != "rmq" {
		t.Errorf("build main %q binary %q, want ./cmd/rmq and rmq", bd.Main, bd.Binary)
	}
	if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(bd.Main), "main.go")); err != nil {
		t.Errorf("build main: %v", err)
	}
	if !slices.Contains(bd.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v lacks CGO_ENABLED=0", bd.Env)
	}
	if !slices.ContainsFunc(bd.Ldflags, func(s string) bool { return strings.Contains(s, "-X main.version=") }) {
		t.Errorf("ldflags %v do not set main.version", bd.Ldflags)
	}
	for _, os := range []string{"linux", "darwin", "windows", "freebsd"} {
		if !slices.Contains(bd.Goos, os) {
			t.Errorf("goos %v lacks %s", bd.Goos, os)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		if !slices.Contains(bd.Goarch, arch) {
			t.Errorf("goarch %v lacks %s", bd.Goarch, arch)
		}
	}

	if len(c.Archives) != 1 {
		t.Fatalf("%d archives, want 1", len(c.Archives))
	}
	a := c.Archives[0]
	if !slices.Contains(a.IDs, bd.ID) {
		t.Errorf("archive ids %v do not name build %q", a.IDs, bd.ID)
	}
	if !slices.Contains(a.Formats, "tar.gz") {
		t.Errorf("archive formats %v, want tar.gz", a.Formats)
	}
	if !slices.ContainsFunc(a.FormatOverrides, func(o struct {
		Goos    string   `yaml:"goos"`
		Formats []string `yaml:"formats"`
	}) bool {
		return o.Goos == "windows" && slices.Contains(o.Formats, "zip")
	}) {
		t.Errorf("no zip override for windows")
	}
	var files []string
	for _, f := range a.Files {
		matches, err := filepath.Glob(filepath.Join("..", filepath.FromSlash(f.Src)))
		if err != nil || len(matches) == 0 {
			t.Errorf("archive file %q matches nothing (%v)", f.Src, err)
		}
		files = append(files, f.Src)
	}
	for _, want := range []string{"LICENSE", "NOTICE", "README.md", "CHANGELOG.md", "conf/broker.conf", "conf/namesrv.conf",
		"conf/2m-2s-sync/*.properties", "conf/2m-2s-async/*.properties", "conf/controller/*.conf", "scripts/mqnamesrv", "scripts/mqbroker", "scripts/mqadmin", "scripts/mqshutdown", "scripts/rmqenv.sh"} {
		if !slices.Contains(files, want) {
			t.Errorf("archive files %v lack %s", files, want)
		}
	}
}
