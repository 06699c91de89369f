package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// sqlTopic holds six messages: body mN, property a=N, TAGS t<N%2>, KEYS kN.
const sqlTopic = "SqlT"

func sendSQLMessages(tb *testBroker, topic string, extra ...string) {
	tb.t.Helper()
	for i := range 6 {
		kv := append([]string{"a", strconv.Itoa(i), "TAGS", "t" + strconv.Itoa(i%2), "KEYS", "k" + strconv.Itoa(i)}, extra...)
		tb.mustSend(sendArgs{topic: topic, body: []byte("m" + strconv.Itoa(i)), props: coreProps(kv...)})
	}
}

func pullBodies(t *testing.T, resp *remoting.Command) []string {
	t.Helper()
	var got []string
	for _, m := range coreRecords(t, resp.Body) {
		got = append(got, string(m.Body))
	}
	return got
}

// sqlHeartbeat registers group as a consumer of topic by expr (SQL92) at
// version, plus the group's retry topic with "*", as a Java push consumer does.
func (tb *testBroker) sqlHeartbeat(group, topic, expr string, version int64) {
	tb.t.Helper()
	hb := remoting.HeartbeatData{ClientID: "sql-client", ConsumerDataSet: []*remoting.ConsumerData{{
		GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []*remoting.SubscriptionData{
			{Topic: topic, SubString: expr, ExpressionType: "SQL92", SubVersion: version},
			{Topic: message.RetryTopic(group), SubString: "*", ExpressionType: "TAG", SubVersion: version},
		},
	}}}
	if resp := tb.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)); resp.Code != remoting.Success {
		tb.t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
}

func (tb *testBroker) checkClientConfig(typ, expr string) *remoting.Command {
	tb.t.Helper()
	body, err := json.Marshal(map[string]any{
		"clientId": "c1", "group": "CG",
		"subscriptionData": remoting.SubscriptionData{Topic: sqlTopic, SubString: expr, ExpressionType: typ, SubVersion: 1},
	})
	if err != nil {
		tb.t.Fatal(err)
	}
	return tb.invoke(remoting.CheckClientConfig, nil, body)
}

func enableSQL(o *Options) { o.EnablePropertyFilter = true }

// TestPullSQLWithSubscription pulls with the expression in the header (a
// lite-pull consumer): only matching messages come back, the offset moves
// past the rest, system keys are visible, and the stock codes stand.
func TestPullSQLWithSubscription(t *testing.T) {
	tb := startBroker(t, enableSQL)
	sendSQLMessages(tb, sqlTopic)
	tb.waitDispatched()
	sql := func(expr string, offset int64, maxMsgs int32) pullArgs {
		return pullArgs{topic: sqlTopic, sysFlag: pullFlagSubscription, subscription: expr, exprType: "SQL92", offset: offset, maxMsgs: maxMsgs}
	}
	cases := []struct {
		name       string
		args       pullArgs
		wantCode   int32
		wantRemark string
		wantNext   int64
		want       []string
	}{
		{name: "numeric", args: sql("a > 2", 0, 0), wantCode: remoting.Success, wantNext: 6, want: []string{"m3", "m4", "m5"}},
		{name: "TAGS and KEYS are properties", args: sql("TAGS = 't1' AND KEYS <> 'k3'", 0, 0), wantCode: remoting.Success, wantNext: 6, want: []string{"m1", "m5"}},
		{name: "IN and BETWEEN", args: sql("KEYS IN ('k0', 'k4') OR a BETWEEN 2 AND 2", 0, 0), wantCode: remoting.Success, wantNext: 6, want: []string{"m0", "m2", "m4"}},
		{name: "max messages stops at the last match taken", args: sql("a >= 1", 0, 2), wantCode: remoting.Success, wantNext: 3, want: []string{"m1", "m2"}},
		{name: "from an offset", args: sql("a < 5", 3, 0), wantCode: remoting.Success, wantNext: 6, want: []string{"m3", "m4"}},
		{name: "missing property never matches", args: sql("b = 'x'", 0, 0), wantCode: remoting.PullRetryImmediately, wantNext: 6},
		{name: "failed conversion does not match", args: sql("TAGS = 5", 0, 0), wantCode: remoting.PullRetryImmediately, wantNext: 6},
		{name: "empty expression", args: sql("", 0, 0), wantCode: remoting.SubscriptionParseFailed, wantRemark: "parse the consumer's subscription failed"},
		// ConsumerFilterManager.build returns null and the (disabled) assert
		// lets the pull go on without filter data: every message matches.
		{name: "expression that does not compile filters nothing", args: sql("a >", 0, 0), wantCode: remoting.Success, wantNext: 6,
			want: []string{"m0", "m1", "m2", "m3", "m4", "m5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, lite := range []bool{false, true} {
				code := int32(remoting.PullMessage)
				if lite {
					code = remoting.LitePullMessage
				}
				resp := tb.invoke(code, tc.args.ext(), nil)
				if resp.Code != tc.wantCode || (tc.wantRemark != "" && resp.Remark != tc.wantRemark) {
					t.Fatalf("lite %t: code %d %q, want %d %q", lite, resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
				}
				if tc.wantRemark != "" {
					continue
				}
				if got := coreExtInt(t, resp, "nextBeginOffset"); got != tc.wantNext {
					t.Errorf("lite %t: nextBeginOffset %d, want %d", lite, got, tc.wantNext)
				}
				if got := pullBodies(t, resp); !slices.Equal(got, tc.want) {
					t.Errorf("lite %t: got %v, want %v", lite, got, tc.want)
				}
			}
		})
	}
}

// TestPullSQLHeartbeat pulls without the expression (a push consumer): the
// filter the heartbeat registered decides, and the checks come in Java's
// order: subscription version (25), filter data present (27), then the
// enablePropertyFilter switch.
func TestPullSQLHeartbeat(t *testing.T) {
	tb := startBroker(t, enableSQL)
	sendSQLMessages(tb, sqlTopic)
	tb.waitDispatched()
	tb.sqlHeartbeat("SG", sqlTopic, "a IN ('1', '4') OR TAGS = 'none'", 100)

	resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 100})
	if resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"m1", "m4"}) {
		t.Fatalf("pull: %d %q %v", resp.Code, resp.Remark, pullBodies(t, resp))
	}
	// The Go push consumer sends subVersion 0 and TAG in the header.
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic}); resp.Code != remoting.Success || len(pullBodies(t, resp)) != 2 {
		t.Fatalf("pull with subVersion 0: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 101}); resp.Code != remoting.SubscriptionNotLatest {
		t.Fatalf("newer subVersion: %d %q", resp.Code, resp.Remark)
	}
	if d := tb.clients.Filters.Get(sqlTopic, "SG"); d == nil || d.ClientVersion != 100 || d.Dead() {
		t.Fatalf("filter data %+v", d)
	}

	// A newer subscription with an expression that does not compile: the
	// heartbeat takes it, the filter is dropped, pulls get 27.
	tb.sqlHeartbeat("SG", sqlTopic, "a IN (1)", 200)
	resp = tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 200})
	if resp.Code != remoting.FilterDataNotExist || resp.Remark != "The broker's consumer filter data is not exist!Your expression may be wrong!" {
		t.Fatalf("bad expression: %d %q", resp.Code, resp.Remark)
	}
	// The next good version works again.
	tb.sqlHeartbeat("SG", sqlTopic, "a = 5", 300)
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 300}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"m5"}) {
		t.Fatalf("after a good heartbeat: %d %q", resp.Code, resp.Remark)
	}
	// An older version changes nothing.
	tb.sqlHeartbeat("SG", sqlTopic, "a = 0", 250)
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 300}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"m5"}) {
		t.Fatalf("after an older heartbeat: %d %q", resp.Code, resp.Remark)
	}
}

// TestCheckFilterData covers FILTER_DATA_NOT_LATEST, which heartbeats alone
// cannot produce (they update subscription and filter together).
func TestCheckFilterData(t *testing.T) {
	if code, _ := checkFilterData(nil, 5); code != remoting.FilterDataNotExist {
		t.Errorf("no filter: code %d", code)
	}
	fd := &clients.FilterData{ClientVersion: 10}
	if code, remark := checkFilterData(fd, 11); code != remoting.FilterDataNotLatest || remark != "the consumer's consumer filter data not latest" {
		t.Errorf("older filter: %d %q", code, remark)
	}
	for _, v := range []int64{0, 10} {
		if code, _ := checkFilterData(fd, v); code != remoting.Success {
			t.Errorf("subVersion %d: code %d", v, code)
		}
	}
}

// TestPullSQLDisabled is the stock default: no property filtering, every
// non-tag pull and CHECK_CLIENT_CONFIG refused; the filter data checks come
// first. UPDATE_BROKER_CONFIG turns it on at run time.
func TestPullSQLDisabled(t *testing.T) {
	tb := startBroker(t, nil)
	sendSQLMessages(tb, sqlTopic)
	tb.waitDispatched()
	const refused = "The broker does not support consumer to filter message by SQL92"

	resp := tb.pull(pullArgs{topic: sqlTopic, sysFlag: pullFlagSubscription, subscription: "a > 1", exprType: "SQL92"})
	if resp.Code != remoting.SystemError || resp.Remark != refused {
		t.Fatalf("pull with expression: %d %q", resp.Code, resp.Remark)
	}
	tb.sqlHeartbeat("SG", sqlTopic, "a > 1", 100)
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 101}); resp.Code != remoting.SubscriptionNotLatest {
		t.Fatalf("25 before the switch: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 100}); resp.Code != remoting.SystemError || resp.Remark != refused {
		t.Fatalf("heartbeat filter: %d %q", resp.Code, resp.Remark)
	}
	tb.sqlHeartbeat("BG", sqlTopic, "a >", 100)
	if resp := tb.pull(pullArgs{group: "BG", topic: sqlTopic, subVersion: 100}); resp.Code != remoting.FilterDataNotExist {
		t.Fatalf("27 before the switch: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.checkClientConfig("SQL92", "a > 1"); resp.Code != remoting.SystemError || resp.Remark != refused {
		t.Fatalf("CHECK_CLIENT_CONFIG: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.checkClientConfig("TAG", "*"); resp.Code != remoting.Success {
		t.Fatalf("CHECK_CLIENT_CONFIG of a tag: %d %q", resp.Code, resp.Remark)
	}

	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("enablePropertyFilter=true\n")); resp.Code != remoting.Success {
		t.Fatalf("update config: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.pull(pullArgs{group: "SG", topic: sqlTopic, subVersion: 100}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"m2", "m3", "m4", "m5"}) {
		t.Fatalf("after enabling: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.checkClientConfig("SQL92", "a > 1"); resp.Code != remoting.Success {
		t.Fatalf("CHECK_CLIENT_CONFIG after enabling: %d %q", resp.Code, resp.Remark)
	}
}

// TestCheckClientConfigSQL: a Java consumer's start-up check compiles the
// expression; the compiler's message is the remark of code 23.
func TestCheckClientConfigSQL(t *testing.T) {
	tb := startBroker(t, enableSQL)
	if resp := tb.checkClientConfig("SQL92", "region = 'eu' AND price > 10"); resp.Code != remoting.Success {
		t.Fatalf("good expression: %d %q", resp.Code, resp.Remark)
	}
	for _, expr := range []string{"a >", "a = 0.0", "a IN (1)", ""} {
		_, cerr := filter.Compile(expr)
		if cerr == nil {
			t.Fatalf("%q compiles", expr)
		}
		resp := tb.checkClientConfig("SQL92", expr)
		if resp.Code != remoting.SubscriptionParseFailed || resp.Remark != cerr.Error() {
			t.Errorf("%q: %d %q, want 23 %q", expr, resp.Code, resp.Remark, cerr.Error())
		}
	}
}

// TestPullSQLRetry: with filterSupportRetry a group's retry messages are
// matched by its filter of their original topic (RETRY_TOPIC); messages of
// topics without a filter pass. Without it every retry message passes.
func TestPullSQLRetry(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.EnablePropertyFilter, o.FilterSupportRetry = true, true })
	retry := message.RetryTopic("RG")
	tb.sqlHeartbeat("RG", sqlTopic, "a >= 4", 100)
	sendSQLMessages(tb, retry, message.PropRetryTopic, sqlTopic)
	tb.mustSend(sendArgs{topic: retry, body: []byte("other"), props: coreProps("a", "0", message.PropRetryTopic, "OtherTopic")})
	tb.mustSend(sendArgs{topic: retry, body: []byte("plain"), props: coreProps("a", "0")})
	tb.waitDispatched()

	want := []string{"m4", "m5", "other", "plain"}
	if resp := tb.pull(pullArgs{group: "RG", topic: retry, subVersion: 100}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), want) {
		t.Fatalf("retry pull: %d %q %v, want %v", resp.Code, resp.Remark, pullBodies(t, resp), want)
	}
	// Another group pulling the retry topic with a tag subscription: the
	// group comes from the topic name, as in Java.
	if resp := tb.pull(pullArgs{group: "X", topic: retry, sysFlag: pullFlagSubscription, subscription: "*"}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), want) {
		t.Fatalf("retry pull by another group: %d %q %v", resp.Code, resp.Remark, pullBodies(t, resp))
	}
	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("filterSupportRetry=false\n")); resp.Code != remoting.Success {
		t.Fatalf("update config: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.pull(pullArgs{group: "RG", topic: retry, subVersion: 100}); resp.Code != remoting.Success || len(pullBodies(t, resp)) != 8 {
		t.Fatalf("retry pull without filterSupportRetry: %d %q %v", resp.Code, resp.Remark, pullBodies(t, resp))
	}
}

// TestConsumerFilterFile: filters are written to config/consumerFilter.json
// in the stock layout (dead here: the consumer's connection closed before the
// broker stopped) and read back after a restart, dead until their consumers
// heartbeat again, still serving pulls.
func TestConsumerFilterFile(t *testing.T) {
	tb := startBroker(t, enableSQL)
	sendSQLMessages(tb, sqlTopic)
	tb.waitDispatched()
	tb.sqlHeartbeat("FG", sqlTopic, "a = 3", 100)
	tb = tb.restart()

	raw, err := os.ReadFile(filepath.Join(tb.opts.StorePathRootDir, "config", clients.FilterFileName))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		FilterDataByTopic map[string]struct {
			Topic           string                     `json:"topic"`
			GroupFilterData map[string]json.RawMessage `json:"groupFilterData"`
		} `json:"filterDataByTopic"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	entry := f.FilterDataByTopic[sqlTopic].GroupFilterData["FG"]
	for _, key := range []string{`"consumerGroup": "FG"`, `"topic": "SqlT"`, `"expression": "a = 3"`, `"expressionType": "SQL92"`,
		`"clientVersion": 100`, `"dead": true`, `"bitNum": 112`} {
		if !strings.Contains(string(entry), key) {
			t.Errorf("entry lacks %s:\n%s", key, entry)
		}
	}
	d := tb.clients.Filters.Get(sqlTopic, "FG")
	if d == nil || !d.Dead() || d.Expression != "a = 3" || d.Compiled == nil {
		t.Fatalf("reloaded filter %+v", d)
	}
	tb.sqlHeartbeat("FG", sqlTopic, "a = 3", 100)
	if d := tb.clients.Filters.Get(sqlTopic, "FG"); d.Dead() {
		t.Fatal("the same version's heartbeat did not revive the filter")
	}
	if resp := tb.pull(pullArgs{group: "FG", topic: sqlTopic, subVersion: 100}); resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"m3"}) {
		t.Fatalf("pull after restart: %d %q", resp.Code, resp.Remark)
	}
}

// TestPullFilterAllocations: matching a message allocates nothing.
func TestPullFilterAllocations(t *testing.T) {
	e, err := filter.Compile("a > 2 AND TAGS IN ('t0', 't1') AND KEYS <> 'zz'")
	if err != nil {
		t.Fatal(err)
	}
	pf := &pullFilter{expr: e}
	props := message.Props(coreProps("a", "3", "TAGS", "t1", "KEYS", "k3", "UNIQ_KEY", "X"))
	if !pf.MatchProps(props) {
		t.Fatal("no match")
	}
	if n := testing.AllocsPerRun(100, func() { pf.MatchProps(props) }); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
}

// TestLongPollSQLWakesOnMatch: a held SQL92 pull stays parked when a message
// its expression rejects arrives, and is answered by the next one that matches.
func TestLongPollSQLWakesOnMatch(t *testing.T) {
	tb := startBroker(t, enableSQL)
	tb.mustSend(sendArgs{topic: sqlTopic, body: []byte("first"), props: coreProps("a", "1")})
	tb.waitDispatched()
	tb.sqlHeartbeat("LG", sqlTopic, "a = 7", 100)
	ch := tb.pullAsync(pullArgs{group: "LG", topic: sqlTopic, offset: 1, sysFlag: pullFlagSuspend, suspendMillis: 15000, subVersion: 100})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.pullHold.held() == 1 }, "the pull to be held")

	tb.mustSend(sendArgs{topic: sqlTopic, body: []byte("no"), props: coreProps("a", "2")})
	tb.waitDispatched()
	if n := tb.pullHold.held(); n != 1 {
		t.Fatalf("a message the expression rejects woke the pull (%d held)", n)
	}
	tb.mustSend(sendArgs{topic: sqlTopic, body: []byte("yes"), props: coreProps("a", "7")})
	resp := coreAwait(t, ch, coreTestTimeout)
	if resp.Code != remoting.Success || !slices.Equal(pullBodies(t, resp), []string{"yes"}) || coreExtInt(t, resp, "nextBeginOffset") != 3 {
		t.Fatalf("woken pull: %d %q %v", resp.Code, resp.Remark, pullBodies(t, resp))
	}
}
