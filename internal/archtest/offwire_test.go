package archtest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// offWire are the packages that serve or drive a broker without speaking
// the remoting protocol: the gRPC endpoint, the console and the test
// harness users import. What they need of a topic or a group is in
// topicgroup, of a refusal in the broker's API (broker.Refused); importing
// remoting would make the wire package their domain model again.
var offWire = []string{"grpcapi", "grpcapi/internal/sdkhost", "console", "rmqtest"}

// TestOffWirePackagesDoNotImportRemoting holds the layering block to
// offWire: TestLayering checks imports against the block, and this test
// keeps the block from allowing remoting to any of them, so that adding it
// back takes changing this test, not one README line.
func TestOffWirePackagesDoNotImportRemoting(t *testing.T) {
	root, module, rules := readLayering(t)
	if errs := remotingAllowed(rules, offWire); len(errs) > 0 {
		t.Error(strings.Join(errs, "\n"))
	}
	// And the imports themselves, so that the failure names the package
	// even while the block is being edited.
	for _, p := range listPackages(t, root) {
		from, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || !slices.Contains(offWire, from) {
			continue
		}
		if slices.Contains(p.Imports, module+"/remoting") {
			t.Errorf("%s imports remoting: use topicgroup for topic and group configuration, broker's API for refusals", from)
		}
	}
}

// remotingAllowed lists the rules that let one of pkgs import remoting.
func remotingAllowed(rules []rule, pkgs []string) []string {
	var errs []string
	for _, pkg := range pkgs {
		for _, r := range rules {
			if match(r.from, pkg) && slices.Contains(r.allow, "remoting") {
				errs = append(errs, "README.md's layering (line "+strconv.Itoa(r.line)+") lets "+pkg+" import remoting")
			}
		}
	}
	return errs
}

// TestRemotingAllowedCatchesALine runs the block check on made-up input, so
// that a check that accepts everything cannot pass.
func TestRemotingAllowedCatchesALine(t *testing.T) {
	readme := []byte("### Layering\n\n```text\nremoting -> (none)\nconsole -> remoting\ngrpcapi -> broker\n```\n")
	rules, err := parseLayering(readme)
	if err != nil {
		t.Fatal(err)
	}
	if errs := remotingAllowed(rules, []string{"console", "grpcapi"}); len(errs) != 1 || !strings.Contains(errs[0], "console") {
		t.Fatalf("remotingAllowed = %q, want one error for console", errs)
	}
}
