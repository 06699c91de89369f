package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time: -ldflags "-X main.version=..." (make, the
// images, goreleaser). A plain `go install`/`go build` leaves it "dev", and
// printVersion then takes the version from the build info.
var version = "dev"

// protocolVersion is the RocketMQ release whose wire protocol and on-disk
// formats rmq follows.
const protocolVersion = "4.9.8"

func printVersion(w io.Writer) {
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintf(w, "rmq %s (RocketMQ %s compatible, %s %s/%s)\n", effectiveVersion(version, info), protocolVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// effectiveVersion picks the version to print. A linked version wins. Else
// the module version of the build info: `go install .../cmd/rmq@v1.2.3`
// records v1.2.3, and since Go 1.24 `go build` in a git checkout records a
// version from the tag or commit (v1.2.4-0.2026...-abcdef+dirty). Else the
// VCS stamp alone (a build with a go.mod of its own, GOFLAGS=-buildvcs=...):
// the commit, shortened to 12 characters as pseudo-versions do, with
// "-dirty" when the tree had changes. Else "dev" (go test, or no VCS).
func effectiveVersion(linked string, info *debug.BuildInfo) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}
