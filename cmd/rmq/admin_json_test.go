package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// jsonValues decodes every JSON value of out (consumeMessage and printMsg
// print one per message); anything else in out is an error.
func jsonValues(out string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var vs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return vs, nil
		}
		if err != nil {
			return vs, err
		}
		vs = append(vs, v)
	}
}

// TestAdminJSONEverySubcommand runs each of the 60 admin subcommands with
// --json against the in-process broker: the output must be JSON only, hold
// at least one non-empty value, and carry what names the request.
func TestAdminJSONEverySubcommand(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // queryMsgById writes bodies under $TMPDIR/rocketmq/msgbodys
	// ACL is on so that the ACL subcommands have a broker to talk to;
	// 127.0.0.1 is a global white address, so the others need no signature.
	// fastForward needs clockControlEnable and, with the ACL on, a signed
	// admin account (ffadmin).
	aclFile := writeACLFile(t, "globalWhiteRemoteAddresses:\n  - 127.0.0.1\naccounts:\n  - accessKey: ffadmin\n    secretKey: ffsecret1\n    admin: true\n")
	c := startAdminClusterWith(t, func(o *broker.Options) {
		o.AclEnable, o.AclFile, o.ClockControlEnable = true, aclFile, true
		o.AuthenticationMetadataProvider, o.AuthorizationMetadataProvider = "local", "local"
	})
	consumer := newFakeConsumer(t, "JsonT") // stays connected for consumerProgress -s
	var sent, timerSent struct {
		MsgID        string `json:"msgId"`
		OffsetMsgID  string `json:"offsetMsgId"`
		RecallHandle string `json:"recallHandle"`
		QueueID      int32  `json:"queueId"`
	}
	tests := []struct {
		name     string
		args     []string
		before   func(t *testing.T)
		contains []string // substrings of the output
		after    func(t *testing.T, out string)
	}{
		{name: "updateTopic", args: []string{"updateTopic", "-c", "DefaultCluster", "-t", "JsonT", "-r", "2", "-w", "2"}, contains: []string{"JsonT", c.broker}},
		{
			name:     "sendMessage",
			before:   func(t *testing.T) { c.waitRoute(t, "JsonT") },
			args:     []string{"sendMessage", "-t", "JsonT", "-p", "jbody", "-k", "jkey", "-c", "JTag"},
			contains: []string{"SEND_OK", "broker-a"},
			after: func(t *testing.T, out string) {
				if err := json.Unmarshal([]byte(out), &sent); err != nil || len(sent.OffsetMsgID) != 32 {
					t.Fatalf("sendMessage --json = %s (%v)", out, err)
				}
			},
		},
		{
			name: "sendMessage of a timer message",
			args: []string{"sendMessage", "-t", "JsonT", "-p", "later", "--deliverTimeMs", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)},
			after: func(t *testing.T, out string) {
				if err := json.Unmarshal([]byte(out), &timerSent); err != nil || timerSent.RecallHandle == "" {
					t.Fatalf("sendMessage --json of a timer message = %s (%v)", out, err)
				}
			},
			contains: []string{`"recallHandle"`},
		},
		{name: "updateSubGroup", args: []string{"updateSubGroup", "-c", "DefaultCluster", "-g", "JsonG"}, contains: []string{"JsonG", c.broker}},
		{name: "topicList", args: []string{"topicList"}, contains: []string{"JsonT", "TBW102"}},
		{name: "topicList -c", args: []string{"topicList", "-c"}, contains: []string{"JsonT", "DefaultCluster"}},
		{name: "topicRoute", args: []string{"topicRoute", "-t", "JsonT"}, contains: []string{c.broker, "writeQueueNums"}},
		{name: "topicRoute -l", args: []string{"topicRoute", "-t", "JsonT", "-l"}, contains: []string{c.broker, "writeQueueNums"}},
		{
			name:     "topicStatus",
			before:   func(t *testing.T) { c.waitDispatched(t, "JsonT", 1) },
			args:     []string{"topicStatus", "-t", "JsonT"},
			contains: []string{"JsonT", "broker-a"},
		},
		{name: "clusterList", args: []string{"clusterList"}, contains: []string{"DefaultCluster", c.broker}},
		{name: "clusterList -m", args: []string{"clusterList", "-m"}, contains: []string{"DefaultCluster", "broker-a"}},
		{name: "brokerStatus", args: []string{"brokerStatus", "-b", c.broker}, contains: []string{"brokerVersionDesc", "V4_9_8"}},
		{name: "brokerStatus of a cluster", args: []string{"brokerStatus", "-c", "DefaultCluster"}, contains: []string{c.broker, "brokerVersionDesc"}},
		{name: "getBrokerConfig", args: []string{"getBrokerConfig", "-b", c.broker}, contains: []string{"brokerName", "broker-a"}},
		{name: "getBrokerConfig of a cluster", args: []string{"getBrokerConfig", "-c", "DefaultCluster"}, contains: []string{c.broker, "brokerClusterName"}},
		{name: "updateBrokerConfig", args: []string{"updateBrokerConfig", "-b", c.broker, "-k", "brokerPermission", "-v", "6"}, contains: []string{c.broker, "brokerPermission"}},
		{name: "queryMsgByKey", args: []string{"queryMsgByKey", "-t", "JsonT", "-k", "jkey"}, contains: []string{"jkey"}},
		{name: "queryMsgById", args: []string{"queryMsgById", "-i", "<OFFSETID>"}, contains: []string{"<OFFSETID>", "JsonT"}},
		{name: "consumeMessage", args: []string{"consumeMessage", "-t", "JsonT"}, contains: []string{"<OFFSETID>", "jbody"}},
		{name: "printMsg", args: []string{"printMsg", "-t", "JsonT"}, contains: []string{"<OFFSETID>", "jbody"}},
		{
			name:     "consumerConnection",
			before:   func(t *testing.T) { joinGroup(t, c, consumer, "JsonG", "JsonT") },
			args:     []string{"consumerConnection", "-g", "JsonG"},
			contains: []string{"127.0.0.1@admin-test", "JsonT"},
		},
		{name: "consumerProgress -g", args: []string{"consumerProgress", "-g", "JsonG"}, contains: []string{"JsonT", "broker-a"}},
		{name: "consumerProgress -g -s true", args: []string{"consumerProgress", "-g", "JsonG", "-s", "true"}, contains: []string{"JsonT", "127.0.0.1"}},
		{name: "consumerProgress of every group", args: []string{"consumerProgress"}, contains: []string{"JsonG"}},
		{name: "updateTopicList", args: []string{"updateTopicList", "-b", c.broker, "-f", writeFile(t, "topics.json", `[{"topicName":"JsonL"}]`)}, contains: []string{"JsonL", c.broker}},
		{name: "updateSubGroupList", args: []string{"updateSubGroupList", "-c", "DefaultCluster", "-f", writeFile(t, "groups.json", `[{"groupName":"JsonLG"}]`)}, contains: []string{"JsonLG", c.broker}},
		{name: "queryTopicsByConsumer", args: []string{"queryTopicsByConsumer", "-g", "JsonG"}, contains: []string{"JsonT"}},
		{name: "querySubscription", args: []string{"querySubscription", "-g", "JsonG", "-t", "JsonT"}, contains: []string{`"topic": "JsonT"`}},
		{name: "updateGroupForbidden", args: []string{"updateGroupForbidden", "-b", c.broker, "-g", "JsonG", "-t", "JsonT"}, contains: []string{`"readable": true`}},
		{
			name: "resetOffsetByTime",
			before: func(t *testing.T) {
				req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "JsonG", "topic": "JsonT", "queueId": "0", "commitOffset": "0"}, nil)
				if resp, err := consumer.InvokeTimeout(c.broker, req, 5*time.Second); err != nil || resp.Code != remoting.Success {
					t.Fatalf("commit: %v %v", resp, err)
				}
			},
			args:     []string{"resetOffsetByTime", "-g", "JsonG", "-t", "JsonT", "-s", "now"},
			contains: []string{"JsonT", "broker-a", `"queues"`},
		},
		{name: "consumerStatus", args: []string{"consumerStatus", "-g", "JsonG"}, contains: []string{"127.0.0.1@admin-test"}},
		{name: "getConsumerStatus", args: []string{"getConsumerStatus", "-g", "JsonG", "-t", "JsonT", "-i", "nobody"}, contains: []string{"JsonG"}},
		{name: "cloneGroupOffset", args: []string{"cloneGroupOffset", "-s", "JsonG", "-d", "JsonG2", "-t", "JsonT", "-o", "true"}, contains: []string{"JsonG2"}},
		{name: "queryCq", args: []string{"queryCq", "-t", "JsonT", "-q", "<QID>", "-i", "0"}, contains: []string{"maxQueueIndex"}},
		{name: "queryMsgByUniqueKey", args: []string{"queryMsgByUniqueKey", "-t", "JsonT", "-i", "<MSGID>"}, contains: []string{"<MSGID>", "JsonT"}},
		{
			name: "queryMsgTraceById",
			before: func(t *testing.T) {
				pub := strings.Join([]string{"Pub", "1700000000000", "DefaultRegion", "PG", "JsonT", sent.MsgID, "", "", c.broker, "5", "2", "0", sent.OffsetMsgID, "true"}, "\x01") + "\x02"
				if _, err := c.adm.SendMessage(context.Background(), admin.SendMessageSpec{Topic: message.TopicTrace, Body: []byte(pub), Keys: sent.MsgID, QueueID: -1}); err != nil {
					t.Fatal(err)
				}
				c.waitDispatched(t, message.TopicTrace, 1)
			},
			args:     []string{"queryMsgTraceById", "-i", "<MSGID>"},
			contains: []string{`"msgType": "Pub"`, "<MSGID>"},
		},
		{name: "getNamesrvConfig", args: []string{"getNamesrvConfig"}, contains: []string{"orderMessageEnable", c.ns}},
		{name: "updateNamesrvConfig", args: []string{"updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false"}, contains: []string{"orderMessageEnable"}},
		{name: "statsAll", args: []string{"statsAll", "-t", "JsonT"}, contains: []string{`"topic": "JsonT"`, `"group": "JsonG"`}},
		{name: "brokerConsumeStats", args: []string{"brokerConsumeStats", "-b", c.broker}, contains: []string{`"group": "JsonG"`, c.broker}},
		{name: "producer", args: []string{"producer", "-b", c.broker}, contains: []string{`"groups"`}},
		{name: "timerStatus", args: []string{"timerStatus"}, contains: []string{c.broker, `"pending"`}},
		{name: "recallMessage", args: []string{"recallMessage", "-i", "<HANDLE>"}, contains: []string{`"msgId": "<TIMERMSGID>"`, c.broker}},
		{name: "deleteExpiredCommitLog", args: []string{"deleteExpiredCommitLog", "-b", c.broker}, contains: []string{c.broker}},
		{name: "cleanExpiredCQ", args: []string{"cleanExpiredCQ", "-c", "DefaultCluster"}, contains: []string{c.broker}},
		{name: "updateAclConfig", args: []string{"updateAclConfig", "-b", c.broker, "-a", "jsonuser1", "-s", "jsonsecret1", "-t", "JsonT=PUB"}, contains: []string{"jsonuser1", c.broker}},
		{name: "clusterAclConfigVersion", args: []string{"clusterAclConfigVersion", "-c", "DefaultCluster"}, contains: []string{aclFile, `"counter": 1`}},
		{name: "updateGlobalWhiteAddr", args: []string{"updateGlobalWhiteAddr", "-b", c.broker, "-g", "127.0.0.1,10.0.0.*"}, contains: []string{"10.0.0.*", c.broker}},
		{name: "deleteAclConfig", args: []string{"deleteAclConfig", "-b", c.broker, "-a", "jsonuser1"}, contains: []string{"jsonuser1", c.broker}},
		// ACL 2.0 (3001-3010): the broker keeps users and ACLs, checks off.
		{name: "createUser", args: []string{"createUser", "-b", c.broker, "-u", "jsonu2", "-p", "jsonpw2"}, contains: []string{"jsonu2", c.broker}},
		{name: "updateUser", args: []string{"updateUser", "-c", "DefaultCluster", "-u", "jsonu2", "-s", "disable"}, contains: []string{"jsonu2", c.broker}},
		{name: "getUser", args: []string{"getUser", "-b", c.broker, "-u", "jsonu2"}, contains: []string{`"password": "jsonpw2"`, `"userStatus": "disable"`}},
		{name: "listUser", args: []string{"listUser", "-c", "DefaultCluster", "-f", "json"}, contains: []string{"jsonu2", c.broker}},
		{name: "createAcl", args: []string{"createAcl", "-b", c.broker, "-s", "User:jsonu2", "-r", "Topic:JsonT,Group:JsonG", "-a", "Pub,Sub", "-d", "Allow", "-i", "10.0.0.0/8"}, contains: []string{"Topic:JsonT", c.broker}},
		{name: "updateAcl", args: []string{"updateAcl", "-b", c.broker, "-s", "User:jsonu2", "-r", "Topic:Other*", "-a", "Pub", "-d", "Deny"}, contains: []string{"Topic:Other*"}},
		{name: "getAcl", args: []string{"getAcl", "-b", c.broker, "-s", "User:jsonu2"}, contains: []string{"Topic:JsonT", "Group:JsonG", "Topic:Other*", "10.0.0.0/8"}},
		{name: "listAcl", args: []string{"listAcl", "-b", c.broker, "-r", "Group"}, contains: []string{"Group:JsonG"}},
		{name: "copyUser", args: []string{"copyUser", "-f", c.broker, "-t", c.broker, "-u", "jsonu2"}, contains: []string{"jsonu2"}},
		{name: "copyAcl", args: []string{"copyAcl", "-f", c.broker, "-t", c.broker, "-s", "User:jsonu2"}, contains: []string{"User:jsonu2"}},
		{name: "deleteAcl", args: []string{"deleteAcl", "-b", c.broker, "-s", "User:jsonu2", "-r", "Topic:Other*"}, contains: []string{c.broker}},
		{name: "deleteUser", args: []string{"deleteUser", "-b", c.broker, "-u", "jsonu2"}, contains: []string{c.broker}},
		{name: "deleteSubGroup", args: []string{"deleteSubGroup", "-c", "DefaultCluster", "-g", "JsonG"}, contains: []string{"JsonG", c.broker}},
		{name: "deleteTopic", args: []string{"deleteTopic", "-c", "DefaultCluster", "-t", "JsonT"}, contains: []string{"JsonT", "DefaultCluster"}},
		{name: "fastForward", args: []string{"fastForward", "-c", "DefaultCluster", "-d", "1s", "--access-key", "ffadmin", "--secret-key", "ffsecret1"}, contains: []string{c.broker, `"brokerTime"`}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.args[0]] = true
	}
	// The controller subcommands need a controller (getBrokerEpoch a broker in
	// controller mode): TestAdminControllerJSON runs their --json cases.
	for _, name := range controllerJSONCases {
		seen[name] = true
	}
	for _, tt := range tests {
		ok := t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before(t)
			}
			r := strings.NewReplacer("<QID>", strconv.Itoa(int(sent.QueueID)), "<MSGID>", sent.MsgID, "<OFFSETID>", sent.OffsetMsgID, "<HANDLE>", timerSent.RecallHandle, "<TIMERMSGID>", timerSent.MsgID)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = r.Replace(a)
			}
			code, out, errOut := c.runAdmin(t, append(args, "--json")...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d: %s\nstdout:\n%s", code, errOut, out)
			}
			vs, err := jsonValues(out)
			if err != nil || len(vs) == 0 {
				t.Fatalf("--json output is not JSON (%d values, %v):\n%s", len(vs), err, out)
			}
			for i, v := range vs {
				if b, _ := json.Marshal(v); bytes.Equal(b, []byte("{}")) || bytes.Equal(b, []byte("[]")) || bytes.Equal(b, []byte("null")) {
					t.Errorf("value %d of the output is empty: %s", i, b)
				}
			}
			for _, want := range tt.contains {
				if want = r.Replace(want); !strings.Contains(out, want) {
					t.Errorf("--json output lacks %q:\n%s", want, out)
				}
			}
			if tt.after != nil {
				tt.after(t, out)
			}
		})
		if !ok {
			break // later steps depend on this one
		}
	}
	// Every subcommand of `rmq admin` is covered.
	code, out, _ := runCLI(t, "admin", "--help")
	if code != 0 {
		t.Fatalf("admin --help: exit %d", code)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s{3,}([a-zA-Z]+)\s{2,}`).FindAllStringSubmatch(out, -1) {
		if name := m[1]; name != "help" && !seen[name] {
			t.Errorf("admin subcommand %s has no --json case", name)
		}
	}
	if len(seen) != 60 {
		t.Errorf("%d subcommands covered, want 60: %v", len(seen), seen)
	}
}
