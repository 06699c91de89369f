package broker

import (
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"rmq/internal/clock"
	"rmq/remoting"
)

// clientTestEnv is a broker with only the client-side managers (plus a topic
// table), served by a real remoting server so handlers get real connections.
type clientTestEnv struct {
	t     *testing.T
	b     *Broker
	clk   *clock.Manual
	dir   string
	addr  string
	procs map[int32]HandlerFunc
}

type clientTestOptions struct {
	autoCreateGroups bool
}

func newClientTestEnv(t *testing.T, o clientTestOptions) *clientTestEnv {
	t.Helper()
	log := zerolog.Nop()
	clk := clock.NewManual(clientTestEpoch)
	dir := t.TempDir()
	opts := DefaultOptions()
	topics, err := newTopicConfigManager(filepath.Join(dir, "topics.json"), topicConfigDefaults{
		clusterName: opts.BrokerClusterName, brokerName: opts.BrokerName,
		autoCreate: true, defaultQueueNums: opts.DefaultTopicQueueNums,
	}, clk.Now, log)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := NewConsumerOffsetManager(filepath.Join(dir, "consumerOffset.json"), log)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := newSubscriptionGroupManager(filepath.Join(dir, "subscriptionGroup.json"), o.autoCreateGroups, log, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{
		opts:      opts,
		log:       log,
		clock:     clk,
		topics:    topics,
		consumers: NewConsumerManagerClock(log, clk.Now),
		producers: NewProducerManagerClock(clk.Now),
		offsets:   offsets,
		subGroups: groups,
		locks:     NewRebalanceLockManagerClock(clk.Now),
		regKick:   make(chan struct{}, 1),
	}
	env := &clientTestEnv{t: t, b: b, clk: clk, dir: dir, procs: b.clientProcessors()}
	env.addr = clientTestFreeAddr(t)
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
func (e *clientTestEnv) ConnClosed(c *remoting.Conn) { e.b.clientConnClosed(c) }

func clientTestFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
