package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

func startServer(t *testing.T, edit func(*Options)) *Server {
	t.Helper()
	opts := DefaultOptions()
	opts.ListenHost = "127.0.0.1"
	opts.ListenPort = testutil.FreePort(t)
	if edit != nil {
		edit(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func registerBody(counter int64, tcs ...*topicgroup.TopicConfig) []byte {
	return remoting.MarshalBody(remoting.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: *topics(counter, tcs...)})
}

func registerExt(cluster, name, addr string, id int64) map[string]string {
	return map[string]string{
		"clusterName": cluster, "brokerName": name, "brokerAddr": addr, "brokerId": strconv.FormatInt(id, 10),
		"haServerAddr": addr + "-ha", "compressed": "false",
	}
}

func withExt(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func without(m map[string]string, key string) map[string]string {
	out := withExt(m)
	delete(out, key)
	return out
}

func crcOf(b []byte) string { return strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)&0x7FFFFFFF), 10) }

func compressedRegisterBody(counter int64, lines ...string) []byte {
	var raw bytes.Buffer
	field := func(s string) {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	field(fmt.Sprintf(`{"counter":%d,"timestamp":1}`, counter))
	_ = binary.Write(&raw, binary.BigEndian, int32(len(lines)))
	for _, l := range lines {
		field(l)
	}
	field(`[]`)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	return z.Bytes()
}

type step struct {
	name       string
	code       int32
	ext        map[string]string
	body       []byte
	version    int32 // 0: remoting.Version (409)
	wantCode   int32
	wantRemark string // checked when non-empty
	check      func(t *testing.T, resp *remoting.Command)
}

func decodeTopicList(t *testing.T, resp *remoting.Command) remoting.TopicList {
	t.Helper()
	var tl remoting.TopicList
	if err := remoting.UnmarshalBody(resp.Body, &tl); err != nil {
		t.Fatalf("topic list %s: %v", resp.Body, err)
	}
	return tl
}

func wantTopics(want ...string) func(*testing.T, *remoting.Command) {
	return func(t *testing.T, resp *remoting.Command) {
		if got := decodeTopicList(t, resp).TopicList; !reflect.DeepEqual(got, want) {
			t.Errorf("topics = %v, want %v", got, want)
		}
	}
}

func wantExt(kv ...string) func(*testing.T, *remoting.Command) {
	return func(t *testing.T, resp *remoting.Command) {
		want := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			want[kv[i]] = kv[i+1]
		}
		got := resp.ExtFields
		if got == nil {
			got = map[string]string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("extFields = %v, want %v", got, want)
		}
	}
}

func wantBody(want string) func(*testing.T, *remoting.Command) {
	return func(t *testing.T, resp *remoting.Command) {
		if string(resp.Body) != want {
			t.Errorf("body = %s\nwant   %s", resp.Body, want)
		}
	}
}

// wantRoute checks a route body's exact text and the stock client rules.
func wantRoute(want string) func(*testing.T, *remoting.Command) {
	return func(t *testing.T, resp *remoting.Command) {
		if string(resp.Body) != want {
			t.Fatalf("route = %s\nwant    %s", resp.Body, want)
		}
		if i := whitespaceOutsideStrings(resp.Body); i >= 0 {
			t.Errorf("whitespace in route body at %d", i)
		}
		for _, obj := range brokerAddrsObjects(t, string(resp.Body)) {
			for id, addr := range parseLikeGoClient(obj) {
				if addr == "" || strings.ContainsAny(addr, `" `) {
					t.Errorf("Go client would read broker %d as %q", id, addr)
				}
			}
		}
	}
}

func TestServerRequests(t *testing.T) {
	const (
		a0 = "127.0.0.1:10911"
		a1 = "127.0.0.2:10911"
		b0 = "127.0.0.3:10911"
	)
	master := registerExt("C1", "broker-a", a0, 0)
	masterBody := registerBody(1, tc("T", 4, 6), tc("TBW102", 8, 7))
	slave := registerExt("C1", "broker-a", a1, 1)
	compressed := compressedRegisterBody(3, "T 2 2 6 SINGLE_TAG", "U 1 1 6 SINGLE_TAG")
	const (
		routeBare   = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"},{"brokerAddrs":{0:"127.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2"}],"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`
		routeQuoted = `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"},{"brokerAddrs":{"0":"127.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2"}],"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`
	)
	steps := []step{
		{name: "unknown code", code: 9999, wantCode: remoting.RequestCodeNotSupported, wantRemark: " request type 9999 not supported"},
		{name: "route without topic header", code: remoting.GetRouteinfoByTopic, wantCode: remoting.SystemError, check: func(t *testing.T, r *remoting.Command) {
			if !strings.Contains(r.Remark, "<topic>") {
				t.Errorf("remark %q does not name the field", r.Remark)
			}
		}},
		{name: "route of an unknown topic", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T"},
			wantCode: remoting.TopicNotExist, wantRemark: "No topic route info in name server for the topic: T"},
		{name: "put order conf", code: remoting.PutKVConfig, ext: map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T", "value": "broker-a:4"}, wantCode: remoting.Success},
		{name: "put without value", code: remoting.PutKVConfig, ext: map[string]string{"namespace": "N", "key": "k"}, wantCode: remoting.SystemError},
		{name: "get kv", code: remoting.GetKVConfig, ext: map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"}, wantCode: remoting.Success, check: wantExt("value", "broker-a:4")},
		{name: "get absent kv", code: remoting.GetKVConfig, ext: map[string]string{"namespace": "N", "key": "k"}, wantCode: remoting.QueryNotFound, wantRemark: "No config item, Namespace: N Key: k"},
		{name: "register without brokerId", code: remoting.RegisterBroker, ext: without(master, "brokerId"), body: masterBody, wantCode: remoting.SystemError},
		{name: "register with wrong crc", code: remoting.RegisterBroker, ext: withExt(master, "bodyCrc32", "12345"), body: masterBody, wantCode: remoting.SystemError, wantRemark: "crc32 not match"},
		{name: "register with bad body", code: remoting.RegisterBroker, ext: master, body: []byte("{"), wantCode: remoting.SystemError},
		{name: "register master", code: remoting.RegisterBroker, ext: withExt(master, "bodyCrc32", crcOf(masterBody)), body: masterBody,
			wantCode: remoting.Success, check: func(t *testing.T, r *remoting.Command) {
				wantExt()(t, r)
				wantBody(`{"table":{"T":"broker-a:4"}}`)(t, r)
			}},
		{name: "register slave", code: remoting.RegisterBroker, ext: slave, body: registerBody(1, tc("T", 99, 6)),
			wantCode: remoting.Success, check: wantExt("masterAddr", a0, "haServerAddr", a0+"-ha")},
		{name: "register compressed", code: remoting.RegisterBroker, ext: withExt(registerExt("C2", "broker-b", b0, 0), "compressed", "true", "bodyCrc32", crcOf(compressed)),
			body: compressed, wantCode: remoting.Success},
		{name: "route for a 4.5.2 client has bare keys", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T"}, version: 317,
			wantCode: remoting.Success, check: wantRoute(routeBare)},
		{name: "route for a 4.9.8 client has quoted keys", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T"},
			wantCode: remoting.Success, check: wantRoute(routeQuoted)},
		{name: "acceptStandardJsonOnly quotes keys for old clients", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T", "acceptStandardJsonOnly": "true"}, version: 317,
			wantCode: remoting.Success, check: wantRoute(routeQuoted)},
		{name: "TBW102 is routed", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "TBW102"},
			wantCode: remoting.Success, check: wantRoute(`{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`)},
		{name: "cluster info", code: remoting.GetBrokerClusterInfo, wantCode: remoting.Success,
			check: wantBody(`{"brokerAddrTable":{"broker-a":{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"},"broker-b":{"brokerAddrs":{"0":"127.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2"}},"clusterAddrTable":{"C1":["broker-a"],"C2":["broker-b"]}}`)},
		{name: "all topics", code: remoting.GetAllTopicListFromNameserver, wantCode: remoting.Success, check: wantTopics("T", "TBW102", "U")},
		{name: "topics by cluster", code: remoting.GetTopicsByCluster, ext: map[string]string{"cluster": "C2"}, wantCode: remoting.Success, check: wantTopics("T", "U")},
		{name: "topics by cluster without cluster", code: remoting.GetTopicsByCluster, wantCode: remoting.SystemError},
		{name: "system topics", code: remoting.GetSystemTopicListFromNS, wantCode: remoting.Success,
			check: wantBody(`{"brokerAddr":"127.0.0.1:10911","topicList":["C1","C2","broker-a","broker-b"]}`)},
		{name: "data version unchanged", code: remoting.QueryDataVersion, ext: without(master, "haServerAddr"), body: remoting.MarshalBody(topics(1).DataVersion),
			wantCode: remoting.Success, check: func(t *testing.T, r *remoting.Command) {
				wantExt("changed", "false")(t, r)
				wantBody(string(remoting.MarshalBody(topics(1).DataVersion)))(t, r)
			}},
		{name: "data version changed", code: remoting.QueryDataVersion, ext: without(master, "haServerAddr"), body: remoting.MarshalBody(topics(2).DataVersion),
			wantCode: remoting.Success, check: wantExt("changed", "true")},
		{name: "data version without body", code: remoting.QueryDataVersion, ext: without(master, "haServerAddr"), wantCode: remoting.SystemError},
		{name: "wipe write perm", code: remoting.WipeWritePermOfBroker, ext: map[string]string{"brokerName": "broker-a"}, wantCode: remoting.Success, check: wantExt("wipeTopicCount", "2")},
		{name: "wiped perm shows in the route", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "TBW102"}, wantCode: remoting.Success, check: func(t *testing.T, r *remoting.Command) {
			if !bytes.Contains(r.Body, []byte(`"perm":5`)) {
				t.Errorf("route after wipe: %s", r.Body)
			}
		}},
		{name: "add write perm", code: remoting.AddWritePermOfBroker, ext: map[string]string{"brokerName": "broker-a"}, wantCode: remoting.Success, check: wantExt("addTopicCount", "2")},
		{name: "register topic", code: remoting.RegisterTopicInNamesrv, ext: map[string]string{"topic": "R"},
			body:     []byte(`{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"C1"}],"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":3}]}`),
			wantCode: remoting.Success},
		{name: "registered topic is routed", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "R"}, wantCode: remoting.Success,
			check: wantRoute(`{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":3}]}`)},
		{name: "kv list", code: remoting.GetKVListByNamespace, ext: map[string]string{"namespace": NamespaceOrderTopicConfig}, wantCode: remoting.Success, check: wantBody(`{"table":{"T":"broker-a:4"}}`)},
		{name: "kv list of unknown namespace", code: remoting.GetKVListByNamespace, ext: map[string]string{"namespace": "N"}, wantCode: remoting.QueryNotFound, wantRemark: "No config item, Namespace: N"},
		{name: "delete kv", code: remoting.DeleteKVConfig, ext: map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"}, wantCode: remoting.Success},
		{name: "deleted kv is gone", code: remoting.GetKVConfig, ext: map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"}, wantCode: remoting.QueryNotFound},
		{name: "delete topic in one cluster", code: remoting.DeleteTopicInNamesrv, ext: map[string]string{"topic": "T", "clusterName": "C2"}, wantCode: remoting.Success},
		{name: "route left to the other cluster, without order conf", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T"}, wantCode: remoting.Success,
			check: wantRoute(`{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`)},
		{name: "delete topic everywhere", code: remoting.DeleteTopicInNamesrv, ext: map[string]string{"topic": "T"}, wantCode: remoting.Success},
		{name: "deleted topic is gone", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "T"}, wantCode: remoting.TopicNotExist},
		{name: "unregister without clusterName", code: remoting.UnregisterBroker, ext: map[string]string{"brokerName": "broker-b", "brokerAddr": b0, "brokerId": "0"}, wantCode: remoting.SystemError},
		{name: "unregister broker-b", code: remoting.UnregisterBroker, ext: map[string]string{"brokerName": "broker-b", "brokerAddr": b0, "brokerId": "0", "clusterName": "C2"}, wantCode: remoting.Success},
		{name: "topic of broker-b is gone", code: remoting.GetRouteinfoByTopic, ext: map[string]string{"topic": "U"}, wantCode: remoting.TopicNotExist},
	}
	types := []struct {
		name string
		st   byte
	}{
		{name: "JSON", st: remoting.SerializeJSON},
		{name: "ROCKETMQ", st: remoting.SerializeRocketMQ},
	}
	for _, typ := range types {
		t.Run(typ.name, func(t *testing.T) {
			s := startServer(t, func(o *Options) { o.OrderMessageEnable = true })
			cl := remoting.NewClient(remoting.ClientOptions{SerializeType: typ.st})
			defer cl.Close()
			for _, st := range steps {
				req := remoting.NewRequest(st.code, st.ext, st.body)
				req.SerializeType = typ.st
				if st.version != 0 {
					req.Version = st.version
				}
				resp, err := cl.InvokeTimeout(s.Addr(), req, 3*time.Second)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if resp.Code != st.wantCode {
					t.Fatalf("%s: code %d (%q), want %d", st.name, resp.Code, resp.Remark, st.wantCode)
				}
				if resp.SerializeType != typ.st || resp.Opaque != req.Opaque || !resp.IsResponse() {
					t.Errorf("%s: reply type %d opaque %d flag %d", st.name, resp.SerializeType, resp.Opaque, resp.Flag)
				}
				if st.wantRemark != "" && resp.Remark != st.wantRemark {
					t.Errorf("%s: remark %q, want %q", st.name, resp.Remark, st.wantRemark)
				}
				if st.check != nil {
					t.Run(st.name, func(t *testing.T) { st.check(t, resp) })
				}
			}
		})
	}
}

func TestServerOrderConfOnlyWhenEnabled(t *testing.T) {
	s := startServer(t, nil)
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	for _, req := range []*remoting.Command{
		remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T", "value": "broker-a:4"}, nil),
		remoting.NewRequest(remoting.RegisterBroker, registerExt("C", "broker-a", "127.0.0.1:10911", 0), registerBody(1, tc("T", 4, 6))),
	} {
		if resp, err := cl.InvokeTimeout(s.Addr(), req, 3*time.Second); err != nil || resp.Code != remoting.Success {
			t.Fatalf("setup %d: %v %v", req.Code, resp, err)
		}
	}
	resp, err := cl.InvokeTimeout(s.Addr(), remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": "T"}, nil), 3*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("route: %v %v", resp, err)
	}
	if bytes.Contains(resp.Body, []byte("orderTopicConf")) {
		t.Errorf("orderTopicConf sent with orderMessageEnable=false: %s", resp.Body)
	}
}

// rawConn is a bare TCP connection speaking frames, so a test can watch the
// server close it.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp4", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (r *rawConn) invoke(req *remoting.Command) *remoting.Command {
	r.t.Helper()
	_ = r.nc.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := r.nc.Write(remoting.EncodeFrame(req)); err != nil {
		r.t.Fatal(err)
	}
	resp, _, err := remoting.ReadFrame(r.nc, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

func TestServerRemovesBrokerWhenItsConnectionCloses(t *testing.T) {
	s := startServer(t, nil)
	keep := dialRaw(t, s.Addr())
	gone := dialRaw(t, s.Addr())
	if r := keep.invoke(remoting.NewRequest(remoting.RegisterBroker, registerExt("C", "keep", "127.0.0.1:1", 0), registerBody(1, tc("T", 4, 6)))); r.Code != remoting.Success {
		t.Fatalf("register: %v", r)
	}
	if r := gone.invoke(remoting.NewRequest(remoting.RegisterBroker, registerExt("C", "gone", "127.0.0.1:2", 0), registerBody(1, tc("T", 4, 6), tc("G", 1, 6)))); r.Code != remoting.Success {
		t.Fatalf("register: %v", r)
	}
	if rd := s.Routes().TopicRoute("T"); rd == nil || len(rd.BrokerDatas) != 2 {
		t.Fatalf("route before close: %+v", rd)
	}
	gone.nc.Close()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return s.Routes().TopicRoute("G") == nil }, "the closed broker to leave the route")
	rd := s.Routes().TopicRoute("T")
	if rd == nil || len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerName != "keep" {
		t.Fatalf("route after close: %+v", rd)
	}
}

func TestServerExpiresSilentBrokers(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, func(o *Options) {
		o.Now = clk.Now
		o.ScanNotActiveBrokerInterval = 10 * time.Millisecond
	})
	silent := dialRaw(t, s.Addr())
	talker := dialRaw(t, s.Addr())
	reg := func(c *rawConn, name string, port int) {
		r := c.invoke(remoting.NewRequest(remoting.RegisterBroker, registerExt("C", name, "127.0.0.1:"+strconv.Itoa(port), 0), registerBody(1, tc("T", 4, 6))))
		if r.Code != remoting.Success {
			t.Fatalf("register %s: %v", name, r)
		}
	}
	reg(silent, "silent", 1)
	reg(talker, "talker", 2)
	clk.Advance(100 * time.Second)
	reg(talker, "talker", 2)
	// An unchanged QUERY_DATA_VERSION also counts as a sign of life.
	clk.Advance(10 * time.Second)
	dv := talker.invoke(remoting.NewRequest(remoting.QueryDataVersion, without(registerExt("C", "talker", "127.0.0.1:2", 0), "haServerAddr"), remoting.MarshalBody(topics(1).DataVersion)))
	if dv.ExtFields["changed"] != "false" {
		t.Fatalf("query data version: %v", dv)
	}
	clk.Advance(11 * time.Second) // silent: 121 s; talker: 11 s since its query
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		rd := s.Routes().TopicRoute("T")
		return rd != nil && len(rd.BrokerDatas) == 1
	}, "the silent broker to expire")
	if name := s.Routes().TopicRoute("T").BrokerDatas[0].BrokerName; name != "talker" {
		t.Fatalf("left in route: %s", name)
	}
	// The expired broker's connection is closed by the server.
	_ = silent.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := silent.nc.Read(make([]byte, 1)); err == nil {
		t.Errorf("expired broker's connection still open")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("expired broker's connection not closed: %v", err)
	}
}

func TestServerLifecycle(t *testing.T) {
	port := testutil.FreePort(t)
	opts := DefaultOptions()
	opts.ListenPort = port
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Addr(), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("Addr = %s, want %s", got, want)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Errorf("second Start succeeded")
	}
	s.Shutdown()
	s.Shutdown()
	if c, err := net.DialTimeout("tcp4", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("still accepting after Shutdown")
	}
	never, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	never.Shutdown()
}

// With ListenPort 0 the system picks the port; Addr reports it once started
// and it serves requests. Two such servers get different ports.
func TestServerPortZero(t *testing.T) {
	a := startServer(t, func(o *Options) { o.ListenPort = 0 })
	b := startServer(t, func(o *Options) { o.ListenPort = 0 })
	for _, s := range []*Server{a, b} {
		host, port, err := net.SplitHostPort(s.Addr())
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Fatalf("Addr = %q", s.Addr())
		}
		resp := dialRaw(t, s.Addr()).invoke(remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("request on %s: code %d %q", s.Addr(), resp.Code, resp.Remark)
		}
	}
	if a.Addr() == b.Addr() {
		t.Fatalf("both servers report %s", a.Addr())
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Options)
		wantErr bool
		check   func(*testing.T, Options)
	}{
		{name: "defaults", edit: func(*Options) {}},
		{name: "zero values get defaults", edit: func(o *Options) {
			o.ListenHost, o.ScanNotActiveBrokerInterval, o.BrokerChannelExpiredTime, o.Now = "", 0, 0, nil
		}, check: func(t *testing.T, o Options) {
			if o.ListenHost != "0.0.0.0" || o.ScanNotActiveBrokerInterval != 10*time.Second || o.BrokerChannelExpiredTime != 120*time.Second || o.Now == nil {
				t.Errorf("defaults not filled: %+v", o)
			}
		}},
		{name: "port zero: any free port", edit: func(o *Options) { o.ListenPort = 0 }},
		{name: "negative port", edit: func(o *Options) { o.ListenPort = -1 }, wantErr: true},
		{name: "port too big", edit: func(o *Options) { o.ListenPort = 70000 }, wantErr: true},
		{name: "negative scan interval", edit: func(o *Options) { o.ScanNotActiveBrokerInterval = -1 }, wantErr: true},
		{name: "negative expiry", edit: func(o *Options) { o.BrokerChannelExpiredTime = -1 }, wantErr: true},
		{name: "negative idle time", edit: func(o *Options) { o.ServerChannelMaxIdleTimeSeconds = -1 }, wantErr: true},
		{name: "negative connection limit", edit: func(o *Options) { o.ServerMaxConnections = -1 }, wantErr: true},
		{name: "budget below one frame", edit: func(o *Options) { o.ServerMaxInflightBytes = 1 << 20 }, wantErr: true},
		{name: "zero budget gets the default", edit: func(o *Options) { o.ServerMaxInflightBytes = 0 }, check: func(t *testing.T, o Options) {
			if o.ServerMaxInflightBytes != remoting.DefaultMaxInflightBytes || o.ServerChannelMaxIdleTimeSeconds != 120 {
				t.Errorf("connection defaults: %+v", o.ServerConfig)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.edit(&o)
			err := o.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
	bad := DefaultOptions()
	bad.KVConfigPath = t.TempDir() // a directory cannot be read as the file
	if _, err := New(bad); err == nil {
		t.Errorf("New accepted a directory as kvConfigPath")
	}
}

func TestServerRegisterVariants(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, func(o *Options) { o.Now = clk.Now })
	oldWrapper := remoting.MarshalBody(topics(1, tc("Old", 2, 6)))
	tests := []struct {
		name      string
		ext       map[string]string
		body      []byte
		version   int32
		wantTopic string
	}{
		{
			name: "broker before 3.0.11 sends a bare topic wrapper", ext: registerExt("C", "old", "127.0.0.1:1", 0),
			body: oldWrapper, version: 36, wantTopic: "Old",
		},
		{
			name: "J5 broker with its own heartbeat timeout", ext: withExt(registerExt("C", "j5", "127.0.0.1:2", 0), "heartbeatTimeoutMillis", "5000", "enableActingMaster", "false"),
			body: registerBody(1, tc("J5", 1, 6)), wantTopic: "J5",
		},
	}
	for _, tt := range tests {
		req := remoting.NewRequest(remoting.RegisterBroker, tt.ext, tt.body)
		if tt.version != 0 {
			req.Version = tt.version
		}
		// One connection per broker: expiring one closes its connection,
		// which would take every broker registered over it along.
		if resp := dialRaw(t, s.Addr()).invoke(req); resp.Code != remoting.Success {
			t.Fatalf("%s: %v", tt.name, resp)
		}
		if s.Routes().TopicRoute(tt.wantTopic) == nil {
			t.Errorf("%s: topic %s not routed", tt.name, tt.wantTopic)
		}
	}
	clk.Advance(6 * time.Second)
	s.ScanNotActiveBroker()
	if s.Routes().TopicRoute("J5") != nil {
		t.Errorf("broker with a 5 s heartbeat timeout still routed after 6 s")
	}
	if s.Routes().TopicRoute("Old") == nil {
		t.Errorf("broker with the default 120 s expiry dropped after 6 s")
	}
}
