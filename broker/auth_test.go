package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/remoting"
)

// startAuthBroker runs a broker with ACL 2.0 on: a super user root and,
// through 3001/3006 sent by root, a normal user "app" that may publish
// AuthTopic only.
func startAuthBroker(t *testing.T) (*testBroker, *remoting.Client) {
	t.Helper()
	tb := startBroker(t, func(o *Options) {
		o.AuthenticationEnabled, o.AuthorizationEnabled = true, true
		o.AuthenticationMetadataProvider = "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
		o.AuthorizationMetadataProvider = "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
		o.InitAuthenticationUser = `{"username":"root","password":"rootpw"}`
		o.AutoCreateTopicEnable = true
	})
	cli := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cli.Close() })
	body, _ := json.Marshal(auth.UserInfo{Password: "apppw"})
	if r := tb.invokeSigned(cli, "root", "rootpw", remoting.AuthCreateUser, map[string]string{"username": "app"}, body); r.Code != 0 {
		t.Fatalf("createUser: %d %s", r.Code, r.Remark)
	}
	body, _ = json.Marshal(auth.AclInfo{Policies: []auth.PolicyInfo{{Entries: []auth.EntryInfo{
		{Resource: "Topic:AuthTopic", Actions: []string{"Pub"}, Decision: "Allow"},
	}}}})
	if r := tb.invokeSigned(cli, "root", "rootpw", remoting.AuthCreateACL, map[string]string{"subject": "User:app"}, body); r.Code != 0 {
		t.Fatalf("createAcl: %d %s", r.Code, r.Remark)
	}
	return tb, cli
}

func authSendExt(topic string) map[string]string {
	return map[string]string{"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
}

func TestAuthRemotingEndToEnd(t *testing.T) {
	tb, cli := startAuthBroker(t)
	expect := func(r *remoting.Command, code int32, remark string) {
		t.Helper()
		if r.Code != code || !strings.Contains(r.Remark, remark) {
			t.Fatalf("got %d %q, want %d %q", r.Code, r.Remark, code, remark)
		}
	}
	send := func(ak, sk, topic string) *remoting.Command {
		return tb.invokeSigned(cli, ak, sk, remoting.SendMessageV2, authSendExt(topic), []byte("hello"))
	}
	expect(send("", "", "AuthTopic"), remoting.NoPermission, "username cannot be null.")
	expect(send("app", "bad", "AuthTopic"), remoting.NoPermission, "check signature failed.")
	expect(send("ghost", "x", "AuthTopic"), remoting.NoPermission, "User:ghost is not found.")
	expect(send("app", "apppw", "OtherTopic"), remoting.NoPermission, "User:app has no permission to access Topic:OtherTopic from 127.0.0.1, no matched policies.")
	if r := send("app", "apppw", "AuthTopic"); r.Code != remoting.Success {
		t.Fatalf("allowed send: %d %s", r.Code, r.Remark)
	}
	// The admin codes need Update on the cluster: app may not create users.
	body, _ := json.Marshal(auth.UserInfo{Password: "x"})
	expect(tb.invokeSigned(cli, "app", "apppw", remoting.AuthCreateUser, map[string]string{"username": "evil"}, body),
		remoting.NoPermission, "Cluster:DefaultCluster")
	// Disabled at run time by root: app's next request is refused.
	body, _ = json.Marshal(auth.UserInfo{UserStatus: "disable"})
	expect(tb.invokeSigned(cli, "root", "rootpw", remoting.AuthUpdateUser, map[string]string{"username": "app"}, body), remoting.Success, "")
	expect(send("app", "apppw", "AuthTopic"), remoting.NoPermission, "User:app is disabled.")
	// getUser answers the password (the dashboard's login).
	r := tb.invokeSigned(cli, "root", "rootpw", remoting.AuthGetUser, map[string]string{"username": "app"}, nil)
	if want := `{"password":"apppw","userStatus":"disable","userType":"Normal","username":"app"}`; r.Code != 0 || string(r.Body) != want {
		t.Fatalf("getUser: %d %s", r.Code, r.Body)
	}
	// The metadata survives a restart: loaded at start, app is still
	// disabled and root still signs.
	if _, err := os.Stat(filepath.Join(tb.opts.StorePathRootDir, "config", auth.FileName)); err != nil {
		t.Fatal(err)
	}
	tb = tb.restart()
	expect(send("app", "apppw", "AuthTopic"), remoting.NoPermission, "User:app is disabled.")
	body, _ = json.Marshal(auth.UserInfo{UserStatus: "enable"})
	expect(tb.invokeSigned(cli, "root", "rootpw", remoting.AuthUpdateUser, map[string]string{"username": "app"}, body), remoting.Success, "")
	if r := send("app", "apppw", "AuthTopic"); r.Code != remoting.Success {
		t.Fatalf("send after re-enabling: %d %s", r.Code, r.Remark)
	}
}

func TestAuthCodesServedWithoutConfig(t *testing.T) {
	tb := startBroker(t, nil)
	cli := remoting.NewClient(remoting.ClientOptions{})
	defer cli.Close()
	r := tb.invokeSigned(cli, "", "", remoting.AuthListUser, map[string]string{"filter": ""}, nil)
	if r.Code != remoting.SystemError || r.Remark != "An system error occurred, please try again later." {
		t.Fatalf("got %d %q", r.Code, r.Remark)
	}
}

func TestAuthMigrationAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	os.WriteFile(path, []byte(aclTestFile), 0o644)
	tb := startBroker(t, func(o *Options) {
		o.AclFile = path
		o.MigrateAuthFromV1Enabled = true
		o.AuthenticationMetadataProvider, o.AuthorizationMetadataProvider = "local", "local"
	})
	md := tb.Auth().Metadata()
	if u, ok := md.User("admin0001"); !ok || u.UserType != auth.UserSuper || u.Password != "adminsecret" {
		t.Fatalf("admin0001 = %+v %v", u, ok)
	}
	a, ok := md.Acl("User:producer1")
	if !ok {
		t.Fatal("producer1 has no ACL")
	}
	got, _ := json.Marshal(a.Info())
	want := `{"policies":[{"entries":[{"actions":["Pub"],"decision":"Allow","resource":"Topic:AclTopic"}],"policyType":"Custom"},{"entries":[{"actions":["All"],"decision":"Deny","resource":"Topic:*"}],"policyType":"Default"}],"subject":"User:producer1"}`
	if string(got) != want {
		t.Fatalf("migrated\n got %s\nwant %s", got, want)
	}
}
