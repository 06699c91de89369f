package main

import (
	"runtime/debug"
	"testing"
)

func TestEffectiveVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"linked wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs(rev, "true")}, "v1.2.3"},
		{"linked git describe", "de9d105-dirty", nil, "de9d105-dirty"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Path: "github.com/rmqio/rmq", Version: "v1.2.3"}}, "v1.2.3"},
		{"empty linked value", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"go build pseudo-version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}, Settings: vcs(rev, "true")}, "v0.0.0-20260101000000-0123456789ab+dirty"},
		{"vcs only, clean", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, "0123456789ab"},
		{"vcs only, modified", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "0123456789ab-dirty"},
		{"short revision", "dev", &debug.BuildInfo{Settings: vcs("abc", "false")}, "abc"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
	} {
		if got := effectiveVersion(c.linked, c.info); got != c.want {
			t.Errorf("%s: effectiveVersion(%q, ...) = %q, want %q", c.name, c.linked, got, c.want)
		}
	}
}
