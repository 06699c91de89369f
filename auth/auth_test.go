package auth

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/remoting"
)

func TestParseResource(t *testing.T) {
	for _, c := range []struct {
		key  string
		want Resource
		ok   bool
	}{
		{"*", Resource{Type: TypeAny, Pattern: PatternAny}, true},
		{"Topic:*", Resource{Type: TypeTopic, Pattern: PatternAny}, true},
		{"topic:ab*", Resource{Type: TypeTopic, Name: "ab", Pattern: PatternPrefixed}, true},
		{"Group:g1", Resource{Type: TypeGroup, Name: "g1", Pattern: PatternLiteral}, true},
		{"Cluster:c", Resource{Type: TypeCluster, Name: "c", Pattern: PatternLiteral}, true},
		{"Queue:x", Resource{}, false},
		{" ", Resource{}, false},
	} {
		got, ok := ParseResource(c.key)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseResource(%q) = %+v %v, want %+v %v", c.key, got, ok, c.want, c.ok)
		}
	}
	if k := (Resource{Type: TypeTopic, Name: "ab", Pattern: PatternPrefixed}).Key(); k != "Topic:ab*" {
		t.Errorf("Key = %q", k)
	}
	if g := Group("%RETRY%g1"); g.Name != "g1" {
		t.Errorf("Group(retry) = %+v", g)
	}
}

func entry(res, decision string, actions []string, ips ...string) Entry {
	r, ok := ParseResource(res)
	if !ok {
		panic(res)
	}
	return Entry{Resource: r, Actions: actions, SourceIPs: ips, Decision: decision}
}

func TestDecide(t *testing.T) {
	pub, sub := []string{ActPub}, []string{ActSub}
	acl := &Acl{Subject: "User:u", Policies: []Policy{
		{Type: PolicyCustom, Entries: []Entry{
			entry("Topic:t1", Allow, pub),
			entry("Topic:t2", Deny, []string{ActAll}),
			entry("Group:g1", Allow, sub, "10.0.0.0/8"),
			entry("Topic:ab*", Deny, pub),
			entry("Topic:abc*", Allow, pub),
		}},
		{Type: PolicyDefault, Entries: []Entry{entry("Topic:*", Allow, sub)}},
	}}
	for _, c := range []struct {
		name string
		r    Request
		ok   bool
		msg  string
	}{
		{"allowed topic", Request{Topic("t1"), pub, "1.2.3.4"}, true, ""},
		{"action not granted falls to nothing", Request{Topic("t1"), []string{ActCreate}, "1.2.3.4"}, false, "no matched policies."},
		{"denied topic", Request{Topic("t2"), pub, "1.2.3.4"}, false, "the decision is deny."},
		{"default policy only when no custom matches", Request{Topic("zz"), sub, "1.2.3.4"}, true, ""},
		{"group in range", Request{Group("g1"), sub, "10.1.2.3"}, true, ""},
		{"group out of range", Request{Group("g1"), sub, "11.1.2.3"}, false, "no matched policies."},
		{"shorter deny prefix wins", Request{Topic("abcd"), pub, "1.2.3.4"}, false, "the decision is deny."},
		{"any requested action suffices", Request{Topic("t1"), []string{ActPub, ActSub, ActGet}, "1.2.3.4"}, true, ""},
	} {
		err := decide("User:u", acl, c.r)
		if (err == nil) != c.ok || (err != nil && !strings.HasSuffix(err.Error(), c.msg)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	err := decide("User:u", acl, Request{Topic("t2"), pub, "1.2.3.4"})
	if want := "User:u has no permission to access Topic:t2 from 1.2.3.4, the decision is deny."; err == nil || err.Error() != want {
		t.Errorf("message %v, want %q", err, want)
	}
	if err := decide("User:u", nil, Request{Topic("t1"), pub, "1.2.3.4"}); err == nil {
		t.Error("no acl allowed")
	}
}

// TestDecideDenyOverAllow: a typed deny beats an Any-type allow, and among
// entries that tie, the Java comparator puts Deny after Allow.
func TestDecideDenyOverAllow(t *testing.T) {
	a := &Acl{Policies: []Policy{{Type: PolicyCustom, Entries: []Entry{
		entry("*", Allow, []string{ActAll}),
		entry("Topic:secret", Deny, []string{ActSub}),
	}}}}
	if err := decide("User:u", a, Request{Topic("secret"), []string{ActSub}, "1.1.1.1"}); err == nil {
		t.Error("typed deny lost to the Any allow")
	}
	if err := decide("User:u", a, Request{Topic("open"), []string{ActSub}, "1.1.1.1"}); err != nil {
		t.Error(err)
	}
	// Topic:* (any pattern) Deny ties with Topic:x Allow: Allow decides.
	tie := &Acl{Policies: []Policy{{Type: PolicyCustom, Entries: []Entry{
		entry("Topic:*", Deny, []string{ActPub}),
		entry("Topic:x", Allow, []string{ActPub}),
	}}}}
	if err := decide("User:u", tie, Request{Topic("x"), []string{ActPub}, "1.1.1.1"}); err != nil {
		t.Errorf("tie: %v", err)
	}
}

// TestJavaSortLiteralVsPrefix: literal against prefix compares -1 both
// ways, so List.sort keeps the later-listed of two first.
func TestJavaSortLiteralVsPrefix(t *testing.T) {
	lit, pre := entry("Topic:abc", Allow, []string{ActPub}), entry("Topic:ab*", Deny, []string{ActPub})
	es := []*Entry{&lit, &pre}
	javaSort(es)
	if es[0] != &pre {
		t.Errorf("first = %+v, want the prefix", *es[0])
	}
	es = []*Entry{&pre, &lit}
	javaSort(es)
	if es[0] != &lit {
		t.Errorf("first = %+v, want the literal", *es[0])
	}
}

func TestIPInRange(t *testing.T) {
	for _, c := range []struct {
		ip, rng string
		want    bool
	}{
		{"10.0.0.1", "10.0.0.1", true}, {"10.0.0.1", "10.0.0.2", false}, {"10.9.8.7", "10.0.0.0/8", true},
		{"11.0.0.1", "10.0.0.0/8", false}, {"::1", "::1", true}, {"bad", "10.0.0.0/8", false},
	} {
		if got := ipInRange(c.ip, c.rng); got != c.want {
			t.Errorf("ipInRange(%s, %s) = %v", c.ip, c.rng, got)
		}
	}
}

// newService is a service with both checks on, a super user "root" and a
// normal user "u" (password "secret").
func newService(t *testing.T) *Service {
	t.Helper()
	s, err := Open(Config{
		AuthenticationEnabled: true, AuthorizationEnabled: true,
		AuthenticationMetadataProvider: "local", AuthorizationMetadataProvider: "local",
		InitAuthenticationUser: `{"username":"root","password":"rootpw"}`, ClusterName: "DefaultCluster",
	}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.md.CreateUser(User{Username: "u", Password: "secret"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func signed(code int32, ext map[string]string, body []byte, ak, sk string) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	if ak != "" {
		acl.SignRequest(req, ak, sk, "")
	}
	return req
}

func wantDenied(t *testing.T, err error, msg string) {
	t.Helper()
	var d *Denied
	if !errors.As(err, &d) || !strings.Contains(d.Msg, msg) {
		t.Fatalf("err = %v, want a refusal with %q", err, msg)
	}
}

func TestRemotingAuthentication(t *testing.T) {
	s := newService(t)
	send := func(ak, sk string) error {
		return s.Check("10.1.1.1:5000", signed(remoting.SendMessageV2, map[string]string{"a": "pg", "b": "t1"}, []byte("x"), ak, sk))
	}
	wantDenied(t, send("", ""), "username cannot be null.")
	wantDenied(t, send("nobody", "x"), "User:nobody is not found.")
	wantDenied(t, send("u", "wrong"), "check signature failed.")
	// Right credentials, no ACL yet.
	wantDenied(t, send("u", "secret"), "no matched policies.")
	if err := send("root", "rootpw"); err != nil {
		t.Fatalf("super user: %v", err)
	}
	// A tampered body breaks the signature.
	req := signed(remoting.SendMessageV2, map[string]string{"a": "pg", "b": "t1"}, []byte("x"), "u", "secret")
	req.Body = []byte("y")
	wantDenied(t, s.Check("10.1.1.1:5000", req), "check signature failed.")

	// Disabled at run time: the next request is refused.
	if err := s.md.UpdateUser(User{Username: "root", UserStatus: StatusOff}); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, send("root", "rootpw"), "User:root is disabled.")
}

func TestWhitelist(t *testing.T) {
	s := newService(t)
	s.authnWL, s.authzWL = whitelist("105, 10"), whitelist("105")
	if err := s.Check("1.1.1.1:1", remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": "t"}, nil)); err != nil {
		t.Fatal(err)
	}
	// Authentication skipped for 10, authorization not: no subject.
	wantDenied(t, s.Check("1.1.1.1:1", remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "t"}, nil)), "Authorization failed")
}

func putAcl(t *testing.T, s *Service, user string, entries ...EntryInfo) {
	t.Helper()
	subj, ps := AclInfo{Policies: []PolicyInfo{{Entries: entries}}}.convert()
	_ = subj
	if err := s.md.PutAcl("User:"+user, ps); err != nil {
		t.Fatal(err)
	}
}

func TestRemotingAuthorization(t *testing.T) {
	s := newService(t)
	putAcl(t, s, "u",
		EntryInfo{Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: "Allow"},
		EntryInfo{Resource: "Topic:logs*", Actions: []string{"Sub"}, Decision: "Allow", SourceIps: []string{"192.168.0.0/16"}},
		EntryInfo{Resource: "Group:cg", Actions: []string{"Sub"}, Decision: "Allow"},
		EntryInfo{Resource: "Topic:tx", Actions: []string{"Pub"}, Decision: "Deny"},
	)
	check := func(remote string, code int32, ext map[string]string, body []byte) error {
		return s.Check(remote, signed(code, ext, body, "u", "secret"))
	}
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ok(check("1.1.1.1:1", remoting.SendMessageV2, map[string]string{"a": "pg", "b": "orders"}, nil))
	wantDenied(t, check("1.1.1.1:1", remoting.SendMessageV2, map[string]string{"a": "pg", "b": "other"}, nil), "Topic:other from 1.1.1.1, no matched policies.")
	// A send to a retry topic needs Sub on the group.
	ok(check("1.1.1.1:1", remoting.SendMessageV2, map[string]string{"a": "cg", "b": "%RETRY%cg"}, nil))
	// Pull: Sub on the topic and the group; the IP range applies.
	ok(check("192.168.3.4:1", remoting.PullMessage, map[string]string{"topic": "logs-a", "consumerGroup": "cg"}, nil))
	wantDenied(t, check("10.0.0.1:1", remoting.PullMessage, map[string]string{"topic": "logs-a", "consumerGroup": "cg"}, nil), "Topic:logs-a")
	// POP by annotation.
	ok(check("192.168.3.4:1", 200050, map[string]string{"topic": "logs-a", "consumerGroup": "cg"}, nil))
	wantDenied(t, check("192.168.3.4:1", 200050, map[string]string{"topic": "logs-a", "consumerGroup": "other"}, nil), "Group:other")
	// Transactions and recall: Pub, denied on tx.
	wantDenied(t, check("1.1.1.1:1", remoting.EndTransaction, map[string]string{"topic": "tx"}, nil), "the decision is deny.")
	ok(check("1.1.1.1:1", remoting.EndTransaction, map[string]string{"topic": "orders"}, nil))
	wantDenied(t, check("1.1.1.1:1", remoting.RecallMessage, map[string]string{"topic": "tx"}, nil), "the decision is deny.")
	// Admin codes: Create on the topic; 3001 is Update on the cluster.
	wantDenied(t, check("1.1.1.1:1", remoting.UpdateAndCreateTopic, map[string]string{"topic": "orders"}, nil), "Topic:orders")
	wantDenied(t, check("1.1.1.1:1", remoting.AuthCreateUser, map[string]string{"username": "x"}, nil), "Cluster:DefaultCluster")
	// Heartbeat body: the consumer group and its topics.
	hb := []byte(`{"clientID":"c","consumerDataSet":[{"groupName":"cg","subscriptionDataSet":[{"topic":"logs-x"}]}],"producerDataSet":[]}`)
	ok(check("192.168.0.9:1", remoting.HeartBeat, nil, hb))
	wantDenied(t, check("10.0.0.9:1", remoting.HeartBeat, nil, hb), "Topic:logs-x")
	wantDenied(t, check("10.0.0.9:1", remoting.HeartBeat, nil, []byte("{bad")), "parse authorization context error.")
	// rmq's clock fast-forward needs Update on the cluster.
	wantDenied(t, check("1.1.1.1:1", remoting.ClockFastForward, map[string]string{"durationMs": "1"}, nil), "Cluster:DefaultCluster")
	// Unannotated codes are not authorized.
	ok(check("1.1.1.1:1", remoting.GetBrokerConfig, map[string]string{"x": "y"}, nil))
}

// The 5.3.3 batch and group admin codes as their headers' annotations map
// them: 343 Get on the group, 345 Get on the group and the topic, 353
// Update on both; 18 and 225 name no resource, so a signed request is only
// authenticated.
func TestRemotingAuthorizationGroupAdminCodes(t *testing.T) {
	s := newService(t)
	putAcl(t, s, "u",
		EntryInfo{Resource: "Group:cg", Actions: []string{"Get"}, Decision: "Allow"},
		EntryInfo{Resource: "Topic:orders", Actions: []string{"Get"}, Decision: "Allow"},
	)
	check := func(code int32, ext map[string]string) error {
		return s.Check("1.1.1.1:1", signed(code, ext, nil, "u", "secret"))
	}
	if err := check(remoting.QueryTopicsByConsumer, map[string]string{"group": "cg"}); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, check(remoting.QueryTopicsByConsumer, map[string]string{"group": "other"}), "Group:other from 1.1.1.1, no matched policies.")
	if err := check(remoting.QuerySubscriptionByConsumer, map[string]string{"group": "cg", "topic": "orders"}); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, check(remoting.QuerySubscriptionByConsumer, map[string]string{"group": "cg", "topic": "other"}), "Topic:other")
	wantDenied(t, check(remoting.UpdateAndGetGroupForbidden, map[string]string{"group": "cg", "topic": "orders"}), "Group:cg from 1.1.1.1, no matched policies.")
	for _, code := range []int32{remoting.UpdateAndCreateTopicList, remoting.UpdateAndCreateSubscriptionGroupList} {
		if err := check(code, nil); err != nil {
			t.Fatalf("code %d: %v", code, err)
		}
		if err := s.Check("1.1.1.1:1", signed(code, nil, nil, "u", "wrong")); err == nil {
			t.Fatalf("code %d with a wrong secret authenticated", code)
		}
	}
}

func call(s *Service, code int32, ext map[string]string, body any, ak, sk string) *remoting.Command {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	return s.Processors()[code](signed(code, ext, raw, ak, sk))
}

func TestCodesRoundTrip(t *testing.T) {
	s := newService(t)
	expect := func(resp *remoting.Command, code int32, remark string) {
		t.Helper()
		if resp.Code != code || resp.Remark != remark {
			t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, code, remark)
		}
	}
	expect(call(s, remoting.AuthCreateUser, map[string]string{}, UserInfo{Password: "p"}, "", ""), remoting.InvalidParameter, "The username is blank")
	expect(call(s, remoting.AuthCreateUser, map[string]string{"username": "alice"}, UserInfo{}, "", ""), remoting.NoPermission, "password can not be blank")
	expect(call(s, remoting.AuthCreateUser, map[string]string{"username": "alice"}, UserInfo{Password: "pw"}, "", ""), remoting.Success, "")
	expect(call(s, remoting.AuthCreateUser, map[string]string{"username": "alice"}, UserInfo{Password: "pw"}, "", ""), remoting.NoPermission, "The user is existed")
	expect(call(s, remoting.AuthCreateUser, map[string]string{"username": "boss"}, UserInfo{Password: "pw", UserType: "Super"}, "u", "secret"), remoting.SystemError, "The super user can only be create by super user")
	expect(call(s, remoting.AuthCreateUser, map[string]string{"username": "boss"}, UserInfo{Password: "pw", UserType: "super"}, "root", "rootpw"), remoting.Success, "")
	expect(call(s, remoting.AuthUpdateUser, map[string]string{"username": "nobody"}, UserInfo{Password: "x"}, "", ""), remoting.NoPermission, "The user is not exist")
	expect(call(s, remoting.AuthUpdateUser, map[string]string{"username": "boss"}, UserInfo{Password: "x"}, "u", "secret"), remoting.NoPermission, "The super user can only be update by super user")
	expect(call(s, remoting.AuthUpdateUser, map[string]string{"username": "alice"}, UserInfo{UserStatus: "disable"}, "", ""), remoting.Success, "")

	resp := call(s, remoting.AuthGetUser, map[string]string{"username": "alice"}, nil, "", "")
	if want := `{"password":"pw","userStatus":"disable","userType":"Normal","username":"alice"}`; string(resp.Body) != want {
		t.Fatalf("getUser body %s, want %s", resp.Body, want)
	}
	if resp := call(s, remoting.AuthGetUser, map[string]string{"username": "ghost"}, nil, "", ""); resp.Code != 0 || resp.Body != nil {
		t.Fatalf("getUser of nobody: %d %s", resp.Code, resp.Body)
	}
	resp = call(s, remoting.AuthListUser, map[string]string{"filter": "li"}, nil, "", "")
	var users []UserInfo
	if err := json.Unmarshal(resp.Body, &users); err != nil || len(users) != 1 || users[0].Username != "alice" {
		t.Fatalf("listUser: %s %v", resp.Body, err)
	}

	acl := AclInfo{Policies: []PolicyInfo{{Entries: []EntryInfo{
		{Resource: "Topic:t*", Actions: []string{"Pub", "Bogus"}, SourceIps: []string{"10.0.0.0/8"}, Decision: "Allow"},
	}}}}
	expect(call(s, remoting.AuthCreateACL, map[string]string{"subject": "User:ghost"}, acl, "", ""), remoting.NoPermission, "The subject of User:ghost is not exist.")
	expect(call(s, remoting.AuthCreateACL, map[string]string{"subject": "User:alice"}, AclInfo{}, "", ""), remoting.SystemError,
		"org.apache.rocketmq.auth.authorization.exception.AuthorizationException: The body of acl is null, org.apache.rocketmq.broker.processor.AdminBrokerProcessor.createAcl(AdminBrokerProcessor.java:3158)")
	for _, bad := range []struct {
		e   EntryInfo
		msg string
	}{
		{EntryInfo{Resource: "Queue:x", Actions: []string{"Pub"}, Decision: "Allow"}, "The resource is null."},
		{EntryInfo{Resource: "Topic:x", Actions: []string{"Nope"}, Decision: "Allow"}, "The actions is empty."},
		{EntryInfo{Resource: "Topic:x", Actions: []string{"Any"}, Decision: "Allow"}, "The actions can not be Any."},
		{EntryInfo{Resource: "Topic:x", Actions: []string{"Pub"}, SourceIps: []string{"1.2.3"}, Decision: "Allow"}, "The source ip is invalid."},
		{EntryInfo{Resource: "Topic:x", Actions: []string{"Pub"}, Decision: "Maybe"}, "The decision is null or illegal."},
	} {
		expect(call(s, remoting.AuthCreateACL, map[string]string{"subject": "User:alice"}, AclInfo{Policies: []PolicyInfo{{Entries: []EntryInfo{bad.e}}}}, "", ""), remoting.NoPermission, bad.msg)
	}
	expect(call(s, remoting.AuthCreateACL, map[string]string{"subject": "User:alice"}, acl, "", ""), remoting.Success, "")
	// 3007 merges: a new resource is added, the same resource replaced.
	upd := AclInfo{Policies: []PolicyInfo{{Entries: []EntryInfo{
		{Resource: "Group:g", Actions: []string{"Sub"}, Decision: "Allow"},
		{Resource: "Topic:t*", Actions: []string{"Sub"}, Decision: "Deny"},
	}}}}
	expect(call(s, remoting.AuthUpdateACL, map[string]string{"subject": "User:alice"}, upd, "", ""), remoting.Success, "")
	resp = call(s, remoting.AuthGetACL, map[string]string{"subject": "User:alice"}, nil, "", "")
	want := `{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:t*"},{"actions":["Sub"],"decision":"Allow","resource":"Group:g"}],"policyType":"Custom"}],"subject":"User:alice"}`
	if string(resp.Body) != want {
		t.Fatalf("getAcl\n got %s\nwant %s", resp.Body, want)
	}
	resp = call(s, remoting.AuthListACL, map[string]string{"subjectFilter": "", "resourceFilter": "Group"}, nil, "", "")
	var acls []AclInfo
	if err := json.Unmarshal(resp.Body, &acls); err != nil || len(acls) != 1 || len(acls[0].Policies[0].Entries) != 1 || acls[0].Policies[0].Entries[0].Resource != "Group:g" {
		t.Fatalf("listAcl: %s %v", resp.Body, err)
	}
	expect(call(s, remoting.AuthGetACL, map[string]string{"subject": "User:ghost"}, nil, "", ""), remoting.NoPermission, "The subject is not exist.")
	expect(call(s, remoting.AuthDeleteACL, map[string]string{"subject": "User:alice", "resource": "Group:g"}, nil, "", ""), remoting.Success, "")
	expect(call(s, remoting.AuthDeleteACL, map[string]string{"subject": "User:alice", "resource": "Topic:t*"}, nil, "", ""), remoting.Success, "")
	expect(call(s, remoting.AuthDeleteACL, map[string]string{"subject": "User:alice"}, nil, "", ""), remoting.NoPermission, "The acl is not exist.")
	// Delete user: unknown is success; a user's ACL goes with it.
	expect(call(s, remoting.AuthCreateACL, map[string]string{"subject": "User:alice"}, acl, "", ""), remoting.Success, "")
	expect(call(s, remoting.AuthDeleteUser, map[string]string{"username": "ghost"}, nil, "", ""), remoting.Success, "")
	expect(call(s, remoting.AuthDeleteUser, map[string]string{"username": "alice"}, nil, "", ""), remoting.Success, "")
	if _, ok := s.md.Acl("User:alice"); ok {
		t.Fatal("deleteUser left the ACL")
	}

	// Reopened from disk: the same state.
	md, err := OpenMetadata(nil, s.md.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(md.ListUsers("")) != 3 {
		t.Fatalf("reloaded users %+v", md.ListUsers(""))
	}
}

func TestOpenRefusesMissingProvider(t *testing.T) {
	_, err := Open(Config{InitAuthenticationUser: `{"username":"a","password":"b"}`}, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "The authenticationMetadataProvider is not configured") {
		t.Fatalf("err = %v", err)
	}
}

func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "plain_acl.yml")
	os.WriteFile(yml, []byte(`
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: RocketMQ
  secretKey: 12345678
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - topicA=DENY
  - topicB=PUB|SUB
  - topicC=SUB
  groupPerms:
  - groupA=DENY
  - groupB=PUB|SUB
  - groupC=SUB
- accessKey: rocketmq2
  secretKey: 12345678
  admin: true
`), 0o644)
	s, err := Open(Config{AuthenticationMetadataProvider: "l", AuthorizationMetadataProvider: "l", MigrateAuthFromV1Enabled: true}, dir, []string{yml, filepath.Join(dir, "absent.yml")})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := s.md.User("RocketMQ")
	admin, _ := s.md.User("rocketmq2")
	if u.Password != "12345678" || u.UserType != UserNormal || admin.UserType != UserSuper {
		t.Fatalf("users %+v %+v", u, admin)
	}
	a, _ := s.md.Acl("User:RocketMQ")
	got, _ := json.Marshal(a.Info())
	want := `{"policies":[` +
		`{"entries":[{"actions":["All"],"decision":"Deny","resource":"Topic:topicA"},{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:topicB"},{"actions":["Sub"],"decision":"Allow","resource":"Topic:topicC"},` +
		`{"actions":["All"],"decision":"Deny","resource":"Group:groupA"},{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:groupB"},{"actions":["Sub"],"decision":"Allow","resource":"Group:groupC"}],"policyType":"Custom"},` +
		`{"entries":[{"actions":["All"],"decision":"Deny","resource":"Topic:*"},{"actions":["Sub"],"decision":"Allow","resource":"Group:*"}],"policyType":"Default"}],"subject":"User:RocketMQ"}`
	if string(got) != want {
		t.Fatalf("migrated acl\n got %s\nwant %s", got, want)
	}
	if _, ok := s.md.Acl("User:rocketmq2"); ok {
		t.Fatal("an account without perms got an ACL")
	}
	// A second start leaves existing users alone.
	s.md.UpdateUser(User{Username: "RocketMQ", Password: "changed"})
	s2, err := Open(Config{AuthenticationMetadataProvider: "l", AuthorizationMetadataProvider: "l", MigrateAuthFromV1Enabled: true}, dir, []string{yml})
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := s2.md.User("RocketMQ"); u.Password != "changed" {
		t.Fatalf("migration overwrote an existing user: %+v", u)
	}
}

func TestWriteFailureChangesNothing(t *testing.T) {
	s := newService(t)
	s.md.write = func(string, []byte) error { return errors.New("disk full") }
	if resp := call(s, remoting.AuthCreateUser, map[string]string{"username": "x"}, UserInfo{Password: "p"}, "", ""); resp.Code != remoting.SystemError || resp.Remark != errSystem {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	if _, ok := s.md.User("x"); ok {
		t.Fatal("a failed write is visible")
	}
}

func TestGrpcCredential(t *testing.T) {
	s := newService(t)
	putAcl(t, s, "u", EntryInfo{Resource: "Topic:t", Actions: []string{"Pub"}, Decision: "Allow"})
	need := func(string) ([]Request, error) {
		return []Request{{Resource: Topic("t"), Actions: []string{ActPub}}}, nil
	}
	dt := "20261206T050000Z"
	check := func(authz, dt string) error {
		return s.CheckGrpc("1.2.3.4:5", "apache.rocketmq.v2.SendMessageRequest", authz, dt, need)
	}
	if err := check(acl.SignGrpc("u", "secret", dt), dt); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, check(acl.SignGrpc("u", "bad", dt), dt), "check signature failed.")
	wantDenied(t, check(acl.SignGrpc("u", "secret", dt), ""), "datetime is null.")
	wantDenied(t, check("", ""), "username cannot be null.")
	wantDenied(t, check("MQv2-HMAC-SHA1", dt), "authentication header is incorrect.")
	wantDenied(t, check("MQv2-HMAC-SHA1 Credential", dt), "authentication keyValues length is incorrect")
	wantDenied(t, check(acl.SignGrpc("nobody", "x", dt), dt), "User:nobody is not found.")
	s.md.UpdateUser(User{Username: "u", UserStatus: StatusOff})
	wantDenied(t, check(acl.SignGrpc("u", "secret", dt), dt), "User:u is disabled.")
}

func FuzzGrpcCredential(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=ak/x, SignedHeaders=x-mq-date-time, Signature=0A0B", "20240101T000000Z")
	f.Add("a b=c,d", "")
	f.Add(" ,,=", "x")
	f.Fuzz(func(t *testing.T, authz, dt string) {
		c, err := GrpcCredential(authz, dt)
		if err == nil && authz != "" && string(c.Content) != dt {
			t.Fatalf("content %q for %q", c.Content, dt)
		}
	})
}

func FuzzRemotingRequests(f *testing.F) {
	f.Add(int32(34), "topic", "%RETRY%g", []byte(`{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t"}]}]}`))
	f.Add(int32(41), "consumerGroup", "g", []byte(`{"consumerGroup":"g","mqSet":[{"topic":"t"}]}`))
	f.Add(int32(208), "topicList", "a;b;;c", []byte(nil))
	f.Add(int32(10), "AccessKey", "ak", []byte("body"))
	f.Fuzz(func(t *testing.T, code int32, k, v string, body []byte) {
		req := remoting.NewRequest(code, map[string]string{k: v, "Signature": "x"}, body)
		if _, err := Requests(req, "c", "1.2.3.4"); err != nil {
			var d *Denied
			if !errors.As(err, &d) {
				t.Fatalf("untyped error %v", err)
			}
		}
		_ = RemotingCredential(req)
	})
}
