package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
)

// writeACLFile writes a plain_acl.yml for a test broker.
func writeACLFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rmq admin against a broker with aclEnable=true and no white address:
// unsigned requests are refused with the stock remark, --access-key and
// --secret-key sign them, and the ACL subcommands edit plain_acl.yml.
func TestAdminACLSubcommands(t *testing.T) {
	aclFile := writeACLFile(t, `accounts:
  - accessKey: cliadmin1
    secretKey: cliadminsec
    admin: true
  - accessKey: cliuser01
    secretKey: cliusersec
`)
	c := startAdminClusterWith(t, func(o *broker.Options) { o.AclEnable, o.AclFile = true, aclFile })
	asAdmin := []string{"--access-key", "cliadmin1", "--secret-key", "cliadminsec"}
	run := func(args ...string) (int, string, string) { return c.runAdmin(t, args...) }

	code, _, errOut := run("updateTopic", "-b", c.broker, "-t", "AclCliT")
	if code == 0 || !strings.Contains(errOut, "No accessKey is configured") {
		t.Fatalf("unsigned updateTopic: exit %d, %s", code, errOut)
	}
	code, _, errOut = run("updateTopic", "-b", c.broker, "-t", "AclCliT", "--access-key", "cliuser01", "--secret-key", "cliusersec")
	if code == 0 || !strings.Contains(errOut, "Need admin permission for request code=17, but accessKey=cliuser01 is not") {
		t.Fatalf("updateTopic as a non-admin: exit %d, %s", code, errOut)
	}
	if code, out, errOut := run(append([]string{"updateTopic", "-b", c.broker, "-t", "AclCliT"}, asAdmin...)...); code != 0 {
		t.Fatalf("updateTopic as the admin: exit %d, %s%s", code, out, errOut)
	}

	code, out, errOut := run(append([]string{"updateAclConfig", "-b", c.broker, "-a", "clinew001", "-s", "clinewsec1",
		"-t", "AclCliT=PUB", "-g", "G1=SUB", "-i", "DENY", "-w", "10.1.1.*"}, asAdmin...)...)
	if code != 0 || out != "create or update plain access config to "+c.broker+" success.\n" {
		t.Fatalf("updateAclConfig: exit %d\n%s%s", code, out, errOut)
	}
	yml, _ := os.ReadFile(aclFile)
	for _, want := range []string{"accessKey: clinew001", "AclCliT=PUB", "G1=SUB", "whiteRemoteAddress: 10.1.1.*", "defaultTopicPerm: DENY", "counter: 1"} {
		if !strings.Contains(string(yml), want) {
			t.Errorf("plain_acl.yml lacks %q:\n%s", want, yml)
		}
	}

	code, out, _ = run(append([]string{"clusterAclConfigVersion", "-b", c.broker}, asAdmin...)...)
	if code != 0 || !strings.Contains(out, aclFile) || !strings.Contains(out, "get broker's plain access config version success.") {
		t.Fatalf("clusterAclConfigVersion -b: exit %d\n%s", code, out)
	}
	code, out, _ = run(append([]string{"clusterAclConfigVersion", "-c", "DefaultCluster"}, asAdmin...)...)
	if code != 0 || !strings.HasPrefix(out, "#Cluster Name") || !strings.Contains(out, "DefaultCluster") {
		t.Fatalf("clusterAclConfigVersion -c: exit %d\n%s", code, out)
	}

	// -p defaults to the file the broker reports.
	if code, out, errOut := run(append([]string{"updateGlobalWhiteAddr", "-b", c.broker, "-g", "10.9.9.9"}, asAdmin...)...); code != 0 ||
		out != "update global white remote addresses to "+c.broker+" success.\n" {
		t.Fatalf("updateGlobalWhiteAddr: exit %d\n%s%s", code, out, errOut)
	}
	if yml, _ := os.ReadFile(aclFile); !strings.Contains(string(yml), "- 10.9.9.9") {
		t.Fatalf("plain_acl.yml after updateGlobalWhiteAddr:\n%s", yml)
	}

	code, out, _ = run(append([]string{"deleteAclConfig", "-b", c.broker, "-a", "clinew001"}, asAdmin...)...)
	if code != 0 || out != "delete plain access config account from "+c.broker+" success.\naccount's accesskey is:clinew001\n" {
		t.Fatalf("deleteAclConfig: exit %d\n%s", code, out)
	}
	code, _, errOut = run(append([]string{"deleteAclConfig", "-b", c.broker, "-a", "clinew001"}, asAdmin...)...)
	if code == 0 || !strings.Contains(errOut, "The accesskey[clinew001] corresponding to accessConfig has been deleted failed.") {
		t.Fatalf("deleteAclConfig of a deleted account: exit %d, %s", code, errOut)
	}
}
