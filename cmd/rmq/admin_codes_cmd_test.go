package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// statusConsumer is a consumer client of group on topic's queue 0 that
// answers GET_CONSUMER_STATUS_FROM_CLIENT and records the offset resets the
// broker pushes.
type statusConsumer struct {
	cli    *remoting.Client
	mu     sync.Mutex
	resets []*remoting.Command
}

func newStatusConsumer(t *testing.T, topic string) *statusConsumer {
	sc := &statusConsumer{}
	sc.cli = remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		switch req.Code {
		case remoting.ResetConsumerClientOffset:
			sc.mu.Lock()
			sc.resets = append(sc.resets, req)
			sc.mu.Unlock()
			return nil
		case remoting.GetConsumerRunningInfo:
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = []byte(`{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"subscriptionSet":[{"topic":"` + topic +
				`","subString":"*","classFilterMode":false}],"mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"` + topic + `"}:{"commitOffset":3}}}`)
			return resp
		case remoting.GetConsumerStatusFromClient:
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = []byte(`{"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"` + topic + `"}:7}}`)
			return resp
		}
		return nil
	}})
	t.Cleanup(sc.cli.Close)
	return sc
}

func (sc *statusConsumer) resetCount() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.resets)
}

func TestAdminOffsetTraceAndConfigCommands(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	c := startAdminCluster(t)
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := c.runAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return trimLineEnds(out)
	}
	run("updateTopic", "-c", "DefaultCluster", "-t", "CodesT", "-r", "2", "-w", "2")
	c.waitRoute(t, "CodesT")
	var sent []*admin.SendResult
	for i := range 4 {
		res, err := c.adm.SendMessage(ctx, admin.SendMessageSpec{Topic: "CodesT", Body: []byte("m"), QueueID: int32(i % 2), BrokerName: "broker-a"})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res)
	}
	c.waitDispatched(t, "CodesT", 4)

	// resetOffsetByTime with the group online: the broker pushes the table.
	commit := func(cli *remoting.Client, group string, qid, offset int) {
		t.Helper()
		req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": "CodesT", "queueId": strconv.Itoa(qid), "commitOffset": strconv.Itoa(offset)}, nil)
		if resp, err := cli.InvokeTimeout(c.broker, req, 5*time.Second); err != nil || resp.Code != remoting.Success {
			t.Fatalf("commit: %v %v", resp, err)
		}
	}
	sc := newStatusConsumer(t, "CodesT")
	joinGroup(t, c, sc.cli, "CodesG", "CodesT")
	commit(sc.cli, "CodesG", 0, 1)
	out := run("resetOffsetByTime", "-g", "CodesG", "-t", "CodesT", "-s", "0")
	want := `rollback consumer offset by specified group[CodesG], topic[CodesT], force[true], timestamp(string)[0], timestamp(long)[0]
#brokerName                               #queueId                                  #offset
broker-a                                  0                                         0
broker-a                                  1                                         0
`
	if out != want {
		t.Fatalf("resetOffsetByTime:\n%s\nwant\n%s", out, want)
	}
	if sc.resetCount() == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for sc.resetCount() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if sc.resetCount() == 0 {
			t.Fatal("no RESET_CONSUMER_CLIENT_OFFSET reached the client")
		}
	}
	// A group that went offline: the old way (consume stats, search offset,
	// update offset).
	gone := remoting.NewClient(remoting.ClientOptions{})
	joinGroup(t, c, gone, "CodesOff", "CodesT")
	commit(gone, "CodesOff", 0, 0)
	gone.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := c.adm.ConsumerConnection(ctx, "CodesOff", c.broker); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CodesOff still online")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out = run("resetOffsetByTime", "-g", "CodesOff", "-t", "CodesT", "-s", "-1", "--json")
	if !strings.Contains(out, `"old": true`) || !strings.Contains(out, `"offset": 2`) {
		t.Fatalf("offline reset:\n%s", out)
	}

	// getConsumerStatus relays the client's offsets.
	out = run("getConsumerStatus", "-g", "CodesG", "-t", "CodesT")
	if !strings.Contains(out, "get consumer status from client. group=CodesG, topic=CodesT, originClientId=null") ||
		!strings.Contains(out, "127.0.0.1@admin-test                                broker-a         0                7") {
		t.Fatalf("getConsumerStatus:\n%s", out)
	}

	// consumerStatus lists the clients, and with -i shows one's running info.
	if out = run("consumerStatus", "-g", "CodesG"); out != "001  127.0.0.1@admin-test                     V4_9_8\n" {
		t.Fatalf("consumerStatus: %q", out)
	}
	out = run("consumerStatus", "-g", "CodesG", "-i", "127.0.0.1@admin-test")
	for _, s := range []string{"#Consumer Properties#", "PROP_CONSUME_TYPE", "001 Topic: CodesT", "#Consumer Offset#", "CodesT", "broker-a"} {
		if !strings.Contains(out, s) {
			t.Fatalf("consumerStatus -i lacks %q:\n%s", s, out)
		}
	}

	// cloneGroupOffset copies CodesG's offsets.
	out = run("cloneGroupOffset", "-s", "CodesG", "-d", "CodesG2", "-t", "CodesT", "-o", "true")
	if out != "clone group offset success. srcGroup[CodesG], destGroup=[CodesG2], topic[CodesT]" {
		t.Fatalf("cloneGroupOffset: %q", out)
	}

	// queryCq shows the units.
	out = run("queryCq", "-t", "CodesT", "-q", "0", "-i", "0", "-c", "5", "-g", "CodesG")
	for _, s := range []string{"Subscription data:", "Queue data:\nmax: 2, min: 0", "idx: 1\nConsumeQueueData{physicOffset="} {
		if !strings.Contains(out, s) {
			t.Fatalf("queryCq lacks %q:\n%s", s, out)
		}
	}

	// queryMsgByUniqueKey finds a message by its client id.
	out = run("queryMsgByUniqueKey", "-t", "CodesT", "-i", sent[0].MsgID)
	if !strings.Contains(out, sent[0].MsgID) || !strings.Contains(out, "CodesT") {
		t.Fatalf("queryMsgByUniqueKey:\n%s", out)
	}

	// queryMsgTraceById reads trace records keyed by the message id.
	id := sent[1].MsgID
	pub := strings.Join([]string{"Pub", "1700000000000", "DefaultRegion", "PG", "CodesT", id, "tag", "", c.broker, "1", "3", "0", sent[1].OffsetMsgID, "true"}, "\x01") + "\x02"
	sub := strings.Join([]string{"SubAfter", "req-1", id, "5", "true", "", "0", "1700000000100", "CodesG"}, "\x01") + "\x02"
	other := strings.Join([]string{"SubAfter", "req-2", "ANOTHER", "5", "true", "", "0", "1700000000100", "CodesG"}, "\x01") + "\x02"
	if _, err := c.adm.SendMessage(ctx, admin.SendMessageSpec{Topic: message.TopicTrace, Body: []byte(pub + sub + other), Keys: id, QueueID: -1}); err != nil {
		t.Fatal(err)
	}
	c.waitDispatched(t, message.TopicTrace, 1)
	out = run("queryMsgTraceById", "-i", id)
	if strings.Count(out, "#Type") != 2 || !strings.Contains(out, "Pub        PG") || !strings.Contains(out, "Sub        CodesG") || !strings.Contains(out, "3ms") {
		t.Fatalf("queryMsgTraceById:\n%s", out)
	}

	// getNamesrvConfig / updateNamesrvConfig.
	if out = run("getNamesrvConfig"); !strings.Contains(out, "orderMessageEnable                                =  false") {
		t.Fatalf("getNamesrvConfig:\n%s", out)
	}
	run("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
	if out = run("getNamesrvConfig"); !strings.Contains(out, "orderMessageEnable                                =  true") {
		t.Fatalf("getNamesrvConfig after the update:\n%s", out)
	}
	code, _, errOut := c.runAdmin(t, "updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x")
	if code == 0 || !strings.Contains(errOut, "Can not update config in black list.") {
		t.Fatalf("black-listed key: exit %d %s", code, errOut)
	}
}
