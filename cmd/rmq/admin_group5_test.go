package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// The 5.3.3 batch and group subcommands end to end: updateTopicList and
// updateSubGroupList read mqadmin's JSON files (fields left out take the
// Java defaults) and print its lines; queryTopicsByConsumer,
// querySubscription and updateGroupForbidden show what the broker answers.
func TestAdminGroup5Commands(t *testing.T) {
	c := startAdminCluster(t)
	topics := writeFile(t, "topics.json", `[{"topicName":"ListT1","readQueueNums":2,"writeQueueNums":2,"perm":6},{"topicName":"ListT2","attributes":{"+message.type":"FIFO"}}]`)
	code, out, errOut := c.runAdmin(t, "updateTopicList", "-c", "DefaultCluster", "-f", topics)
	if code != 0 || out != "submit batch of topic config to "+c.broker+" success, please check the result later.\n" {
		t.Fatalf("updateTopicList: exit %d out %q err %q", code, out, errOut)
	}
	c.waitRoute(t, "ListT2")
	rd, err := c.adm.Route(context.Background(), "ListT1")
	if err != nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != 2 {
		t.Fatalf("route of ListT1: %+v %v", rd, err)
	}

	groups := writeFile(t, "groups.json", `[{"groupName":"ListG1","retryMaxTimes":3},{"groupName":"ListG2","consumeEnable":false}]`)
	code, out, errOut = c.runAdmin(t, "updateSubGroupList", "-b", c.broker, "-f", groups)
	if code != 0 || out != "submit batch of group config to "+c.broker+" success, please check the result later.\n" {
		t.Fatalf("updateSubGroupList: exit %d out %q err %q", code, out, errOut)
	}
	code, out, _ = c.runAdmin(t, "updateSubGroupList", "-b", c.broker, "-f", groups+".missing")
	if code != 0 || !strings.Contains(out, "does not exists") {
		t.Fatalf("missing file: exit %d out %q", code, out)
	}
	code, _, errOut = c.runAdmin(t, "updateTopicList", "-b", c.broker, "-f", writeFile(t, "bad.json", `[{"topicName":"bad/name"}]`))
	if code == 0 || !strings.Contains(errOut, "The specified topic contains illegal characters") {
		t.Fatalf("bad topic: exit %d err %q", code, errOut)
	}

	cli := newFakeConsumer(t, "ListT1")
	joinGroup(t, c, cli, "ListG1", "ListT1")
	code, out, errOut = c.runAdmin(t, "queryTopicsByConsumer", "-g", "ListG1")
	if code != 0 || out != "ListT1\n" {
		t.Fatalf("queryTopicsByConsumer: exit %d out %q err %q", code, out, errOut)
	}
	code, out, errOut = c.runAdmin(t, "querySubscription", "-g", "ListG1", "-t", "ListT1", "--json")
	if code != 0 || !strings.Contains(out, `"subString": "*"`) {
		t.Fatalf("querySubscription: exit %d out %q err %q", code, out, errOut)
	}
	code, out, _ = c.runAdmin(t, "querySubscription", "-g", "ListG1", "-t", "ListT2")
	if code != 0 || out != "no subscription\n" {
		t.Fatalf("querySubscription of another topic: exit %d out %q", code, out)
	}
	for _, step := range []struct {
		args []string
		want string
	}{
		{nil, "readable=true"},
		{[]string{"-r", "false"}, "readable=false"},
		{nil, "readable=false"},
		{[]string{"-r", "true"}, "readable=true"},
	} {
		code, out, errOut = c.runAdmin(t, append([]string{"updateGroupForbidden", "-b", c.broker, "-g", "ListG1", "-t", "ListT1"}, step.args...)...)
		if code != 0 || out != "group=ListG1 topic=ListT1 "+step.want+"\n" {
			t.Fatalf("updateGroupForbidden %v: exit %d out %q err %q", step.args, code, out, errOut)
		}
	}
}

// A read ban from UPDATE_AND_GET_GROUP_FORBIDDEN refuses the online group's
// pulls without the subscription flag (the stock push consumer's 4.x pulls
// carry it; the lite pull and the admin paths do not), with the stock remark.
func TestPullRefusedWhileGroupForbidden(t *testing.T) {
	c := startAdminCluster(t)
	ctx := context.Background()
	if _, err := c.adm.UpdateTopicList(ctx, c.broker, "", []*topicgroup.TopicConfig{topicgroup.NewTopicConfig("BanT")}); err != nil {
		t.Fatal(err)
	}
	c.waitRoute(t, "BanT")
	cli := newFakeConsumer(t, "BanT")
	joinGroup(t, c, cli, "BanG", "BanT")
	pull := func(sysFlag string) *remoting.Command {
		t.Helper()
		req := remoting.NewRequest(remoting.PullMessage, map[string]string{"consumerGroup": "BanG", "topic": "BanT", "queueId": "0",
			"queueOffset": "0", "maxMsgNums": "1", "sysFlag": sysFlag, "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}, nil)
		resp, err := cli.InvokeTimeout(c.broker, req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := pull("0"); resp.Code == remoting.NoPermission {
		t.Fatalf("pull before the ban: %d %q", resp.Code, resp.Remark)
	}
	ban := func(readable bool) {
		t.Helper()
		if gf, err := c.adm.UpdateGroupForbidden(ctx, c.broker, "BanG", "BanT", &readable); err != nil || gf.Readable != readable {
			t.Fatalf("updateGroupForbidden readable=%t: %+v %v", readable, gf, err)
		}
	}
	ban(false)
	if resp := pull("0"); resp.Code != remoting.NoPermission || resp.Remark != "the consumer group[BanG] is forbidden for topic[BanT]" {
		t.Fatalf("pull while banned: %d %q", resp.Code, resp.Remark)
	}
	ban(true)
	if resp := pull("0"); resp.Code == remoting.NoPermission {
		t.Fatalf("pull after the ban: %d %q", resp.Code, resp.Remark)
	}
}
