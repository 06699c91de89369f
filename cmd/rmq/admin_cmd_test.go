package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// adminCluster is an in-process name server and broker for the admin and
// bench CLI tests.
type adminCluster struct {
	ns     string
	broker string
	adm    *admin.Admin
}

func startAdminCluster(t *testing.T) *adminCluster {
	t.Helper()
	return startAdminClusterWith(t, nil)
}

// startAdminClusterWith is startAdminCluster with more broker options.
func startAdminClusterWith(t *testing.T, mutate func(*broker.Options)) *adminCluster {
	t.Helper()
	tc := testbroker.StartCluster(t, func(o *broker.Options) {
		o.MaxMessageSize = 256 << 10
		if mutate != nil {
			mutate(o)
		}
	})
	c := &adminCluster{ns: tc.NamesrvAddr(), broker: tc.BrokerAddr(), adm: admin.New(admin.Options{NamesrvAddr: tc.NamesrvAddr()})}
	t.Cleanup(c.adm.Close)
	return c
}

// waitRoute polls until the name server routes topic.
func (c *adminCluster) waitRoute(t *testing.T, topic string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		_, err := c.adm.Route(context.Background(), topic)
		return err == nil
	}, "a route for "+topic)
}

// waitDispatched polls until the topic's queues hold n messages in all:
// the store dispatches to consume queues after the send is answered.
func (c *adminCluster) waitDispatched(t *testing.T, topic string, n int64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		rows, err := c.adm.TopicStatus(context.Background(), topic)
		var total int64
		for _, r := range rows {
			total += r.MaxOffset - r.MinOffset
		}
		return err == nil && total >= n
	}, fmt.Sprintf("%d messages on %s", n, topic))
}

// masker replaces the volatile parts of admin output with placeholders.
type masker struct {
	repl    []string // literal old, new pairs
	regexes []struct {
		re  *regexp.Regexp
		new string
	}
}

func newMasker(c *adminCluster, extra ...string) *masker {
	m := &masker{repl: append([]string{c.ns, "<NS>", c.broker, "<BROKER>"}, extra...)}
	for _, r := range [][2]string{
		{`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d{3})?`, "<TIME>"},
		{`\b[0-9A-F]{32}\b`, "<ID>"},
		{`127\.0\.0\.1:\d+`, "<HOST>"},
		{`(Timestamp=)\d+`, "${1}<MS>"},
		{`(Timestamp":)\d+`, "${1}<MS>"},
	} {
		m.regexes = append(m.regexes, struct {
			re  *regexp.Regexp
			new string
		}{regexp.MustCompile(r[0]), r[1]})
	}
	return m
}

func (m *masker) mask(s string) string {
	s = strings.NewReplacer(m.repl...).Replace(s)
	for _, r := range m.regexes {
		s = r.re.ReplaceAllString(s, r.new)
	}
	return s
}

// runAdmin runs `rmq admin <args> -n <ns>`.
func (c *adminCluster) runAdmin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, append(append([]string{"admin"}, args...), "-n", c.ns)...)
}

// newFakeConsumer is a consumer client that answers the running-info
// request the broker forwards for consumerProgress -s: it consumes queues 0
// and 1 of topic. It stays connected until the test ends.
func newFakeConsumer(t *testing.T, topic string) *remoting.Client {
	cli := remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		if req.Code != remoting.GetConsumerRunningInfo {
			return nil
		}
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"` + topic + `"}:{"commitOffset":0},{"brokerName":"broker-a","queueId":1,"topic":"` + topic + `"}:{"commitOffset":1}},"properties":{}}`)
		return resp
	}})
	t.Cleanup(cli.Close)
	return cli
}

// joinGroup makes cli a member of group subscribed to topic (heartbeat) and
// commits offset 1 on queue 1.
func joinGroup(t *testing.T, c *adminCluster, cli *remoting.Client, group, topic string) {
	t.Helper()
	hb := remoting.HeartbeatData{ClientID: "127.0.0.1@admin-test", ConsumerDataSet: []*remoting.ConsumerData{{
		GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		SubscriptionDataSet: []*remoting.SubscriptionData{{Topic: topic, SubString: "*", ExpressionType: "TAG", TagsSet: []string{}, CodeSet: []remoting.FlexInt64{}}},
	}}}
	for _, req := range []*remoting.Command{
		remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)),
		remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "1", "commitOffset": "1"}, nil),
	} {
		resp, err := cli.InvokeTimeout(c.broker, req, 5*time.Second)
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("consumer request %d: %v %v", req.Code, resp, err)
		}
	}
	c.waitRoute(t, message.RetryTopic(group))
}

// linesWith keeps the lines of s containing any of subs.
func linesWith(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// trimLineEnds drops trailing blanks of every line: the stock layouts pad
// their last column.
func trimLineEnds(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// adminStep is one command of the scenario, run in order against the same
// cluster; want is the golden stdout after masking (and filtering, when
// filter is set); wantErr is a pattern stderr must match.
type adminStep struct {
	name     string
	args     []string
	before   func(t *testing.T)
	filter   []string
	wantCode int
	want     string
	wantErr  string
}

func TestAdminCommandsGolden(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // queryMsgById writes bodies under $TMPDIR/rocketmq/msgbodys
	c := startAdminCluster(t)
	m := newMasker(c, os.TempDir(), "<TMP>")
	var offsetID string
	consumer := newFakeConsumer(t, "AdminT")
	steps := []adminStep{
		{
			name: "clusterList",
			args: []string{"clusterList"},
			want: `#Cluster Name     #Broker Name            #BID  #Addr                  #Version                #InTPS(LOAD)       #OutTPS(LOAD) #PCWait(ms) #Hour #SPACE
DefaultCluster    broker-a                0     <BROKER>        V4_9_8 <STATS>
`,
		},
		{
			name: "clusterList -m",
			args: []string{"clusterList", "-m"},
			want: `#Cluster Name     #Broker Name                       #InTotalYest  #OutTotalYest  #InTotalToday #OutTotalToday
DefaultCluster    broker-a                                      0              0              0              0
`,
		},
		{
			name: "updateTopic on a cluster",
			args: []string{"updateTopic", "-c", "DefaultCluster", "-t", "AdminT", "-r", "2", "-w", "2"},
			want: `create topic to <BROKER> success.
TopicConfig [topicName=AdminT, readQueueNums=2, writeQueueNums=2, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]
`,
		},
		{
			name:   "updateTopic ordered on a broker",
			before: func(t *testing.T) { c.waitRoute(t, "AdminT") },
			args:   []string{"updateTopic", "-b", c.broker, "-t", "AdminO", "-w", "2", "-p", "4", "-o", "true"},
			want: `create topic to <BROKER> success.
set broker orderConf. isOrder=true, orderConf=[broker-a:2]
TopicConfig [topicName=AdminO, readQueueNums=8, writeQueueNums=2, perm=R--, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=true]
`,
		},
		{
			name:   "topicList",
			before: func(t *testing.T) { c.waitRoute(t, "AdminO") },
			args:   []string{"topicList"},
			filter: []string{"Admin", "TBW102"},
			want:   "AdminO\nAdminT\nTBW102",
		},
		{
			name:   "topicList -c",
			args:   []string{"topicList", "-c"},
			filter: []string{"#", "Admin"},
			want: `#Cluster Name         #Topic                                            #Consumer Group                                 
DefaultCluster        AdminO                                                                                                                
DefaultCluster        AdminT                                                                                                                `,
		},
		{
			name: "topicRoute",
			args: []string{"topicRoute", "-t", "AdminT"},
			want: `{
  "brokerDatas": [
    {
      "brokerAddrs": {
        "0": "<BROKER>"
      },
      "brokerName": "broker-a",
      "cluster": "DefaultCluster"
    }
  ],
  "filterServerTable": {},
  "queueDatas": [
    {
      "brokerName": "broker-a",
      "perm": 6,
      "readQueueNums": 2,
      "topicSysFlag": 0,
      "writeQueueNums": 2
    }
  ]
}
`,
		},
		{
			name: "topicRoute -l",
			args: []string{"topicRoute", "-t", "AdminT", "-l"},
			want: `#ClusterName                                  #BrokerName                      #BrokerAddrs                                       #ReadQueue #WriteQueue #Perm
DefaultCluster                                broker-a                         {0=<BROKER>}                                2          2           6
` + strings.Repeat("-", 158) + `
Total:                                        1                                                                                   2          2                
`,
		},
		{
			name: "sendMessage to a chosen queue",
			args: []string{"sendMessage", "-t", "AdminT", "-p", "hello", "-k", "k1 k2", "-c", "TagA", "-b", "broker-a", "-i", "1"},
			want: `#Broker Name                      #QID  #Send Result            #MsgId
broker-a                          1     SEND_OK                 <ID>
`,
		},
		{
			name:   "topicStatus",
			before: func(t *testing.T) { c.waitDispatched(t, "AdminT", 1) },
			args:   []string{"topicStatus", "-t", "AdminT"},
			want: `#Broker Name                      #QID  #Min Offset           #Max Offset             #Last Updated
broker-a                          0     0                     0                       
broker-a                          1     0                     1                       <TIME>
`,
		},
		{
			name: "queryMsgByKey",
			args: []string{"queryMsgByKey", "-t", "AdminT", "-k", "k2"},
			want: `#Message ID                                        #QID                                  #Offset
<ID>                      1                                        0
`,
		},
		{
			name: "consumeMessage",
			args: []string{"consumeMessage", "-t", "AdminT"},
			want: `Consume ok
MSGID: <ID> MessageExt [brokerName=broker-a, queueId=1, storeSize=187, queueOffset=0, sysFlag=0, bornTimestamp=<MS>, bornHost=/<HOST>, storeTimestamp=<MS>, storeHost=/<BROKER>, msgId=<ID>, commitLogOffset=0, bodyCRC=907060870, reconsumeTimes=0, preparedTransactionOffset=0, toString()=Message{topic='AdminT', flag=0, properties={CLUSTER=DefaultCluster, KEYS=k1 k2, MAX_OFFSET=1, MIN_OFFSET=0, TAGS=TagA, UNIQ_KEY=<ID>}, body=[104, 101, 108, 108, 111], transactionId='null'}] BODY: hello
`,
		},
		{
			name: "consumeMessage from one queue and offset",
			args: []string{"consumeMessage", "-t", "AdminT", "-b", "broker-a", "-i", "1", "-o", "5"},
			want: "MessageQueue [topic=AdminT, brokerName=broker-a, queueId=1] no matched msg, offset=5\n",
		},
		{
			name: "printMsg without bodies",
			args: []string{"printMsg", "-t", "AdminT", "-d", "false", "-s", "TagA || TagB"},
			want: `minOffset=0, maxOffset=0, MessageQueue [topic=AdminT, brokerName=broker-a, queueId=0]
--------------------------------------------------------
minOffset=0, maxOffset=1, MessageQueue [topic=AdminT, brokerName=broker-a, queueId=1]
MSGID: <ID> MessageExt [brokerName=broker-a, queueId=1, storeSize=187, queueOffset=0, sysFlag=0, bornTimestamp=<MS>, bornHost=/<HOST>, storeTimestamp=<MS>, storeHost=/<BROKER>, msgId=<ID>, commitLogOffset=0, bodyCRC=907060870, reconsumeTimes=0, preparedTransactionOffset=0, toString()=Message{topic='AdminT', flag=0, properties={CLUSTER=DefaultCluster, KEYS=k1 k2, MAX_OFFSET=1, MIN_OFFSET=0, TAGS=TagA, UNIQ_KEY=<ID>}, body=[104, 101, 108, 108, 111], transactionId='null'}] BODY: NOT PRINT BODY
--------------------------------------------------------
`,
		},
		{
			name: "printMsg filtered out by tag",
			args: []string{"printMsg", "-t", "AdminT", "-s", "TagB"},
			want: `minOffset=0, maxOffset=0, MessageQueue [topic=AdminT, brokerName=broker-a, queueId=0]
--------------------------------------------------------
minOffset=0, maxOffset=1, MessageQueue [topic=AdminT, brokerName=broker-a, queueId=1]
MessageQueue [topic=AdminT, brokerName=broker-a, queueId=1] no matched msg. status=NO_MATCHED_MSG, offset=1
--------------------------------------------------------
`,
		},
		{
			name: "queryMsgById without consumers",
			before: func(t *testing.T) {
				msgs, err := c.adm.QueryMessage(context.Background(), "AdminT", "k1", 64, 0, 1<<62, false)
				if err != nil || len(msgs) != 1 {
					t.Fatalf("query: %v %v", msgs, err)
				}
				offsetID = msgs[0].OffsetMsgID
			},
			args: []string{"queryMsgById", "-i", "<OFFSETID>"},
			want: `OffsetID:            <ID>
Topic:               AdminT
Tags:                [TagA]
Keys:                [k1 k2]
Queue ID:            1
Queue Offset:        0
CommitLog Offset:    0
Reconsume Times:     0
Born Timestamp:      <TIME>
Store Timestamp:     <TIME>
Born Host:           <HOST>
Store Host:          <BROKER>
System Flag:         0
Properties:          {CLUSTER=DefaultCluster, KEYS=k1 k2, TAGS=TagA, UNIQ_KEY=<ID>}
Message Body Path:   <TMP>/rocketmq/msgbodys/<ID>


WARN: No Consumer
`,
		},
		{
			name: "updateSubGroup",
			args: []string{"updateSubGroup", "-c", "DefaultCluster", "-g", "AdminG", "-r", "5", "-m", "true"},
			want: `create subscription group to <BROKER> success.
SubscriptionGroupConfig [groupName=AdminG, consumeEnable=true, consumeFromMinEnable=true, consumeBroadcastEnable=false, retryQueueNums=1, retryMaxTimes=5, brokerId=0, whichBrokerWhenConsumeSlowly=1, notifyConsumerIdsChangedEnable=true]
`,
		},
		{
			name:   "consumerConnection",
			before: func(t *testing.T) { joinGroup(t, c, consumer, "AdminG", "AdminT") },
			args:   []string{"consumerConnection", "-g", "AdminG"},
			want: `#ClientId                            #ClientAddr            #Language  #Version
127.0.0.1@admin-test                 <HOST>        GO         V4_9_8

Below is subscription:
#Topic               #SubExpression
AdminT               *

ConsumeType: CONSUME_PASSIVELY
MessageModel: CLUSTERING
ConsumeFromWhere: CONSUME_FROM_LAST_OFFSET
`,
		},
		{
			name: "consumerProgress -g",
			args: []string{"consumerProgress", "-g", "AdminG"},
			want: `#Topic                                                            #Broker Name                      #QID  #Broker Offset        #Consumer Offset      #Diff                 #LastTime
AdminT                                                            broker-a                          0     0                     0                     0                     N/A
AdminT                                                            broker-a                          1     1                     1                     0                     <TIME>

Consume TPS: 0.00
Diff Total: 0
`,
		},
		{
			name: "consumerProgress -g -s true",
			args: []string{"consumerProgress", "-g", "AdminG", "-s", "true"},
			want: `#Topic                                                            #Broker Name                      #QID  #Broker Offset        #Consumer Offset      #Client IP           #Diff                 #LastTime
AdminT                                                            broker-a                          0     0                     0                     127.0.0.1            0                     N/A
AdminT                                                            broker-a                          1     1                     1                     127.0.0.1            0                     <TIME>

Consume TPS: 0.00
Diff Total: 0
`,
		},
		{
			name:   "consumerProgress of every group",
			args:   []string{"consumerProgress"},
			filter: []string{"#", "AdminG"},
			want: `#Group                                                            #Count  #Version                 #Type  #Model          #TPS     #Diff Total
AdminG                                                            1       V4_9_8                   PUSH   CLUSTERING      0        0`,
		},
		{
			name:   "queryMsgById with a consumer",
			args:   []string{"queryMsgById", "-i", "<OFFSETID>"},
			filter: []string{"MessageTrack"},
			want:   "MessageTrack [consumerGroup=AdminG, trackType=CONSUMED, exceptionDesc=null]",
		},
		{
			name:   "getBrokerConfig",
			args:   []string{"getBrokerConfig", "-b", c.broker},
			filter: []string{"=====", "brokerName ", "brokerClusterName "},
			want: `============<BROKER>============
brokerClusterName                                 =  DefaultCluster
brokerName                                        =  broker-a`,
		},
		{
			name:   "getBrokerConfig of a cluster",
			args:   []string{"getBrokerConfig", "-c", "DefaultCluster"},
			filter: []string{"=====", "brokerName "},
			want: `============Master: <BROKER>============
brokerName                                        =  broker-a`,
		},
		{
			name: "updateBrokerConfig",
			args: []string{"updateBrokerConfig", "-b", c.broker, "-k", "brokerPermission", "-v", "6"},
			want: "update broker config success, <BROKER>\n",
		},
		{
			name:   "brokerStatus",
			args:   []string{"brokerStatus", "-b", c.broker},
			filter: []string{"brokerVersionDesc", "brokerVersion "},
			want:   "brokerVersion                   : 409\nbrokerVersionDesc               : V4_9_8",
		},
		{
			name:   "brokerStatus of a cluster",
			args:   []string{"brokerStatus", "-c", "DefaultCluster"},
			filter: []string{"brokerVersionDesc"},
			want:   "<BROKER>          brokerVersionDesc               : V4_9_8",
		},
		{
			name:     "recallMessage with a stale handle",
			args:     []string{"recallMessage", "-i", "djEgQWRtaW5UIGJyb2tlci1hIDEwMDAgQUJD"}, // v1 AdminT broker-a 1000 ABC
			wantCode: 1,
			wantErr:  `^rmq: recallMessage: broker <BROKER> answered RECALL_MESSAGE\(370\) with CODE \d+ \([A-Z_]+\) DESC: .+\n$`,
		},
		{
			name: "deleteSubGroup from a broker",
			args: []string{"deleteSubGroup", "-b", c.broker, "-g", "AdminG", "-r", "true"},
			want: "delete subscription group [AdminG] from broker [<BROKER>] success.\n",
		},
		{
			name: "deleteSubGroup from a cluster with its retry and DLQ topics",
			args: []string{"deleteSubGroup", "-c", "DefaultCluster", "-g", "AdminG"},
			want: `delete subscription group [AdminG] from broker [<BROKER>] in cluster [DefaultCluster] success.
delete topic [%RETRY%AdminG] from cluster [DefaultCluster] success.
delete topic [%RETRY%AdminG] from NameServer success.
delete topic [%DLQ%AdminG] from cluster [DefaultCluster] success.
delete topic [%DLQ%AdminG] from NameServer success.
`,
		},
		{
			name:     "consumerProgress of a deleted group",
			args:     []string{"consumerProgress", "-g", "AdminG"},
			wantCode: 1,
			wantErr:  `^rmq: consumerProgress: name server <NS> answered GET_ROUTEINFO_BY_TOPIC\(105\) with CODE 17 \(TOPIC_NOT_EXIST\) DESC: .*%RETRY%AdminG\n$`,
		},
		{
			name: "deleteTopic",
			args: []string{"deleteTopic", "-c", "DefaultCluster", "-t", "AdminO"},
			want: "delete topic [AdminO] from cluster [DefaultCluster] success.\ndelete topic [AdminO] from NameServer success.\n",
		},
		{
			name:     "topicRoute of a deleted topic",
			args:     []string{"topicRoute", "-t", "AdminO"},
			wantCode: 1,
			wantErr:  `^rmq: topicRoute: name server <NS> answered GET_ROUTEINFO_BY_TOPIC\(105\) with CODE 17 \(TOPIC_NOT_EXIST\) DESC: .*AdminO\n$`,
		},
		{
			name:     "updateTopic without -b or -c",
			args:     []string{"updateTopic", "-t", "X"},
			wantCode: 1,
			wantErr:  `^rmq: updateTopic: admin: bad arguments: one of -b \(broker address\) and -c \(cluster name\) is required\n$`,
		},
		{
			name:     "missing required flag",
			args:     []string{"queryMsgByKey", "-t", "AdminT"},
			filter:   []string{"USAGE:"},
			want:     "USAGE:",
			wantCode: 1,
			wantErr:  `Required flag "msgKey" not set`,
		},
		{
			name:     "sendMessage to a queue without a broker",
			args:     []string{"sendMessage", "-t", "AdminT", "-p", "x", "-i", "1"},
			wantCode: 1,
			wantErr:  `Broker name must be set if the queue is chosen!`,
		},
	}
	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before(t)
			}
			args := make([]string, len(st.args))
			for i, a := range st.args {
				args[i] = strings.ReplaceAll(a, "<OFFSETID>", offsetID)
			}
			code, out, errOut := c.runAdmin(t, args...)
			got := m.mask(out)
			if st.name == "clusterList" {
				got = regexp.MustCompile(`(V4_9_8) .*`).ReplaceAllString(got, "$1 <STATS>")
			}
			if st.filter != nil {
				got = linesWith(got, st.filter...)
			}
			if code != st.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, st.wantCode, out, errOut)
			}
			if got, want := trimLineEnds(got), trimLineEnds(st.want); got != want {
				t.Errorf("stdout (masked):\n%s\nwant:\n%s", got, want)
			}
			if st.wantErr != "" && !regexp.MustCompile(st.wantErr).MatchString(m.mask(errOut)) {
				t.Errorf("stderr (masked) %q does not match %q", m.mask(errOut), st.wantErr)
			}
			if st.wantErr == "" && errOut != "" {
				t.Errorf("unexpected stderr: %s", errOut)
			}
		})
		if !ok {
			break // later steps depend on this one
		}
	}
}

// TestAdminJSONOutput checks --json on a few commands: the output parses
// and carries the result fields.
func TestAdminJSONOutput(t *testing.T) {
	c := startAdminCluster(t)
	code, out, errOut := c.runAdmin(t, "sendMessage", "-t", "AdminJ", "-p", "x", "--json")
	if code != 0 {
		t.Fatalf("sendMessage: exit %d: %s", code, errOut)
	}
	var sent admin.SendResult
	if err := json.Unmarshal([]byte(out), &sent); err != nil || sent.Status != "SEND_OK" || len(sent.OffsetMsgID) != 32 || sent.BrokerName != "broker-a" {
		t.Fatalf("sendMessage --json = %s (%v)", out, err)
	}
	c.waitRoute(t, "AdminJ")
	// The broker answers a send once the commitlog holds it and builds the
	// consume queue entry afterwards (as the stock broker's reput does):
	// until then consumeMessage reads a max offset of 0 and prints nothing.
	c.waitDispatched(t, "AdminJ", 1)
	tests := []struct {
		name  string
		args  []string
		check func(v map[string]any) bool
	}{
		{name: "topicStatus", args: []string{"topicStatus", "-t", "AdminJ"}, check: func(v map[string]any) bool {
			qs, _ := v["queues"].([]any)
			return v["topic"] == "AdminJ" && len(qs) > 0
		}},
		{name: "topicList", args: []string{"topicList"}, check: func(v map[string]any) bool {
			return strings.Contains(fmt.Sprint(v["topicList"]), "AdminJ")
		}},
		{name: "clusterList", args: []string{"clusterList"}, check: func(v map[string]any) bool {
			bs, _ := v["brokers"].([]any)
			return len(bs) == 1 && bs[0].(map[string]any)["addr"] == c.broker
		}},
		{name: "consumeMessage", args: []string{"consumeMessage", "-t", "AdminJ"}, check: func(v map[string]any) bool {
			msg, _ := v["message"].(map[string]any)
			return v["brokerName"] == "broker-a" && msg["body"] == "x" && msg["offsetMsgId"] == sent.OffsetMsgID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := c.runAdmin(t, append(tt.args, "--json")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil || !tt.check(v) {
				t.Errorf("--json output %s (%v)", out, err)
			}
		})
	}
}

// TestAdminUnreachableBroker: a dead broker address fails with exit 1 and
// an error naming it.
func TestAdminUnreachableBroker(t *testing.T) {
	dead := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	code, out, errOut := runCLI(t, "admin", "brokerStatus", "-b", dead, "--timeout", "2s")
	if code != 1 || out != "" || !strings.Contains(errOut, "rmq: brokerStatus: broker "+dead) {
		t.Errorf("exit %d out %q err %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "admin", "topicList", "-n", "")
	if code != 1 || !strings.Contains(errOut, "no name server address") {
		t.Errorf("no name server: exit %d err %q", code, errOut)
	}
}

// --tls speaks TLS: a broker in enforcing mode answers only that, and the
// name server (permissive, the default) answers both.
func TestAdminTLS(t *testing.T) {
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.TLSServerMode = "enforcing" })
	code, out, errOut := runCLI(t, "admin", "brokerStatus", "-b", tc.BrokerAddr(), "--timeout", "3s", "--tls")
	if code != 0 || !strings.Contains(out, "brokerVersion") {
		t.Fatalf("brokerStatus --tls: exit %d out %q err %q", code, out, errOut)
	}
	code, _, _ = runCLI(t, "admin", "brokerStatus", "-b", tc.BrokerAddr(), "--timeout", "3s")
	if code == 0 {
		t.Fatal("plaintext brokerStatus answered by an enforcing broker")
	}
	code, out, errOut = runCLI(t, "admin", "clusterList", "-n", tc.NamesrvAddr(), "--tls")
	if code != 0 || !strings.Contains(out, tc.BrokerAddr()) {
		t.Fatalf("clusterList --tls: exit %d out %q err %q", code, out, errOut)
	}
	// topicList asks the name server only.
	code, out, errOut = runCLI(t, "admin", "topicList", "-n", tc.NamesrvAddr())
	if code != 0 || !strings.Contains(out, message.TopicAutoCreateKey) {
		t.Fatalf("plaintext topicList: exit %d out %q err %q", code, out, errOut)
	}
}
