package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

const aclTestFile = `
accounts:
  - accessKey: producer1
    secretKey: secret123
    defaultTopicPerm: DENY
    topicPerms:
      - AclTopic=PUB
  - accessKey: admin0001
    secretKey: adminsecret
    admin: true
`

func startACLBroker(t *testing.T, clk clock.Clock) (*testBroker, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclTestFile), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, func(o *Options) {
		o.AclEnable = true
		o.AclFile = path
		if clk != nil {
			o.Clock = clk
		}
	})
	return tb, path
}

// invokeSigned sends a request signed as the Java AclClientRPCHook signs
// (no signing when ak is empty).
func (tb *testBroker) invokeSigned(cli *remoting.Client, ak, sk string, code int32, ext map[string]string, body []byte) *remoting.Command {
	tb.t.Helper()
	req := remoting.NewRequest(code, ext, body)
	if ak != "" {
		acl.SignRequest(req, ak, sk, "")
	}
	resp, err := cli.InvokeTimeout(tb.Addr(), req, coreTestTimeout)
	if err != nil {
		tb.t.Fatalf("request %d: %v", code, err)
	}
	return resp
}

func TestACLChecksEveryPathBeforeDispatch(t *testing.T) {
	tb, _ := startACLBroker(t, nil)
	create := brokertest.CreateTopicExt("AclTopic", 4, 6, "SINGLE_TAG")
	if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateAndCreateTopic, create, nil); r.Code != remoting.SystemError ||
		!strings.Contains(r.Remark, "Need admin permission for request code=17, but accessKey=producer1 is not") {
		t.Fatalf("topic creation by a non-admin: %d %q", r.Code, r.Remark)
	}
	if r := tb.invokeSigned(tb.json, "admin0001", "adminsecret", remoting.UpdateAndCreateTopic, create, nil); r.Code != remoting.Success {
		t.Fatalf("topic creation by the admin: %d %q", r.Code, r.Remark)
	}
	// The topic exists, so a plain send would be served inline on the
	// event loop: the ACL must still see it, in both header encodings.
	for _, cli := range []*remoting.Client{tb.json, tb.bin} {
		send := sendArgs{topic: "AclTopic", body: []byte("m")}
		r := tb.invokeSigned(cli, "", "", remoting.SendMessageV2, send.ext(), send.body)
		want := "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
		if r.Code != remoting.SystemError || r.Remark != want {
			t.Fatalf("unsigned send: %d %q", r.Code, r.Remark)
		}
		if r := tb.invokeSigned(cli, "producer1", "wrongsecret", remoting.SendMessageV2, send.ext(), send.body); r.Code != remoting.SystemError ||
			!strings.Contains(r.Remark, "Check signature failed for accessKey=producer1") {
			t.Fatalf("badly signed send: %d %q", r.Code, r.Remark)
		}
		if r := tb.invokeSigned(cli, "producer1", "secret123", remoting.SendMessageV2, send.ext(), send.body); r.Code != remoting.Success {
			t.Fatalf("signed send: %d %q", r.Code, r.Remark)
		}
		other := sendArgs{topic: "OtherTopic", body: []byte("m")}
		if r := tb.invokeSigned(cli, "producer1", "secret123", remoting.SendMessageV2, other.ext(), other.body); r.Code != remoting.SystemError ||
			!strings.Contains(r.Remark, "No default permission for topic:OtherTopic") {
			t.Fatalf("send to an unlisted topic: %d %q", r.Code, r.Remark)
		}
	}
	// Unknown request codes are checked before "not supported", as the
	// stock hook runs before the default processor.
	if r := tb.invokeSigned(tb.json, "", "", 9999, nil, nil); r.Code != remoting.SystemError {
		t.Fatalf("unknown code, unsigned: %d %q", r.Code, r.Remark)
	}
	if r := tb.invokeSigned(tb.json, "admin0001", "adminsecret", 9999, nil, nil); r.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("unknown code, signed: %d %q", r.Code, r.Remark)
	}
	if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateBrokerConfig, nil, []byte("traceOn=true\n")); r.Code != remoting.SystemError {
		t.Fatalf("UPDATE_BROKER_CONFIG by a non-admin: %d %q", r.Code, r.Remark)
	}
	if r := tb.invokeSigned(tb.json, "admin0001", "adminsecret", remoting.UpdateBrokerConfig, nil, []byte("traceOn=true\n")); r.Code != remoting.Success {
		t.Fatalf("UPDATE_BROKER_CONFIG by the admin: %d %q", r.Code, r.Remark)
	}
}

func TestACLFileReloadsOnTheBrokerClock(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	tb, path := startACLBroker(t, clk)
	send := sendArgs{topic: "Later", body: []byte("m")}
	if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.SendMessageV2, send.ext(), send.body); r.Code != remoting.SystemError {
		t.Fatalf("send before the grant: %d %q", r.Code, r.Remark)
	}
	granted := strings.Replace(aclTestFile, "AclTopic=PUB", "AclTopic=PUB\n      - Later=PUB", 1)
	if err := os.WriteFile(path, []byte(granted), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not before the interval has passed on the broker clock.
	if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.SendMessageV2, send.ext(), send.body); r.Code != remoting.SystemError {
		t.Fatalf("grant seen before the reload: %d %q", r.Code, r.Remark)
	}
	clk.Advance(acl.ReloadInterval * time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.SendMessageV2, send.ext(), send.body)
		return r.Code == remoting.Success
	}, "the reloaded grant")
}

func TestACLAdminRequestsWithACLOff(t *testing.T) {
	tb := startBroker(t, nil)
	if r := tb.invoke(remoting.GetBrokerClusterACLInfo, nil, nil); r.Code != remoting.SystemError {
		t.Fatalf("GET_BROKER_CLUSTER_ACL_INFO with ACL off: %d %q", r.Code, r.Remark)
	}
	if r := tb.invoke(remoting.DeleteACLConfig, map[string]string{"accessKey": "someone1"}, nil); r.Code != remoting.DeleteACLConfigFailed {
		t.Fatalf("DELETE_ACL_CONFIG with ACL off: %d %q", r.Code, r.Remark)
	}
}

func TestACLFileThatDoesNotLoadStopsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte("globalWhiteRemoteAddresses:\n  - 300.1.1.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := coreTestOptions(t, func(o *Options) { o.AclEnable = true; o.AclFile = path })
	if b, err := New(o); err == nil {
		b.Shutdown()
		t.Fatal("New accepted a plain_acl.yml with a bad address")
	}
}
