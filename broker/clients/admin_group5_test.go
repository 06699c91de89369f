package clients

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: every config stored over the
// stock defaults, persisted once; a bad name refuses the whole list; an
// empty list succeeds and changes nothing; hostile bodies are refused.
func TestSubscriptionGroupList(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{})
	admin := env.client("admin")
	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil,
		[]byte(`{"groupConfigList":[{"groupName":"GA","retryMaxTimes":3},{"groupName":"GB","consumeEnable":false}]}`)), remoting.Success, "")
	wantA := topicgroup.NewSubscriptionGroupConfig("GA")
	wantA.RetryMaxTimes = 3
	wantB := topicgroup.NewSubscriptionGroupConfig("GB")
	wantB.ConsumeEnable = false
	if got := env.s.SubGroups.Find("GA"); !reflect.DeepEqual(got, wantA) {
		t.Fatalf("GA = %+v", got)
	}
	if got := env.s.SubGroups.Find("GB"); !reflect.DeepEqual(got, wantB) {
		t.Fatalf("GB = %+v", got)
	}
	before := env.s.SubGroups.DataVersion()
	clExpectCode(t, admin.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(`{"groupConfigList":[]}`)), remoting.Success, "")
	for _, bad := range []string{
		`{"groupConfigList":[{"groupName":"GC"},{"groupName":"bad name"}]}`,
		`{"groupConfigList":[{"groupName":"GC"},{"retryMaxTimes":1}]}`,
		`{"groupConfigList":[{"groupName":"GC"},null]}`,
		`{"groupConfigList":[{"groupName":"GC","retryMaxTimes":"x"}]}`,
		`{}`, ``, `[`, `{"groupConfigList":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
		`{"groupConfigList":[` + strings.Repeat(`{"groupName":"G"},`, maxGroupListBody/18) + `{"groupName":"G"}]}`,
	} {
		resp := admin.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(bad))
		if resp.Code != remoting.SystemError || resp.Remark == "" {
			t.Fatalf("body %.80q: code %d remark %q", bad, resp.Code, resp.Remark)
		}
	}
	if env.s.SubGroups.Find("GC") != nil || env.s.SubGroups.DataVersion() != before {
		t.Fatal("a refused or empty list changed the table")
	}
	reloaded, err := NewSubscriptionGroupManager(env.s.SubGroups.path, false, env.s.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(reloaded.Find("GB"), wantB) {
		t.Fatalf("persisted GB = %+v", reloaded.Find("GB"))
	}
}

// QUERY_TOPICS_BY_CONSUMER lists the topics the group has offsets for,
// offline ones included; QUERY_SUBSCRIPTION_BY_CONSUMER answers the online
// subscription, without subscriptionData when there is none.
func TestQueryTopicsAndSubscriptionByConsumer(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	env.s.brokerAddr = func() string { return "127.0.0.1:10911" }
	a := env.client("A")
	a.heartbeat([]string{"G"}, "T")
	env.s.Offsets.Commit("G", "T", 0, 1)
	env.s.Offsets.Commit("G", "%RETRY%G", 0, 1)
	env.s.Offsets.Commit("G", "Old", 2, 7)
	env.s.Offsets.Commit("H", "U", 0, 1)

	clExpectCode(t, a.invoke(remoting.QueryTopicsByConsumer, nil, nil), remoting.SystemError, "")
	resp := a.invoke(remoting.QueryTopicsByConsumer, map[string]string{"group": "G"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	if string(resp.Body) != `{"brokerAddr":"127.0.0.1:10911","topicList":["%RETRY%G","Old","T"]}` {
		t.Fatalf("topics of G: %s", resp.Body)
	}
	resp = a.invoke(remoting.QueryTopicsByConsumer, map[string]string{"group": "nobody"}, nil)
	if string(resp.Body) != `{"brokerAddr":"127.0.0.1:10911","topicList":[]}` {
		t.Fatalf("topics of an unknown group: %s", resp.Body)
	}

	clExpectCode(t, a.invoke(remoting.QuerySubscriptionByConsumer, map[string]string{"topic": "T"}, nil), remoting.SystemError, "")
	resp = a.invoke(remoting.QuerySubscriptionByConsumer, map[string]string{"group": "G", "topic": "T"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	body := decodeBody[remoting.QuerySubscriptionResponseBody](t, resp)
	if body.Group != "G" || body.Topic == nil || *body.Topic != "T" || body.SubscriptionData == nil || body.SubscriptionData.Topic != "T" {
		t.Fatalf("subscription of G on T: %s", resp.Body)
	}
	for ext, want := range map[string]string{
		"group=G,topic=Old": `{"group":"G","topic":"Old"}`,
		"group=G":           `{"group":"G"}`,
	} {
		h := map[string]string{}
		for _, kv := range strings.Split(ext, ",") {
			k, v, _ := strings.Cut(kv, "=")
			h[k] = v
		}
		resp = a.invoke(remoting.QuerySubscriptionByConsumer, h, nil)
		clExpectCode(t, resp, remoting.Success, "")
		if string(resp.Body) != want {
			t.Fatalf("%s: %s, want %s", ext, resp.Body, want)
		}
	}
}

// UPDATE_AND_GET_GROUP_FORBIDDEN sets and clears the read bit, persisted in
// subscriptionGroup.json's forbiddenTable; without readable it only reads;
// clearing the last bit drops the group's entry as stock does.
func TestUpdateAndGetGroupForbidden(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{})
	admin := env.client("admin")
	forbid := func(ext map[string]string, want string) {
		t.Helper()
		resp := admin.invoke(remoting.UpdateAndGetGroupForbidden, ext, nil)
		clExpectCode(t, resp, remoting.Success, "")
		if string(resp.Body) != want {
			t.Fatalf("%v: %s, want %s", ext, resp.Body, want)
		}
	}
	clExpectCode(t, admin.invoke(remoting.UpdateAndGetGroupForbidden, map[string]string{"group": "G"}, nil), remoting.SystemError, "")
	clExpectCode(t, admin.invoke(remoting.UpdateAndGetGroupForbidden, map[string]string{"topic": "T"}, nil), remoting.SystemError, "")
	forbid(map[string]string{"group": "G", "topic": "T"}, `{"group":"G","readable":true,"topic":"T"}`)
	forbid(map[string]string{"group": "G", "topic": "T", "readable": "false"}, `{"group":"G","readable":false,"topic":"T"}`)
	forbid(map[string]string{"group": "G", "topic": "U", "readable": "FALSE"}, `{"group":"G","readable":false,"topic":"U"}`)
	forbid(map[string]string{"group": "G", "topic": "T"}, `{"group":"G","readable":false,"topic":"T"}`)

	reloaded, err := NewSubscriptionGroupManager(env.s.SubGroups.path, false, env.s.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reloaded.Forbidden("G", "T", PermReadIndex) || !reloaded.Forbidden("G", "U", PermReadIndex) || reloaded.Forbidden("G", "V", PermReadIndex) {
		t.Fatal("forbidden bits not persisted")
	}
	resp := admin.invoke(remoting.GetAllSubscriptionGroupConfig, nil, nil)
	if w := decodeBody[remoting.SubscriptionGroupWrapper](t, resp); !reflect.DeepEqual(w.ForbiddenTable, map[string]map[string]int32{"G": {"T": 4, "U": 4}}) {
		t.Fatalf("forbiddenTable = %v", w.ForbiddenTable)
	}
	// Any value but "true" is Boolean.parseBoolean's false; clearing T's
	// only bit drops G's whole entry (U too), in memory, as stock.
	forbid(map[string]string{"group": "G", "topic": "T", "readable": "true"}, `{"group":"G","readable":true,"topic":"T"}`)
	forbid(map[string]string{"group": "G", "topic": "U"}, `{"group":"G","readable":true,"topic":"U"}`)
}
