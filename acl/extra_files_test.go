package acl

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
)

// TestExtraACLFiles: the .yml/.yaml files under conf/acl beside the default
// file are read as stock PlainPermissionManager.load reads them: their
// accounts come first (a repeated AccessKey keeps the first), every file's
// global white addresses apply, the version is the default file's, and a
// reload sees a file added or changed.
func TestExtraACLFiles(t *testing.T) {
	conf := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(conf, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plain_acl.yml", "accounts:\n  - accessKey: defaultAK1\n    secretKey: defaultSK1\n    admin: true\n  - accessKey: sharedAK1\n    secretKey: fromDefault\n    admin: true\ndataVersion:\n  - counter: 7\n    timestamp: 1\n")
	write("acl/team.yml", "globalWhiteRemoteAddresses:\n  - 10.1.1.*\naccounts:\n  - accessKey: sharedAK1\n    secretKey: fromExtra1\n    admin: true\n")
	write("acl/nested/more.yaml", "accounts:\n  - accessKey: nestedAK1\n    secretKey: nestedSK1\n    admin: true\n")
	write("acl/notes.txt", "not an ACL file")
	m, err := Open(filepath.Join(conf, "plain_acl.yml"), clock.NewManual(time.UnixMilli(5)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ak, sk string
		want   bool
	}{
		{"defaultAK1", "defaultSK1", true},
		{"nestedAK1", "nestedSK1", true},
		{"sharedAK1", "fromExtra1", true},
		{"sharedAK1", "fromDefault", false},
	} {
		if got := m.Admin(c.ak, c.sk); got != c.want {
			t.Errorf("Admin(%s, %s) = %v, want %v", c.ak, c.sk, got, c.want)
		}
	}
	r := m.rules.Load()
	if len(r.global) != 1 || !r.global[0].match("10.1.1.9") {
		t.Errorf("the extra file's global white address is not in force: %d matchers", len(r.global))
	}
	if v := m.Version(); v.Counter != 7 {
		t.Errorf("version %+v, want the default file's (counter 7)", v)
	}
	write("acl/late.yml", "accounts:\n  - accessKey: lateAK12\n    secretKey: lateSK12\n    admin: true\n")
	if changed, err := m.Reload(); err != nil || !changed {
		t.Fatalf("Reload after a new extra file: %v %v", changed, err)
	}
	if !m.Admin("lateAK12", "lateSK12") {
		t.Error("an extra file added later is not read")
	}
	if changed, err := m.Reload(); err != nil || changed {
		t.Errorf("Reload with nothing changed: %v %v", changed, err)
	}
}
