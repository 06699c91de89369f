package archtest

import (
	"regexp"
	"strings"
	"testing"
)

// zerolog writes the fields of an event in order and never replaces one, so
// a field named like one zerolog writes itself (level, time, message) or a
// second "component" repeats a key in the JSON line, which Elasticsearch and
// OpenSearch refuse (and the console writer shows the field instead of the
// level). TestNoReservedLogKeys keeps those names out of non-test code; the
// "component" field is set only where a subsystem's logger is made.
func TestNoReservedLogKeys(t *testing.T) {
	root, _ := moduleRoot(t)
	field := regexp.MustCompile(`\.(Str|Strs|Int|Int32|Int64|Uint64|Uint32|Bool|Dur|Float64|Time|Interface|Object|Hex|Bytes|Stringer|RawJSON)\("(level|time|message|component)"`)
	componentMakers := map[string]bool{
		"broker/broker.go":          true, // componentLog
		"store/store.go":            true,
		"cmd/rmq/app.go":            true,
		"cmd/rmq/serve.go":          true,
		"cmd/rmq/controller_cmd.go": true,
		"rmqtest/rmqtest.go":        true, // the gRPC endpoint's
	}
	err := walkGoSources(root, nil, func(rel string, b []byte) error {
		for i, line := range strings.Split(string(b), "\n") {
			m := field.FindStringSubmatch(line)
			if m == nil || m[2] == "component" && componentMakers[rel] {
				continue
			}
			t.Errorf("%s:%d: a log field named %q repeats a key zerolog writes (or the logger's component): %s", rel, i+1, m[2], strings.TrimSpace(line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
