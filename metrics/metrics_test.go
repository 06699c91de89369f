package metrics

import (
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// series renders one sample line of the text exposition: the node labels
// and labels ("k=v,k=v") sorted by name, as the Prometheus encoder writes them.
// The rocketmq_* series also carry otel_scope_name="broker-meter".
func series(name, labels string, v int) string {
	parts := []string{`cluster="DefaultCluster"`, `node_id="broker-a"`, `node_type="broker"`}
	if strings.HasPrefix(name, "rocketmq_") {
		parts = append(parts, `otel_scope_name="broker-meter"`)
	}
	if labels != "" {
		for _, kv := range strings.Split(labels, ",") {
			k, val, _ := strings.Cut(kv, "=")
			parts = append(parts, k+`="`+val+`"`)
		}
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "} " + strconv.Itoa(v)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServerServesMetricsHealthAndPprof sends and pulls through an
// in-process broker and reads the text exposition.
func TestServerServesMetricsHealthAndPprof(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	tb.EnableMetrics()
	s, err := Start(tb.Broker, Options{Addr: "127.0.0.1:0", Pprof: true, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	base := "http://" + s.Addr()
	for range 3 {
		if resp := tb.Client.Send(brokertest.Send{Topic: "MetricsT", Body: []byte("0123456789"), QueueID: 0}); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	tb.WaitDispatched()
	pull := brokertest.Pull{Group: "MetricsG", Topic: "MetricsT", QueueID: 0, Offset: 0, MaxMsgs: 2, SysFlag: 4, Subscription: "*"}
	if resp := tb.Client.Invoke(remoting.PullMessage, pull.Ext(), nil); resp.Code != remoting.Success {
		t.Fatalf("pull: %d %s", resp.Code, resp.Remark)
	}
	// Refusals are counted by reason whatever their log lines show.
	for range 2 {
		if resp := tb.Client.Send(brokertest.Send{Topic: "MetricsNoSuchT", Body: []byte("x"), DefaultTopic: "MetricsNoDefault"}); resp.Code != remoting.TopicNotExist {
			t.Fatalf("send to a missing topic: %d %s", resp.Code, resp.Remark)
		}
	}
	tb.Broker.Clients().Offsets.Commit("MetricsG", "MetricsT", 0, 1)
	tb.Broker.Clients().SubGroups.FindOrCreate("MetricsG")

	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics %d", code)
	}
	cg := "consumer_group=MetricsG,is_retry=false,is_system=false,topic=MetricsT"
	pulled := "consumer_group=MetricsG,is_system=false,topic=MetricsT"
	for _, want := range []string{
		series("rocketmq_messages_in_total", "is_system=false,message_type=normal,topic=MetricsT", 3),
		series("rocketmq_messages_out_total", pulled, 2),
		series("rocketmq_message_size_count", "is_system=false,message_type=normal,topic=MetricsT", 3),
		`rocketmq_message_size_bucket{cluster="DefaultCluster",is_system="false",message_type="normal",node_id="broker-a",node_type="broker",otel_scope_name="broker-meter",topic="MetricsT",le="1024"} 3`, // le comes last
		series("rocketmq_rpc_latency_milliseconds_count", "is_long_polling=false,protocol_type=remoting,request_code=send_message_v2,response_code=success,result=success", 3),
		series("rocketmq_rpc_latency_milliseconds_count", "is_long_polling=false,protocol_type=remoting,request_code=pull_message,response_code=success,result=success", 1),
		series("rocketmq_broker_permission", "", 6),
		// 3 stored, 1 committed, 2 pulled.
		series("rocketmq_consumer_lag_messages", cg, 2),
		series("rocketmq_consumer_inflight_messages", cg, 1),
		series("rocketmq_consumer_ready_messages", cg, 1),
		series("rmq_delay_pending_messages", "delay=1s,level=1", 0),
		series("rocketmq_timing_messages", "storage_medium=disk,storage_type=local,topic=rmq_sys_wheel_timer", 0),
		series("rmq_refusals_total", "reason=send_topic_not_exist,response_code=topic_not_exist", 2),
		`# TYPE rmq_refusals_total counter`,
		`# TYPE rocketmq_rpc_latency_milliseconds histogram`,
		`# TYPE rocketmq_messages_in_total counter`,
		`# TYPE rocketmq_consumer_lag_messages gauge`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz without name servers: %d %q", code, body)
	}
	if code, _ := get(t, base+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ %d", code)
	}
}

func TestPprofIsOptIn(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	s, err := Start(tb.Broker, Options{Addr: "127.0.0.1:0", Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if code, _ := get(t, "http://"+s.Addr()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without metricsPprofEnable: %d", code)
	}
}

// TestHealthzWaitsForTheNameServers: a broker whose name server does not
// answer is not ready.
func TestHealthzWaitsForTheNameServers(t *testing.T) {
	dead := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	tb := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) { o.NamesrvAddr = dead }))
	s, err := Start(tb.Broker, Options{Addr: "127.0.0.1:0", Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if code, body := get(t, "http://"+s.Addr()+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz with an unreachable name server: %d %q", code, body)
	}
}
