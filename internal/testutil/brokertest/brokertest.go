// Package brokertest sends requests to a broker under test: producer sends
// (V1 and V2 headers, batches), pulls and any other request, over one JSON
// and one ROCKETMQ-serialised client, and decodes what comes back. Serve
// runs the other side: a scripted fake name server or broker.
//
// It talks to the broker only over the wire and imports no broker package,
// so the tests of package broker and of its subpackages (which start a
// broker through package broker) can all use it.
package brokertest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Client sends requests to the broker at Addr and fails the test on
// transport errors. Every request is bounded by testutil.DefaultTimeout.
type Client struct {
	T    testing.TB
	Addr string
	JSON *remoting.Client // SerializeJSON headers
	Bin  *remoting.Client // SerializeRocketMQ headers
}

// NewClient returns a client of the broker at addr ("ip:port"); it closes
// with the test.
func NewClient(t testing.TB, addr string) *Client {
	c := &Client{
		T: t, Addr: addr,
		JSON: remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeJSON}),
		Bin:  remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ}),
	}
	t.Cleanup(c.Close)
	return c
}

// Close closes both clients; calling it again is harmless.
func (c *Client) Close() {
	c.JSON.Close()
	c.Bin.Close()
}

// Invoke sends a request with the JSON client.
func (c *Client) Invoke(code int32, ext map[string]string, body []byte) *remoting.Command {
	c.T.Helper()
	return c.InvokeWith(c.JSON, code, ext, body)
}

// InvokeWith sends a request with cli.
func (c *Client) InvokeWith(cli *remoting.Client, code int32, ext map[string]string, body []byte) *remoting.Command {
	c.T.Helper()
	resp, err := cli.InvokeTimeout(c.Addr, remoting.NewRequest(code, ext, body), testutil.DefaultTimeout)
	if err != nil {
		c.T.Fatalf("request %d: %v", code, err)
	}
	return resp
}

// Send describes one producer send of producer group "PG".
type Send struct {
	Code              int32 // SendMessage (V1 names) or SendMessageV2/SendBatchMessage/... (letters); 0 → SendMessageV2
	Topic             string
	Body              []byte
	Props             string // raw properties text (Props)
	QueueID           int32
	SysFlag           int32
	DefaultTopic      string // "" → TBW102
	DefaultQueueNums  int32  // 0 → 4
	ReconsumeTimes    string // "" → absent
	MaxReconsumeTimes string // "" → absent
	Batch             bool
	Drop              string // V1 name of a header field to leave out
}

// v2Letters maps SendMessageRequestHeader names to the one-letter names of
// SendMessageRequestHeaderV2.
var v2Letters = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
	"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
	"reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

// Ext is the request header of the send, in V1 or V2 names after its Code.
func (a Send) Ext() map[string]string {
	dt, dq := a.DefaultTopic, a.DefaultQueueNums
	if dt == "" {
		dt = message.TopicAutoCreateKey
	}
	if dq == 0 {
		dq = 4
	}
	v1 := map[string]string{
		"producerGroup": "PG", "topic": a.Topic, "defaultTopic": dt,
		"defaultTopicQueueNums": strconv.Itoa(int(dq)), "queueId": strconv.Itoa(int(a.QueueID)),
		"sysFlag": strconv.Itoa(int(a.SysFlag)), "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "7", "properties": a.Props, "unitMode": "false", "batch": strconv.FormatBool(a.Batch),
	}
	if a.ReconsumeTimes != "" {
		v1["reconsumeTimes"] = a.ReconsumeTimes
	}
	if a.MaxReconsumeTimes != "" {
		v1["maxReconsumeTimes"] = a.MaxReconsumeTimes
	}
	delete(v1, a.Drop)
	if a.Code == remoting.SendMessage || a.Code == remoting.SendReplyMessage {
		return v1
	}
	v2 := make(map[string]string, len(v1))
	for k, v := range v1 {
		v2[v2Letters[k]] = v
	}
	return v2
}

// Send sends a message.
func (c *Client) Send(a Send) *remoting.Command {
	c.T.Helper()
	if a.Code == 0 {
		a.Code = remoting.SendMessageV2
	}
	return c.Invoke(a.Code, a.Ext(), a.Body)
}

// MustSend sends and requires SUCCESS.
func (c *Client) MustSend(a Send) *remoting.Command {
	c.T.Helper()
	resp := c.Send(a)
	if resp.Code != remoting.Success {
		c.T.Fatalf("send to %s: code %d remark %q", a.Topic, resp.Code, resp.Remark)
	}
	return resp
}

// Pull describes one PULL_MESSAGE request.
type Pull struct {
	Group         string // "" → CG
	Topic         string
	QueueID       int32
	Offset        int64
	MaxMsgs       int32 // 0 → 32
	SysFlag       int32
	CommitOffset  int64
	SuspendMillis int64
	Subscription  string
	SubVersion    int64
	// ExpressionType is "" (TAG) or e.g. "SQL92".
	ExpressionType string
}

// Ext is the request header of the pull.
func (a Pull) Ext() map[string]string {
	if a.Group == "" {
		a.Group = "CG"
	}
	if a.MaxMsgs == 0 {
		a.MaxMsgs = 32
	}
	if a.ExpressionType == "" {
		a.ExpressionType = "TAG"
	}
	return map[string]string{
		"consumerGroup": a.Group, "topic": a.Topic, "queueId": strconv.Itoa(int(a.QueueID)),
		"queueOffset": strconv.FormatInt(a.Offset, 10), "maxMsgNums": strconv.Itoa(int(a.MaxMsgs)),
		"sysFlag": strconv.Itoa(int(a.SysFlag)), "commitOffset": strconv.FormatInt(a.CommitOffset, 10),
		"suspendTimeoutMillis": strconv.FormatInt(a.SuspendMillis, 10), "subscription": a.Subscription,
		"subVersion": strconv.FormatInt(a.SubVersion, 10), "expressionType": a.ExpressionType,
	}
}

// Pull sends a pull.
func (c *Client) Pull(a Pull) *remoting.Command {
	c.T.Helper()
	return c.Invoke(remoting.PullMessage, a.Ext(), nil)
}

// Records decodes a pull, view or query body.
func Records(t testing.TB, body []byte) []*message.MessageExt {
	t.Helper()
	msgs, err := message.DecodeRecords(body)
	if err != nil {
		t.Fatalf("decode records: %v", err)
	}
	return msgs
}

// ExtInt reads an integer header field of a response.
func ExtInt(t testing.TB, resp *remoting.Command, key string) int64 {
	t.Helper()
	v, ok := resp.ExtFields[key]
	if !ok {
		t.Fatalf("response (code %d) has no %q: %v", resp.Code, key, resp.ExtFields)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return n
}

// Props renders properties Java-style (k\x01v pairs joined by \x02).
func Props(kv ...string) string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return message.MarshalProperties(m)
}

// CreateTopicExt is an UPDATE_AND_CREATE_TOPIC header: queues read and
// write queues, perm, the filter type, not ordered.
func CreateTopicExt(topic string, queues int, perm int, filter string) map[string]string {
	return map[string]string{
		"topic": topic, "defaultTopic": message.TopicAutoCreateKey, "readQueueNums": strconv.Itoa(queues),
		"writeQueueNums": strconv.Itoa(queues), "perm": strconv.Itoa(perm), "topicFilterType": filter,
		"topicSysFlag": "0", "order": "false",
	}
}

// Serve serves h on addr (testutil.FreeAddr) until the test ends: a fake name
// server or broker whose answers the test scripts.
func Serve(t testing.TB, addr string, h remoting.Handler) {
	t.Helper()
	srv, err := remoting.NewServer(h, remoting.ServerOptions{Addrs: []string{addr}})
	if err != nil {
		t.Fatalf("brokertest: NewServer: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("brokertest: Start: %v", err)
	}
	t.Cleanup(srv.Stop)
}

// TxProducer is a connection that heartbeats as a producer of a group and
// records the CHECK_TRANSACTION_STATE requests a broker sends it.
type TxProducer struct {
	Cl     *remoting.Client
	mu     sync.Mutex
	checks []*remoting.Command
}

// ConnectTxProducer connects to the broker at addr as a producer of group
// (one HEART_BEAT); the connection closes with the test. id tells several
// producers of a group apart.
func ConnectTxProducer(t testing.TB, addr, group, id string) *TxProducer {
	t.Helper()
	p := &TxProducer{}
	p.Cl = remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.CheckTransactionState {
			p.mu.Lock()
			p.checks = append(p.checks, req)
			p.mu.Unlock()
		}
		return nil
	}})
	t.Cleanup(p.Cl.Close)
	hb := remoting.HeartbeatData{ClientID: "prod-" + group + "-" + id, ProducerDataSet: []*remoting.ProducerData{{GroupName: group}}}
	resp, err := p.Cl.InvokeTimeout(addr, remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), testutil.DefaultTimeout)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("producer heartbeat: %v %v", err, resp)
	}
	return p
}

// Received returns the checks received so far.
func (p *TxProducer) Received() []*remoting.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*remoting.Command(nil), p.checks...)
}
