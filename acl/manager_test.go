package acl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

const stockFile = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

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
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
`

func openFile(t *testing.T, body string) (*Manager, *clock.Manual, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	m, err := Open(path, clk)
	if err != nil {
		t.Fatal(err)
	}
	return m, clk, path
}

func signed(code int32, ext map[string]string, body []byte, ak, sk string) *remoting.Command {
	req := remoting.NewRequest(code, nil, body)
	for k, v := range ext {
		req.SetExt(k, v)
	}
	if ak != "" {
		SignRequest(req, ak, sk, "")
	}
	return req
}

func remarkOf(err error) string {
	var d *Denied
	if errors.As(err, &d) {
		return d.Remark()
	}
	if err != nil {
		return "not a denial: " + err.Error()
	}
	return ""
}

// The expected remarks (and the allowed cases) are what the 4.9.8
// PlainAccessValidator (rocketmq-acl-4.9.8.jar, validate(parse(request,
// remote)) with RemotingHelper.exceptionSimpleDesc of the exception) gives
// for the same file and requests signed by AclClientRPCHook; the
// heartbeat that is not JSON fails in parse, with the JSON decoder's text
// (Java's is fastjson's).
func TestCheckAsPlainPermissionManager(t *testing.T) {
	m, _, _ := openFile(t, stockFile)
	const client = "127.0.0.1:40000"
	send := func(topic string) map[string]string { return map[string]string{"a": "pg", "b": topic, "c": "TBW102"} }
	pull := func(topic, group string) map[string]string {
		return map[string]string{"topic": topic, "consumerGroup": group, "queueId": "0"}
	}
	cases := []struct {
		name   string
		remote string
		req    *remoting.Command
		want   string // "" allowed, else the remark
	}{
		{"global white address, unsigned", "192.168.0.7:1", signed(remoting.SendMessageV2, send("topicA"), nil, "", ""), ""},
		{"unsigned", client, signed(remoting.SendMessageV2, send("topicB"), nil, "", ""),
			"org.apache.rocketmq.acl.common.AclException: No accessKey is configured, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"},
		{"unknown account", client, signed(remoting.SendMessageV2, send("topicB"), nil, "nobody12", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: No acl config for nobody12, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:668)"},
		{"wrong secret", client, signed(remoting.SendMessageV2, send("topicB"), []byte("x"), "RocketMQ", "87654321"),
			"org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=RocketMQ, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:684)"},
		{"send to PUB|SUB topic", client, signed(remoting.SendMessageV2, send("topicB"), []byte("x"), "RocketMQ", "12345678"), ""},
		{"send to SUB topic", client, signed(remoting.SendMessageV2, send("topicC"), []byte("x"), "RocketMQ", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: No default permission for topic:topicC, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"},
		{"send to unlisted topic, default DENY", client, signed(remoting.SendMessageV2, send("other"), nil, "RocketMQ", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: No default permission for topic:other, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"},
		{"trace topic skips permissions", client, signed(remoting.SendMessageV2, send("RMQ_SYS_TRACE_TOPIC"), nil, "RocketMQ", "12345678"), ""},
		{"pull SUB topic, SUB group", client, signed(remoting.PullMessage, pull("topicC", "groupC"), nil, "RocketMQ", "12345678"), ""},
		{"pull, denied group", client, signed(remoting.PullMessage, pull("topicC", "groupA"), nil, "RocketMQ", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: No default permission for group:groupA, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"},
		{"pull, unlisted group takes defaultGroupPerm SUB", client, signed(remoting.PullMessage, pull("topicB", "groupZ"), nil, "RocketMQ", "12345678"), ""},
		{"admin code, not admin", client, signed(remoting.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQ", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: Need admin permission for request code=17, but accessKey=RocketMQ is not, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)"},
		{"admin code, admin", client, signed(remoting.DeleteTopicInBroker, map[string]string{"topic": "x"}, nil, "rocketmq2", "12345678"), ""},
		{"ACL update code is not in ADMIN_CODE", client, signed(remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "x"}, nil, "RocketMQ", "12345678"), ""},
		{"admin with no perms lists passes everything", client, signed(remoting.PullMessage, pull("topicA", "groupA"), nil, "rocketmq2", "12345678"), ""},
		{"account white address skips the signature", "192.168.1.9:1", signed(remoting.UpdateBrokerConfig, map[string]string{FieldAccessKey: "rocketmq2"}, nil, "", ""), ""},
		{"a header without its group names nothing", client, signed(remoting.GetConsumerListByGroup, map[string]string{"x": "y"}, nil, "RocketMQ", "12345678"), ""},
		{"two refusals: the HashMap's first", client, signed(remoting.PullMessage, pull("topicA", "groupA"), nil, "RocketMQ", "12345678"),
			"org.apache.rocketmq.acl.common.AclException: No default permission for topic:topicA, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"},
	}
	notJSON := remarkOf(m.Check(client, signed(remoting.HeartBeat, nil, []byte("{"), "RocketMQ", "12345678")))
	if !strings.HasPrefix(notJSON, "org.apache.rocketmq.acl.common.AclException: ") || !strings.HasSuffix(notJSON, ", "+frameParse) {
		t.Errorf("heartbeat that is not JSON: %q", notJSON)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := remarkOf(m.Check(c.remote, c.req)); got != c.want {
				t.Fatalf("remark\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCheckHeartbeatNamesGroupsAndTopics(t *testing.T) {
	m, _, _ := openFile(t, stockFile)
	hb := func(group, topic string) []byte {
		b, _ := json.Marshal(map[string]any{"clientID": "c", "consumerDataSet": []any{map[string]any{
			"groupName": group, "subscriptionDataSet": []any{map[string]any{"topic": topic}},
		}}})
		return b
	}
	ok := signed(remoting.HeartBeat, nil, hb("groupC", "topicC"), "RocketMQ", "12345678")
	if err := m.Check("127.0.0.1:1", ok); err != nil {
		t.Fatalf("heartbeat on permitted group/topic: %v", err)
	}
	bad := signed(remoting.HeartBeat, nil, hb("groupC", "topicA"), "RocketMQ", "12345678")
	if err := m.Check("127.0.0.1:1", bad); err == nil || !strings.Contains(err.Error(), "topic:topicA") {
		t.Fatalf("heartbeat on a denied topic: %v", err)
	}
	// Three refused topics: the 4.9.8 validator names "zz" (bucket 0 of its HashMap).
	b, _ := json.Marshal(map[string]any{"clientID": "c", "consumerDataSet": []any{map[string]any{
		"groupName": "groupC", "subscriptionDataSet": []any{map[string]any{"topic": "t"}, map[string]any{"topic": "a"}, map[string]any{"topic": "zz"}},
	}}})
	three := signed(remoting.HeartBeat, nil, b, "RocketMQ", "12345678")
	want := "org.apache.rocketmq.acl.common.AclException: No default permission for topic:zz, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"
	if got := remarkOf(m.Check("127.0.0.1:1", three)); got != want {
		t.Fatalf("remark\n got %q\nwant %q", got, want)
	}
}

// Java's HashMap decides which of several refused resources a denial
// names: iteration goes by bucket ("zz".hashCode() = 3904 -> bucket 0,
// "a" = 97 -> 1, "t" = 116 -> 4), not by insertion.
func TestDeniedResourceFollowsJavaHashMapOrder(t *testing.T) {
	r := resources{}
	r.add("t", true, PermSub)
	r.add("a", true, PermSub)
	r.add("zz", true, PermSub)
	var got []string
	for _, e := range r.hashOrder() {
		got = append(got, e.resource)
	}
	if strings.Join(got, ",") != "zz,a,t" {
		t.Fatalf("order %v, want zz,a,t", got)
	}
}

func TestReloadOnChangedBytes(t *testing.T) {
	m, _, path := openFile(t, stockFile)
	req := signed(remoting.SendMessageV2, map[string]string{"a": "pg", "b": "topicC"}, nil, "RocketMQ", "12345678")
	if m.Check("127.0.0.1:1", req) == nil {
		t.Fatal("topicC is SUB only; send allowed")
	}
	if changed, err := m.Reload(); changed || err != nil {
		t.Fatalf("reload of the same bytes: changed=%v err=%v", changed, err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(stockFile, "topicC=SUB", "topicC=PUB", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := m.Reload(); !changed || err != nil {
		t.Fatalf("reload after rewrite: changed=%v err=%v", changed, err)
	}
	if err := m.Check("127.0.0.1:1", req); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	// A broken file keeps the rules that were loaded.
	if err := os.WriteFile(path, []byte("accounts:\n  - accessKey: short\n    secretKey: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reload(); err == nil {
		t.Fatal("reload of a bad file: no error")
	}
	if err := m.Check("127.0.0.1:1", req); err != nil {
		t.Fatalf("rules lost after a failed reload: %v", err)
	}
}

func TestAdminRequestsRewriteTheFile(t *testing.T) {
	m, clk, path := openFile(t, stockFile)
	h := Processors(m, func() BrokerInfo { return BrokerInfo{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911"} }, false)
	call := func(code int32, ext map[string]string) *remoting.Command {
		return h[code](nil, remoting.NewRequest(code, ext, nil))
	}
	clk.Advance(time.Second)
	r := call(remoting.UpdateAndCreateACLConfig, map[string]string{
		"accessKey": "newuser1", "secretKey": "newsecret1", "admin": "false",
		"defaultTopicPerm": "PUB", "topicPerms": "t1=SUB,t2=DENY", "groupPerms": "g1=SUB",
	})
	if r.Code != remoting.Success {
		t.Fatalf("update: %d %s", r.Code, r.Remark)
	}
	raw, _ := os.ReadFile(path)
	f, err := parseFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Accounts) != 3 || f.Accounts[2].AccessKey != "newuser1" || f.Accounts[2].TopicPerms[1] != "t2=DENY" {
		t.Fatalf("file accounts %+v", f.Accounts)
	}
	if f.DataVersion[0] != (DataVersion{Counter: 1, Timestamp: 1_700_000_001_000}) || m.Version() != f.DataVersion[0] {
		t.Fatalf("version %+v / %+v", f.DataVersion, m.Version())
	}
	send := signed(remoting.SendMessageV2, map[string]string{"a": "pg", "b": "free"}, nil, "newuser1", "newsecret1")
	if err := m.Check("127.0.0.1:1", send); err != nil {
		t.Fatalf("new account refused: %v", err)
	}

	// An update keeps what it does not name and moves the account last.
	r = call(remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "RocketMQ", "secretKey": "abcdefgh", "admin": "true"})
	if r.Code != remoting.Success {
		t.Fatalf("update: %d %s", r.Code, r.Remark)
	}
	raw, _ = os.ReadFile(path)
	f, _ = parseFile(raw)
	last := f.Accounts[len(f.Accounts)-1]
	if last.AccessKey != "RocketMQ" || !last.Admin || last.SecretKey != "abcdefgh" || len(last.TopicPerms) != 3 || f.DataVersion[0].Counter != 2 {
		t.Fatalf("updated account %+v version %+v", last, f.DataVersion)
	}

	for _, bad := range []map[string]string{
		{"accessKey": "short", "secretKey": "12345678"},
		{"accessKey": "longenough", "secretKey": "12345678", "topicPerms": "t1"},
		{"accessKey": "longenough", "secretKey": "12345678", "topicPerms": "t1=ALL"},
		{"accessKey": "longenough", "secretKey": "12345678", "whiteRemoteAddress": "999.1.1.1"},
	} {
		if r := call(remoting.UpdateAndCreateACLConfig, bad); r.Code != remoting.UpdateAndCreateACLConfigFailed {
			t.Errorf("update %v: code %d, want 209", bad, r.Code)
		}
	}

	if r := call(remoting.DeleteACLConfig, map[string]string{"accessKey": "newuser1"}); r.Code != remoting.Success {
		t.Fatalf("delete: %d %s", r.Code, r.Remark)
	}
	if m.Check("127.0.0.1:1", send) == nil {
		t.Fatal("deleted account still allowed")
	}
	r = call(remoting.DeleteACLConfig, map[string]string{"accessKey": "newuser1"})
	if r.Code != remoting.DeleteACLConfigFailed || r.Remark != "The accesskey[newuser1] corresponding to accessConfig has been deleted failed." {
		t.Fatalf("second delete: %d %q", r.Code, r.Remark)
	}

	// Without aclFileFullPath (mqadmin updateGlobalWhiteAddr without -p) the
	// default file is updated, as on the 4.9.8 broker (the oracle run saw it).
	if r := call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "192.168.0.*"}); r.Code != remoting.Success {
		t.Fatalf("white addrs without a path: %d %q", r.Code, r.Remark)
	}
	if raw, _ := os.ReadFile(path); !strings.Contains(string(raw), "192.168.0.*") {
		t.Fatalf("white addrs without a path: file\n%s", raw)
	}
	if r := call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"aclFileFullPath": path}); r.Code != remoting.UpdateGlobalWhiteAddrsConfigFailed ||
		r.Remark != "The globalWhiteAddresses[null] has been updated failed." {
		t.Fatalf("white addrs missing: %d %q", r.Code, r.Remark)
	}
	if r := call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "127.0.0.*", "aclFileFullPath": "/etc/other.yml"}); r.Code != remoting.UpdateGlobalWhiteAddrsConfigFailed {
		t.Fatalf("white addrs for another file: %d %q", r.Code, r.Remark)
	}
	if r := call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "127.0.0.*,10.0.0.1", "aclFileFullPath": path}); r.Code != remoting.Success {
		t.Fatalf("white addrs: %d %q", r.Code, r.Remark)
	}
	if err := m.Check("127.0.0.1:1", remoting.NewRequest(remoting.UpdateBrokerConfig, nil, nil)); err != nil {
		t.Fatalf("white-listed client refused: %v", err)
	}

	r = call(remoting.GetBrokerClusterACLInfo, nil)
	v := m.Version()
	wantV, _ := json.Marshal(v)
	if r.Code != remoting.Success || r.Ext()["version"] != string(wantV) || r.Ext()["brokerAddr"] != "127.0.0.1:10911" ||
		r.Ext()["allAclFileVersion"] != `{"`+path+`":`+string(wantV)+`}` {
		t.Fatalf("acl info: %d %v", r.Code, r.Ext())
	}
	if !strings.HasPrefix(string(wantV), `{"counter":5,"timestamp":`) {
		t.Fatalf("version json %s", wantV)
	}
}

func TestProcessorsWithACLOff(t *testing.T) {
	h := Processors(nil, func() BrokerInfo { return BrokerInfo{} }, true)
	r := h[remoting.UpdateAndCreateACLConfig](nil, remoting.NewRequest(remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "abcdefgh"}, nil))
	if r.Code != remoting.UpdateAndCreateACLConfigFailed {
		t.Fatalf("code %d", r.Code)
	}
	r = h[remoting.GetBrokerClusterACLInfo](nil, remoting.NewRequest(remoting.GetBrokerClusterACLInfo, nil, nil))
	if r.Code != remoting.SystemError {
		t.Fatalf("code %d", r.Code)
	}
}

func TestOpenCreatesAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	m, err := Open(path, clock.NewManual(time.UnixMilli(5)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if m.Version() != (DataVersion{Timestamp: 5}) {
		t.Fatalf("version %+v", m.Version())
	}
	if m.Check("127.0.0.1:1", remoting.NewRequest(remoting.SendMessage, nil, nil)) == nil {
		t.Fatal("empty file allows an unsigned request")
	}
}
