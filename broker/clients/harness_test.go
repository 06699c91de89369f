package clients

import (
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// clientTestEnv is the client service (over a topic table of its own),
// served by a real remoting server so handlers get real connections.
type clientTestEnv struct {
	t      *testing.T
	s      *Service
	topics *clTopics
	clk    *clock.Manual
	dir    string
	addr   string
	procs  map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command
}

type clientTestOptions struct {
	autoCreateGroups bool
	// store opens a store before the server starts (withStore sets one on a
	// running service, which a handler that touches nothing else but the
	// store reads without a happens-before edge).
	store bool
	// notify is Options.Settings' NotifyConsumerIdsChanged (nil: always on).
	notify func() bool
}

// notifySettings are LiveSettings whose notifications follow a func and
// whose property filter is off.
type notifySettings func() bool

func (n notifySettings) PropertyFilterEnabled() bool    { return false }
func (n notifySettings) NotifyConsumerIdsChanged() bool { return n() }

func newClientTestEnv(t *testing.T, o clientTestOptions) *clientTestEnv {
	t.Helper()
	log := zerolog.Nop()
	clk := clock.NewManual(clientTestEpoch)
	dir := t.TempDir()
	topics := &clTopics{table: make(map[string]*topicgroup.TopicConfig)}
	var st *store.Store
	if o.store {
		st = storetest.TempStore(t, dir, func(so *store.Options) { so.Clock = clk })
	}
	var settings LiveSettings
	if o.notify != nil {
		settings = notifySettings(o.notify)
	}
	s, err := New(Options{
		ConfigDir: dir, AutoCreateSubscriptionGroup: o.autoCreateGroups, BrokerName: "broker-a",
		Topics: topics, Clock: clk, Logger: log, Store: st, Settings: settings,
	})
	if err != nil {
		t.Fatal(err)
	}
	env := &clientTestEnv{t: t, s: s, topics: topics, clk: clk, dir: dir, procs: s.Processors()}
	env.addr = testutil.FreeAddr(t)
	srv, err := remoting.NewServer(env, remoting.ServerOptions{Addrs: []string{env.addr}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return env
}

// ServeRemoting implements remoting.Handler over the client processors only.
func (e *clientTestEnv) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := e.procs[req.Code]
	if h == nil {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, "not a client request")
	}
	return h(c, req)
}

// ConnClosed implements remoting.ConnObserver.
func (e *clientTestEnv) ConnClosed(c *remoting.Conn) { e.s.ConnClosed(c) }

// clTopics is a topic table for the service's Topics: it counts the topics
// it created.
type clTopics struct {
	mu      sync.Mutex
	table   map[string]*topicgroup.TopicConfig
	created int
}

func (tt *clTopics) Get(topic string) *topicgroup.TopicConfig {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tc := tt.table[topic]; tc != nil {
		cp := *tc
		return &cp
	}
	return nil
}

func (tt *clTopics) CreateRetryTopic(group string, queueNums, perm int32) (*topicgroup.TopicConfig, bool) {
	return tt.create(message.RetryTopicPrefix+group, queueNums, perm)
}

func (tt *clTopics) create(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tc := tt.table[topic]; tc != nil {
		cp := *tc
		return &cp, false
	}
	tc := &topicgroup.TopicConfig{TopicName: topic, ReadQueueNums: queueNums, WriteQueueNums: queueNums, Perm: perm}
	tt.table[topic] = tc
	tt.created++
	cp := *tc
	return &cp, true
}

// clTestClient is one client connection; it records every request the broker
// sends it and may answer them.
type clTestClient struct {
	env *clientTestEnv
	id  string
	cl  *remoting.Client

	mu     sync.Mutex
	got    []*remoting.Command
	answer func(req *remoting.Command) *remoting.Command
}

func (e *clientTestEnv) client(id string) *clTestClient {
	tc := &clTestClient{env: e, id: id}
	tc.cl = remoting.NewClient(remoting.ClientOptions{OnRequest: func(_ string, req *remoting.Command) *remoting.Command {
		tc.mu.Lock()
		tc.got = append(tc.got, req)
		answer := tc.answer
		tc.mu.Unlock()
		if answer != nil {
			return answer(req)
		}
		return nil
	}})
	e.t.Cleanup(tc.cl.Close)
	return tc
}

func (tc *clTestClient) invoke(code int32, ext map[string]string, body []byte) *remoting.Command {
	tc.env.t.Helper()
	return tc.do(remoting.NewRequest(code, ext, body))
}

func (tc *clTestClient) do(req *remoting.Command) *remoting.Command {
	tc.env.t.Helper()
	resp, err := tc.cl.InvokeTimeout(tc.env.addr, req, 5*time.Second)
	if err != nil {
		tc.env.t.Fatalf("%s: request %d: %v", tc.id, req.Code, err)
	}
	return resp
}

// heartbeat sends a consumer heartbeat for each group, every group
// subscribing to topics with "*".
func (tc *clTestClient) heartbeat(groups []string, topics ...string) *remoting.Command {
	hb := remoting.HeartbeatData{ClientID: tc.id}
	for _, g := range groups {
		cd := clConsumerData(g)
		for _, t := range topics {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, clSub(t, 1, "*"))
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	}
	return tc.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb))
}

// notifications returns the NOTIFY_CONSUMER_IDS_CHANGED groups received so far.
func (tc *clTestClient) notifications() []string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []string
	for _, r := range tc.got {
		if r.Code == remoting.NotifyConsumerIdsChanged {
			out = append(out, r.ExtFields["consumerGroup"])
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func (e *clientTestEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	testutil.WaitFor(e.t, testutil.DefaultTimeout, cond, what)
}

func clCount(list []string, v string) int {
	n := 0
	for _, s := range list {
		if s == v {
			n++
		}
	}
	return n
}

func clExpectCode(t *testing.T, resp *remoting.Command, code int32, remark string) {
	t.Helper()
	if resp.Code != code || (remark != "" && resp.Remark != remark) {
		t.Fatalf("response code %d remark %q, want %d %q", resp.Code, resp.Remark, code, remark)
	}
}
