package broker

import (
	"maps"
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

// Issue 42 defect 10: in 4.9.8 the ACL requests are not admin codes, so any
// account may grant itself admin. aclConfigRequiresAdmin closes that; off, the
// stock behaviour stays.
func TestACLConfigRequiresAdmin(t *testing.T) {
	start := func(t *testing.T, file string, adminOnly bool) *testBroker {
		path := filepath.Join(t.TempDir(), "plain_acl.yml")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		return startBroker(t, func(o *Options) {
			o.AclEnable, o.AclFile, o.AclConfigRequiresAdmin = true, path, adminOnly
		})
	}
	// Each request gets its own copy of ext: signing adds to the map.
	// The stock escalation: producer1 rewrites its own account as admin.
	escalate := map[string]string{"accessKey": "producer1", "secretKey": "secret123", "admin": "true"}
	requests := []struct {
		code int32
		ext  map[string]string
	}{
		{remoting.GetBrokerClusterACLInfo, nil},
		{remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "10.9.9.9"}},
		{remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "user0002", "secretKey": "secret222"}},
		{remoting.DeleteACLConfig, map[string]string{"accessKey": "user0002"}},
	}

	t.Run("off", func(t *testing.T) {
		tb := start(t, aclTestFile, false)
		if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateAndCreateACLConfig, maps.Clone(escalate), nil); r.Code != remoting.Success {
			t.Fatalf("stock: a non-admin updates ACL config: %d %q", r.Code, r.Remark)
		}
		// producer1 is admin now, as in the stock broker.
		create := brokertest.CreateTopicExt("Escalated", 1, 6, "SINGLE_TAG")
		if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateAndCreateTopic, create, nil); r.Code != remoting.Success {
			t.Fatalf("topic creation after the escalation: %d %q", r.Code, r.Remark)
		}
	})

	t.Run("on", func(t *testing.T) {
		tb := start(t, aclTestFile, true)
		for _, rq := range requests {
			r := tb.invokeSigned(tb.json, "producer1", "secret123", rq.code, maps.Clone(rq.ext), nil)
			if r.Code != remoting.NoPermission || !strings.Contains(r.Remark, "aclConfigRequiresAdmin") || !strings.Contains(r.Remark, `accessKey="producer1"`) {
				t.Fatalf("code %d by a non-admin: %d %q", rq.code, r.Code, r.Remark)
			}
		}
		if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateAndCreateACLConfig, maps.Clone(escalate), nil); r.Code != remoting.NoPermission {
			t.Fatalf("escalation: %d %q", r.Code, r.Remark)
		}
		for _, rq := range requests {
			if r := tb.invokeSigned(tb.json, "admin0001", "adminsecret", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.Success {
				t.Fatalf("code %d by the admin: %d %q", rq.code, r.Code, r.Remark)
			}
		}
		// The escalation did not happen: producer1 is still no admin.
		create := brokertest.CreateTopicExt("Escalated", 1, 6, "SINGLE_TAG")
		if r := tb.invokeSigned(tb.json, "producer1", "secret123", remoting.UpdateAndCreateTopic, create, nil); r.Code != remoting.SystemError {
			t.Fatalf("topic creation by producer1: %d %q", r.Code, r.Remark)
		}
	})

	// A global white address passes the ACL check but proves no account:
	// unsigned, or signed as a non-admin, it is refused; the admin's
	// signature (or its own white address) still works.
	t.Run("on, global white address", func(t *testing.T) {
		file := "globalWhiteRemoteAddresses:\n  - 127.0.0.1\n" + aclTestFile +
			"  - accessKey: admin0002\n    secretKey: adminsecret2\n    admin: true\n    whiteRemoteAddress: 127.0.0.1\n"
		tb := start(t, file, true)
		keep := map[string]string{"globalWhiteAddrs": "127.0.0.1"} // the admin's update keeps this host white
		for _, rq := range []struct {
			code int32
			ext  map[string]string
		}{{remoting.GetBrokerClusterACLInfo, nil}, {remoting.UpdateGlobalWhiteAddrsConfig, keep}} {
			if r := tb.invokeSigned(tb.json, "", "", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.NoPermission {
				t.Fatalf("code %d unsigned from a global white address: %d %q", rq.code, r.Code, r.Remark)
			}
			if r := tb.invokeSigned(tb.json, "producer1", "secret123", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.NoPermission {
				t.Fatalf("code %d by a non-admin from a global white address: %d %q", rq.code, r.Code, r.Remark)
			}
			if r := tb.invokeSigned(tb.json, "admin0001", "adminsecret", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.Success {
				t.Fatalf("code %d by the admin: %d %q", rq.code, r.Code, r.Remark)
			}
			if r := tb.invokeSigned(tb.json, "admin0002", "wrongsecret", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.Success {
				t.Fatalf("code %d by an admin from its own white address: %d %q", rq.code, r.Code, r.Remark)
			}
			if r := tb.invokeSigned(tb.json, "admin0001", "wrongsecret", rq.code, maps.Clone(rq.ext), nil); r.Code != remoting.NoPermission {
				t.Fatalf("code %d, the admin's key with a bad signature: %d %q", rq.code, r.Code, r.Remark)
			}
		}
	})
}
