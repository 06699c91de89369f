package metrics

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// The traffic both the Java oracle (TestJavaMetricsOracle) and the unit test
// against the checked-in scrape (TestServesEveryJavaMetric) drive, so that
// the lazily created 5.x instruments (counters and histograms appear with
// their first record) show up on either broker: a topic and a group created
// by the admin requests, a producer and a consumer heartbeat, sends, a pull,
// a committed offset, a send back into the DLQ, a delay-level and a timer
// message, a committed and a rolled back transaction, a pop with its ack.
const (
	trafficTopic    = "MetricsT"
	trafficGroup    = "MetricsG"
	trafficPopGroup = "MetricsPopG"
	trafficBroker   = "broker-a" // brokerName of both brokers
)

func trafficProps(kv ...string) string {
	return brokertest.Props(append([]string{"TAGS", "a"}, kv...)...)
}

func mustCode(t testing.TB, what string, resp *remoting.Command, code int32) *remoting.Command {
	t.Helper()
	if resp.Code != code {
		t.Fatalf("%s: code %d %q, want %d", what, resp.Code, resp.Remark, code)
	}
	return resp
}

// driveTraffic runs the traffic against the broker c talks to; now is the
// broker's clock (timer deadlines and born times).
// tick runs while the driver waits for a delivery (the rmq test advances
// its manual clock there).
func driveTraffic(t testing.TB, c *brokertest.Client, now func() time.Time, tick func()) {
	t.Helper()
	mustCode(t, "create topic", c.Invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt(trafficTopic, 4, 6, "SINGLE_TAG"), nil), remoting.Success)
	for _, g := range []string{trafficGroup, trafficPopGroup} {
		body := []byte(`{"groupName":"` + g + `","consumeEnable":true,"consumeFromMinEnable":true,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1}`)
		mustCode(t, "create group "+g, c.Invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, body), remoting.Success)
	}
	hb := remoting.HeartbeatData{ClientID: "127.0.0.1@metrics", ProducerDataSet: []*remoting.ProducerData{{GroupName: "PG"}},
		ConsumerDataSet: []*remoting.ConsumerData{{
			GroupName: trafficGroup, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
			SubscriptionDataSet: []*remoting.SubscriptionData{{Topic: trafficTopic, SubString: "*", ExpressionType: "TAG", SubVersion: 1}},
		}}}
	mustCode(t, "heartbeat", c.Invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), remoting.Success)

	var sent []*remoting.Command
	for i := range 3 {
		sent = append(sent, c.MustSend(brokertest.Send{Topic: trafficTopic, QueueID: 0, Body: []byte("body-" + strconv.Itoa(i)), Props: trafficProps()}))
	}
	// Delay level 1 (1 s) and a timer message due in 1 s, on queue 1.
	c.MustSend(brokertest.Send{Topic: trafficTopic, QueueID: 1, Body: []byte("delayed"), Props: trafficProps("DELAY", "1")})
	due := now().Add(time.Second).UnixMilli()
	c.MustSend(brokertest.Send{Topic: trafficTopic, QueueID: 1, Body: []byte("timed"), Props: trafficProps("TIMER_DELIVER_MS", strconv.FormatInt(due, 10))})
	// Two transactions on queue 2: one committed, one rolled back.
	for i, decision := range []int32{message.TransactionCommitType, message.TransactionRollbackType} {
		uniq := fmt.Sprintf("MetricsTx%d-%d", i, now().UnixNano())
		half := c.MustSend(brokertest.Send{Topic: trafficTopic, QueueID: 2, Body: []byte("tx"), SysFlag: message.TransactionPreparedType,
			Props: trafficProps("TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", uniq)})
		_, phy, err := message.DecodeMessageID(half.ExtFields["msgId"])
		if err != nil {
			t.Fatalf("half msgId %q: %v", half.ExtFields["msgId"], err)
		}
		mustCode(t, "end transaction", c.Invoke(remoting.EndTransaction, map[string]string{
			"producerGroup": "PG", "tranStateTableOffset": half.ExtFields["queueOffset"],
			"commitLogOffset": strconv.FormatInt(phy, 10), "commitOrRollback": strconv.Itoa(int(decision)),
			"fromTransactionCheck": "false", "msgId": uniq,
		}, nil), remoting.Success)
	}

	// Pull two of queue 0 and commit one: lag, inflight and ready are all
	// non-zero. The first message goes back into the group's DLQ.
	waitMessages(t, c, trafficTopic, 0, 3, tick)
	pull := brokertest.Pull{Group: trafficGroup, Topic: trafficTopic, QueueID: 0, MaxMsgs: 2, SysFlag: 2 | 4, Subscription: "*", SubVersion: 1}
	mustCode(t, "pull", c.Pull(pull), remoting.Success)
	mustCode(t, "commit offset", c.Invoke(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": trafficGroup, "topic": trafficTopic, "queueId": "0", "commitOffset": "1"}, nil), remoting.Success)
	_, off, err := message.DecodeMessageID(sent[0].ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	mustCode(t, "send back to DLQ", c.Invoke(remoting.ConsumerSendMsgBack, map[string]string{
		"offset": strconv.FormatInt(off, 10), "group": trafficGroup, "delayLevel": "-1",
		"originMsgId": sent[0].ExtFields["msgId"], "originTopic": trafficTopic, "maxReconsumeTimes": "16"}, nil), remoting.Success)

	// Pop queue 3 and ack what came: checkpoints and acks go to the revive topic.
	c.MustSend(brokertest.Send{Topic: trafficTopic, QueueID: 3, Body: []byte("popped"), Props: trafficProps()})
	waitMessages(t, c, trafficTopic, 3, 1, tick)
	popResp := mustCode(t, "pop", c.Invoke(remoting.PopMessage, map[string]string{
		"consumerGroup": trafficPopGroup, "topic": trafficTopic, "queueId": "3", "maxMsgNums": "1",
		"invisibleTime": "60000", "pollTime": "0", "bornTime": strconv.FormatInt(now().UnixMilli(), 10), "initMode": "0",
	}, nil), remoting.Success)
	for _, m := range brokertest.Records(t, popResp.Body) {
		handle := strings.Join([]string{strconv.FormatInt(m.QueueOffset, 10), popResp.ExtFields["popTime"], popResp.ExtFields["invisibleTime"],
			popResp.ExtFields["reviveQid"], "0", trafficBroker, "3", strconv.FormatInt(m.QueueOffset, 10)}, " ")
		if ck := m.Properties["POP_CK"]; ck != "" {
			handle = ck
		}
		mustCode(t, "ack", c.Invoke(remoting.AckMessage, map[string]string{
			"consumerGroup": trafficPopGroup, "topic": trafficTopic, "queueId": "3",
			"extraInfo": handle, "offset": strconv.FormatInt(m.QueueOffset, 10)}, nil), remoting.Success)
	}

	// The delay-level and timer messages reach queue 1 of the topic.
	waitMessages(t, c, trafficTopic, 1, 2, tick)
}

// waitMessages polls GET_MAX_OFFSET until queue holds n messages.
func waitMessages(t testing.TB, c *brokertest.Client, topic string, queue, n int, tick func()) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		tick()
		resp := c.Invoke(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}, nil)
		v, err := strconv.Atoi(resp.ExtFields["offset"])
		return resp.Code == remoting.Success && err == nil && v >= n
	}, fmt.Sprintf("%d messages in %s/%d", n, topic, queue))
}

// scrape reads url's text exposition as sorted, unique "name{label,...}"
// lines: every metric name with each set of label names its series carry.
// It parses the sample lines itself: the 1.29 OpenTelemetry exporter writes
// "# TYPE target info" and TYPE lines without the unit suffix, which
// stricter parsers refuse.
func scrape(t testing.TB, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	lines, err := labelSets(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return lines
}

func labelSets(r io.Reader) ([]string, error) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		sort.Strings(labels)
		seen[name+"{"+strings.Join(labels, ",")+"}"] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// parseSample splits `name{k="v",...} value` into the name and label names.
func parseSample(line string) (string, []string, error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, fmt.Errorf("sample line %q", line)
	}
	name := line[:i]
	if line[i] == ' ' {
		return name, nil, nil
	}
	var labels []string
	rest := line[i+1:]
	for {
		rest = strings.TrimLeft(rest, ", ")
		if strings.HasPrefix(rest, "}") {
			return name, labels, nil
		}
		eq := strings.Index(rest, `="`)
		if eq <= 0 {
			return "", nil, fmt.Errorf("labels of %q", line)
		}
		labels = append(labels, rest[:eq])
		rest = rest[eq+2:]
		// Skip the quoted value, honouring backslash escapes.
		j := 0
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' {
				j++
			}
		}
		if j >= len(rest) {
			return "", nil, fmt.Errorf("unterminated label value in %q", line)
		}
		rest = rest[j+1:]
	}
}

// missing lists the lines of want not in have.
func missing(want, have []string) []string {
	h := make(map[string]bool, len(have))
	for _, l := range have {
		h[l] = true
	}
	var out []string
	for _, l := range want {
		if !h[l] {
			out = append(out, l)
		}
	}
	return out
}
