package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// Issue 45: the Python and Node.js 5.x SDKs (integration/sdk5/{python/cluster.py,node/cluster.js}, installed by
// integration/sdk5/run.sh) against a cluster of two rmq brokers, each its own process, so that one can be
// killed with SIGKILL as in a crash:
//
//	rmq namesrv 127.0.0.1:NP
//	broker A  127.0.0.2:BP  gRPC 127.0.0.2:G
//	broker B  127.0.0.3:BP' gRPC 127.0.0.3:G   (one gRPC port: the stock proxy's routes assume it)
//
// The SDK is given one broker's endpoint; the gRPC routes list both brokers, each at its own endpoint, so the
// producer's messages land on both and the SimpleConsumer receives them from both. Then a broker is killed:
// the name server drops it as its connection closes (not at the 120 s expiry), the producer and consumer go on
// at once (sends after the kill stored on the survivor and received), and the gRPC routes the survivor serves
// lose the killed broker's queues at their cache's next reload (within 20 s, as the stock proxy's). The "own endpoint" variant (Python: see below for Node.js) gives the SDK both endpoints ("a;b")
// and kills the first, the one its access-point channel (gRPC pick-first over both) connects to, so that route
// queries move to the other: a producer started after the kill gets its route and sends.

const (
	// sdk5ClusterCount is how many messages a phase sends: the producers pick queues round-robin from a
	// random start, so both brokers get some.
	sdk5ClusterCount = 30
	// sdk5ClusterQueues is the topic's queue count on each broker.
	sdk5ClusterQueues = 4
	// sdk5ClusterMinPollMs is the brokers' grpcClientConsumerMinLongPollingTimeoutMillis (stock 5 s), below the
	// programs' 1 s receive wait. A receive takes messages from every queue of one broker (the stock
	// ReceiveMessageQueueSelector pops queue -1 of the request's broker, and so does rmq), and the Python
	// SimpleConsumer (5.1.2) picks that broker at random for every receive (it builds a new round-robin selector
	// with a random start each time), so after one broker's messages are taken it may long-poll it, empty,
	// several times before it asks the other: at 5 s a poll a phase took up to 25 s.
	sdk5ClusterMinPollMs = 500
	// sdk5ClusterPhase bounds a phase as the test waits for it: the program's own 50 s, and a cold start.
	sdk5ClusterPhase = 75 * time.Second
	// sdk5ClusterRouteDrop bounds how long the killed broker may stay in the name server's route: it drops a
	// broker the moment its connection closes, which the kernel does for a killed process.
	sdk5ClusterRouteDrop = 10 * time.Second
	// sdk5ClusterGRPCRouteDrop bounds, from the kill, how long the gRPC route still lists the killed broker:
	// the endpoint's route cache reloads from the name server every 20 s (grpcapi routeRefresh).
	sdk5ClusterGRPCRouteDrop = 30 * time.Second
)

// sdk5ClusterPrograms are the cluster programs of each SDK.
var sdk5ClusterPrograms = map[string]sdk5Program{
	"python": {env: "RMQ_SDK5_PYTHON", tool: "python3", command: func(root, deps string) ([]string, []string) {
		return []string{filepath.Join(root, "integration/sdk5/python/cluster.py")}, []string{"PYTHONPATH=" + deps}
	}},
	"node": {env: "RMQ_SDK5_NODE", tool: "node", command: func(root, deps string) ([]string, []string) {
		return []string{filepath.Join(root, "integration/sdk5/node/cluster.js")}, []string{"NODE_PATH=" + deps}
	}},
}

func TestSDK5PythonCluster(t *testing.T) { runSDK5Cluster(t, "python", false) }

func TestSDK5NodeCluster(t *testing.T) { runSDK5Cluster(t, "node", false) }

func TestSDK5PythonClusterOwnEndpoint(t *testing.T) { runSDK5Cluster(t, "python", true) }

// No Node.js variant with both endpoints: rocketmq-client-nodejs 1.0.8 splits "a;b" but joins the
// addresses into the gRPC target "a,b", which grpc-js resolves as one DNS name and fails ("Name resolution
// failed for target dns:127.0.0.2:P,127.0.0.3:P"), so its producer cannot start with two endpoints.

// clusterBroker is one broker process of the cluster.
type clusterBroker struct {
	name string
	ip   string
	node *harness.Node
}

// addr is the broker's remoting address (it listens on its own IP only).
func (b *clusterBroker) addr() string { return net.JoinHostPort(b.ip, strconv.Itoa(b.node.Port)) }

// sdk5Cluster is a name server and two brokers of one cluster.
type sdk5Cluster struct {
	namesrv  string
	a, b     *clusterBroker
	grpcPort int
}

// endpoint is a broker's gRPC endpoint.
func (c *sdk5Cluster) endpoint(b *clusterBroker) string {
	return net.JoinHostPort(b.ip, strconv.Itoa(c.grpcPort))
}

// startSDK5Cluster starts the name server and brokers A (127.0.0.2) and B (127.0.0.3).
func startSDK5Cluster(t *testing.T, run string) *sdk5Cluster {
	t.Helper()
	c := &sdk5Cluster{}
	for range 50 {
		p, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if portFreeOn(p, "127.0.0.2", "127.0.0.3") {
			c.grpcPort = p
			break
		}
	}
	if c.grpcPort == 0 {
		t.Fatal("no port free on 127.0.0.2 and 127.0.0.3")
	}
	start := func(name, ip, namesrv string) (*harness.Pair, *clusterBroker) {
		pair := harness.StartPair(t, harness.PairConfig{
			RMQBin: rmqBin, WorkDir: t.TempDir(), BrokerName: name, Cluster: run, NamesrvAddr: namesrv, NoSlave: true,
			ReadyTimeout: 30 * time.Second,
			Master: harness.NodeSpec{Impl: harness.ImplRMQ, Conf: []string{
				"brokerIP1=" + ip, "brokerIP2=" + ip, "bindAddress=" + ip, "grpcServerPort=" + strconv.Itoa(c.grpcPort),
				"smallStore=true", "grpcClientConsumerMinLongPollingTimeoutMillis=" + strconv.Itoa(sdk5ClusterMinPollMs),
			}},
		})
		return pair, &clusterBroker{name: name, ip: ip, node: pair.Master}
	}
	var first *harness.Pair
	first, c.a = start(run+"_a", "127.0.0.2", "")
	c.namesrv = first.NamesrvAddr()
	_, c.b = start(run+"_b", "127.0.0.3", c.namesrv)
	return c
}

// portFreeOn reports whether port can be bound on every one of ips.
func portFreeOn(port int, ips ...string) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, ip := range ips {
		l, err := net.Listen("tcp4", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// nsRouteBrokers are the broker names with queues in the name server's route of topic.
func nsRouteBrokers(cl *remoting.Client, namesrv, topic string) ([]string, error) {
	req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
	resp, err := cl.InvokeTimeout(namesrv, req, 3*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("GET_ROUTEINFO_BY_TOPIC %s: code %d %q", topic, resp.Code, resp.Remark)
	}
	var route remoting.TopicRouteData
	if err := remoting.UnmarshalBody(resp.Body, &route); err != nil {
		return nil, fmt.Errorf("route body %q: %w", resp.Body, err)
	}
	var names []string
	for _, qd := range route.QueueDatas {
		names = append(names, qd.BrokerName)
	}
	slices.Sort(names)
	return names, nil
}

// grpcRouteBrokers asks the gRPC endpoint for topic's route (QueryRoute, as an SDK does) and returns each
// broker name with the endpoint its queues are listed at.
func grpcRouteBrokers(ctx context.Context, endpoint, topic string) (map[string]string, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	host, port, _ := net.SplitHostPort(endpoint)
	p, _ := strconv.Atoi(port)
	resp, err := v2.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2.QueryRouteRequest{
		Topic: &v2.Resource{Name: topic},
		Endpoints: &v2.Endpoints{Scheme: v2.AddressScheme_IPv4,
			Addresses: []*v2.Address{{Host: host, Port: int32(p)}}},
	})
	if err != nil {
		return nil, err
	}
	if resp.GetStatus().GetCode() != v2.Code_OK {
		return nil, fmt.Errorf("QueryRoute %s: %v", topic, resp.GetStatus())
	}
	out := map[string]string{}
	for _, mq := range resp.GetMessageQueues() {
		b := mq.GetBroker()
		var eps []string
		for _, a := range b.GetEndpoints().GetAddresses() {
			eps = append(eps, net.JoinHostPort(a.GetHost(), strconv.Itoa(int(a.GetPort()))))
		}
		ep := strings.Join(eps, ",")
		if prev, ok := out[b.GetName()]; ok && prev != ep {
			return nil, fmt.Errorf("QueryRoute %s: broker %s at %s and %s", topic, b.GetName(), prev, ep)
		}
		out[b.GetName()] = ep
	}
	return out, nil
}

// clusterRecord is one JSON line of a cluster program's stdout.
type clusterRecord struct {
	Scenario        string `json:"scenario"`
	Key             string `json:"key"`
	ID              string `json:"id"`
	Endpoint        string `json:"endpoint"`
	Attempt         int    `json:"attempt"`
	SendFailures    int    `json:"send_failures"`
	ReceiveFailures int    `json:"receive_failures"`
}

// clusterProgram is a running cluster program: phases are started with a line on its stdin.
type clusterProgram struct {
	sdk    string
	stdin  io.WriteCloser
	exited chan struct{}
	err    error // the exit status, once exited is closed

	mu      sync.Mutex
	records []clusterRecord
	bad     []string
}

func startClusterProgram(t *testing.T, sdk, endpoint, run, topic, group string) *clusterProgram {
	t.Helper()
	prog := sdk5ClusterPrograms[sdk]
	tool, deps := prog.runtime(t, sdk)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args, env := prog.command(root, deps)
	cmd := exec.Command(tool, args...)
	home := t.TempDir() // the SDKs log under $HOME/logs
	cmd.Env = append(append(os.Environ(), env...), "HOME="+home, "RMQ_ENDPOINT="+endpoint, "SDK5_RUN="+run,
		"SDK5_TOPIC="+topic, "SDK5_GROUP="+group, "SDK5_COUNT="+strconv.Itoa(sdk5ClusterCount))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := &clusterProgram{sdk: sdk, exited: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", tool, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r clusterRecord
			p.mu.Lock()
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Scenario == "" {
				p.bad = append(p.bad, sc.Text())
			} else {
				p.records = append(p.records, r)
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", sdk, stderr.String())
			logSDKFiles(t, home)
		}
	})
	return p
}

// phase starts the named phase and waits for its end; it returns the phase's records.
func (p *clusterProgram) phase(t *testing.T, name string) (sent, received []clusterRecord, done clusterRecord) {
	t.Helper()
	p.mu.Lock()
	from := len(p.records)
	p.mu.Unlock()
	if _, err := io.WriteString(p.stdin, name+"\n"); err != nil {
		t.Fatalf("%s: start phase %s: %v", p.sdk, name, err)
	}
	deadline := time.Now().Add(sdk5ClusterPhase)
	for {
		p.mu.Lock()
		recs := slices.Clone(p.records[from:])
		bad := slices.Clone(p.bad)
		p.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("%s printed lines that are not records: %q", p.sdk, bad)
		}
		for _, r := range recs {
			switch r.Scenario {
			case "sent":
				sent = append(sent, r)
			case "received":
				received = append(received, r)
			case "done":
				return sent, received, r
			}
		}
		sent, received = nil, nil
		select {
		case <-p.exited:
			t.Fatalf("%s program exited (%v) in phase %s", p.sdk, p.err, name)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s program: phase %s not done after %v", p.sdk, name, sdk5ClusterPhase)
		}
	}
}

// close ends the program's input and waits for its clean exit.
func (p *clusterProgram) close(t *testing.T) {
	t.Helper()
	if err := p.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("%s program: %v", p.sdk, p.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s program did not exit within 30s of its stdin closing", p.sdk)
	}
}

// storedIn is how many messages the broker holds in topic's queues.
func storedIn(t *testing.T, cl *remoting.Client, b *clusterBroker, topic string, queues int) int64 {
	t.Helper()
	offs, err := queueMaxOffsets(cl, b.addr(), topic, queues)
	if err != nil {
		t.Fatalf("offsets of %s on %s: %v", topic, b.name, err)
	}
	var n int64
	for _, o := range offs {
		n += o
	}
	return n
}

// runSDK5Cluster: see the comment at the top of the file. killOwn gives the SDK both endpoints and kills the
// first (A); otherwise the SDK is given A's endpoint and B is killed.
func runSDK5Cluster(t *testing.T, sdk string, killOwn bool) {
	t.Parallel()
	sdk5ClusterPrograms[sdk].runtime(t, sdk) // skip before starting anything
	const queues = sdk5ClusterQueues
	start := time.Now()
	run := uniqueName(t, sdk)
	c := startSDK5Cluster(t, run)
	topic, group := run+"_t", run+"_cg"
	cl := rawClient(t)
	for _, b := range []*clusterBroker{c.a, c.b} {
		createTopicAt(t, b.addr(), topic, queues, "+message.type=NORMAL")
	}
	both := []string{c.a.name, c.b.name}
	harness.WaitFor(t, routeTimeout, func() error {
		names, err := nsRouteBrokers(cl, c.namesrv, topic)
		if err == nil && !slices.Equal(names, both) {
			err = fmt.Errorf("name server route of %s: brokers %v, want %v", topic, names, both)
		}
		return err
	})
	// The gRPC route lists every broker of the cluster at that broker's own endpoint, asked at either.
	for _, at := range []*clusterBroker{c.a, c.b} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := grpcRouteBrokers(ctx, c.endpoint(at), topic)
		cancel()
		want := map[string]string{c.a.name: c.endpoint(c.a), c.b.name: c.endpoint(c.b)}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("QueryRoute %s at %s: %v %v, want %v", topic, c.endpoint(at), got, err, want)
		}
	}

	endpoint, victim, survivor := c.endpoint(c.a), c.b, c.a
	if killOwn {
		endpoint, victim, survivor = c.endpoint(c.a)+";"+c.endpoint(c.b), c.a, c.b
	}
	prog := startClusterProgram(t, sdk, endpoint, run, topic, group)
	seen := map[string]int{} // receives a key
	checkPhase := func(name string, sent, received []clusterRecord, endpoints ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, r := range sent {
			want[r.Key] = true
			if !slices.Contains(endpoints, r.Endpoint) {
				t.Errorf("%s %s: %s sent to %s, want one of %v", sdk, name, r.Key, r.Endpoint, endpoints)
			}
		}
		if len(want) != sdk5ClusterCount {
			t.Errorf("%s %s: %d messages sent, want %d", sdk, name, len(want), sdk5ClusterCount)
		}
		for _, r := range received {
			if seen[r.Key]++; seen[r.Key] > 1 || r.Attempt != 1 {
				t.Errorf("%s %s: %s received again (acked before) or as delivery attempt %d", sdk, name, r.Key, r.Attempt)
			}
			delete(want, r.Key)
		}
		if len(want) > 0 {
			t.Errorf("%s %s: never received %v", sdk, name, want)
		}
	}

	// Before the kill: both brokers take messages.
	phaseStart := time.Now()
	sent, received, done := prog.phase(t, "before")
	before := time.Since(phaseStart)
	checkPhase("before", sent, received, c.endpoint(c.a), c.endpoint(c.b))
	onA, onB := storedIn(t, cl, c.a, topic, queues), storedIn(t, cl, c.b, topic, queues)
	if onA+onB != sdk5ClusterCount || onA == 0 || onB == 0 || done.SendFailures != 0 {
		t.Fatalf("%s before the kill: %d stored on A, %d on B (%d send failures), want %d on both together, some on each",
			sdk, onA, onB, done.SendFailures, sdk5ClusterCount)
	}
	perEndpoint := map[string]int{}
	for _, r := range sent {
		perEndpoint[r.Endpoint]++
	}
	if perEndpoint[c.endpoint(c.a)] != int(onA) || perEndpoint[c.endpoint(c.b)] != int(onB) {
		t.Errorf("%s send receipts name endpoints %v; stored on A %d, on B %d", sdk, perEndpoint, onA, onB)
	}
	survivorBefore := storedIn(t, cl, survivor, topic, queues)

	// The kill: the name server drops the broker when its connection closes; the producer and consumer go on
	// at once (every send stored on the survivor, every message received) while the gRPC routes still list
	// the killed broker, until the survivor's route cache reloads.
	killed := time.Now()
	if err := victim.node.Kill(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, sdk5ClusterRouteDrop, func() error {
		names, err := nsRouteBrokers(cl, c.namesrv, topic)
		if err == nil && !slices.Equal(names, []string{survivor.name}) {
			err = fmt.Errorf("name server route of %s after %s was killed: brokers %v", topic, victim.name, names)
		}
		return err
	})
	nsDrop := time.Since(killed)
	phaseStart = time.Now()
	sent, received, after := prog.phase(t, "after")
	afterDur := time.Since(phaseStart)
	checkPhase("after", sent, received, c.endpoint(survivor))
	if n := storedIn(t, cl, survivor, topic, queues) - survivorBefore; n < sdk5ClusterCount {
		t.Errorf("%s after the kill: %d more stored on %s, want at least %d", sdk, n, survivor.name, sdk5ClusterCount)
	}

	// The gRPC route the survivor serves loses the killed broker's queues at its route cache's next reload
	// from the name server (grpcapi routeRefresh, 20 s, as the stock proxy's topic route cache).
	harness.WaitFor(t, sdk5ClusterGRPCRouteDrop-time.Since(killed), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		got, err := grpcRouteBrokers(ctx, c.endpoint(survivor), topic)
		if want := map[string]string{survivor.name: c.endpoint(survivor)}; err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			err = fmt.Errorf("QueryRoute %s after %s was killed: %v, want %v", topic, victim.name, got, want)
		}
		return err
	})
	grpcDrop := time.Since(killed)

	// Given both endpoints, the SDK's access point (a gRPC channel over both addresses) fails over to the
	// survivor: a producer started now gets its route through it, and its sends are stored and received.
	var late clusterRecord
	if killOwn {
		phaseStart = time.Now()
		sent, received, late = prog.phase(t, "late fresh")
		checkPhase("late", sent, received, c.endpoint(survivor))
		t.Logf("%s: a producer started after the kill sent %d (%d failed sends retried) in %v", sdk, len(sent), late.SendFailures,
			time.Since(phaseStart).Round(time.Millisecond))
	}
	prog.close(t)
	t.Logf("%s SDK given %s, %s killed: before %d on A, %d on B in %v (%d receive failures); routes without %s after %v (name server), %v (gRPC); after the kill %d sends (%d failed sends retried, %d failed receives) in %v; %v in all",
		sdk, endpoint, victim.name, onA, onB, before.Round(time.Millisecond), done.ReceiveFailures, victim.name,
		nsDrop.Round(time.Millisecond), grpcDrop.Round(time.Millisecond), len(sent), after.SendFailures, after.ReceiveFailures,
		afterDur.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
