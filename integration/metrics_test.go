package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rmqio/rmq/integration/harness"
)

// javaMetrics is the Java 5.3.3 broker's /metrics after traffic, as
// TestJavaMetricsOracle (make java-oracle) saved it: "name{label,...}" per
// line. It is the one list of the 5.x names, label names and histograms (a
// family with _bucket series) this test holds rmq's families to.
const javaMetrics = "../metrics/testdata/java-5.3.3-metrics.txt"

// stockMetrics reads javaMetrics: each family name (a histogram's without
// its _bucket/_count/_sum suffix), whether it is a histogram, and every
// label name seen.
func stockMetrics(t *testing.T) (names, histograms, labels map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(javaMetrics)
	if err != nil {
		t.Fatal(err)
	}
	names, histograms, labels = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		for _, l := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if l != "" && l != "le" {
				labels[l] = true
			}
		}
		if base, ok := strings.CutSuffix(name, "_bucket"); ok {
			histograms[base] = true
			name = base
		}
		if base, ok := strings.CutSuffix(name, "_count"); ok && histograms[base] {
			name = base
		}
		if base, ok := strings.CutSuffix(name, "_sum"); ok && histograms[base] {
			name = base
		}
		names[name] = true
	}
	return names, histograms, labels
}

type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, addr string) scrape {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value sums the series of name whose labels include want (counter, gauge,
// or a histogram's count).
func (s scrape) value(name string, want map[string]string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsEndpoint runs a Go-client produce/consume/delay/timer workload
// against a broker with metricsExporterType=PROM and checks that the
// counters and histograms of /metrics moved by exactly the workload, and
// that every rocketmq_* name and label is one the 5.x broker exports.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p := ownRMQ(t, "metricsExporterType=PROM", "metricsPromExporterHost=127.0.0.1",
		fmt.Sprintf("metricsPromExporterPort=%d", port), "metricsPprofEnable=true")
	harness.WaitFor(t, 30*time.Second, func() error {
		if c := httpStatus(t, "http://"+addr+"/healthz"); c != http.StatusOK {
			return fmt.Errorf("/healthz %d", c)
		}
		return nil
	})
	if c := httpStatus(t, "http://"+addr+"/debug/pprof/"); c != http.StatusOK {
		t.Errorf("/debug/pprof/ %d", c)
	}

	// A seed message creates the topic; the baseline is taken once the
	// consumer has it.
	topic, group := uniqueName(t, "mt"), uniqueName(t, "mg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	seed, seedIDs := makeMsgs(topic, "seed", 1)
	sendAll(t, prod, seed)
	waitRoute(t, p, topic)
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, col)
	waitAll(t, consumeTimeout, seedIDs, col)
	waitCommitted(t, p, group, topic, 4)
	before := scrapeMetrics(t, addr)

	const plain, delayed, timers = 10, 3, 2
	msgs, ids := makeMsgs(topic, "plain", plain)
	for i := range delayed {
		id := fmt.Sprintf("delay-%d", i)
		m := testMsg(topic, id, bodyFor(id))
		m.WithDelayTimeLevel(1) // 1 s
		msgs, ids = append(msgs, m), append(ids, id)
	}
	for i := range timers {
		id := fmt.Sprintf("timer-%d", i)
		m := testMsg(topic, id, bodyFor(id))
		m.WithDelayTimestamp(time.Now().Add(1500 * time.Millisecond))
		msgs, ids = append(msgs, m), append(ids, id)
	}
	far := testMsg(topic, "far", bodyFor("far"))
	far.WithDelayTimestamp(time.Now().Add(30 * time.Minute)) // pending in the (600 s, 3600 s] bucket
	sendAll(t, prod, append(msgs, far))
	waitAll(t, consumeTimeout, ids, col)
	waitCommitted(t, p, group, topic, 4)

	after := scrapeMetrics(t, addr)
	delta := func(name string, labels map[string]string) float64 {
		return after.value(name, labels) - before.value(name, labels)
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		// Sends count on the topic they are stored on: delayed and timer
		// messages on the schedule and timer topics (as the stock broker).
		{"rocketmq_messages_in_total", map[string]string{"topic": topic, "message_type": "normal", "is_system": "false"}, plain},
		{"rocketmq_messages_in_total", map[string]string{"topic": "SCHEDULE_TOPIC_XXXX", "message_type": "delay"}, delayed},
		{"rocketmq_messages_in_total", map[string]string{"topic": "rmq_sys_wheel_timer", "message_type": "delay"}, timers + 1},
		{"rocketmq_messages_out_total", map[string]string{"topic": topic, "consumer_group": group, "is_system": "false"}, plain + delayed + timers},
		{"rocketmq_message_size", nil, plain + delayed + timers + 1},
		{"rocketmq_consumer_lag_messages", map[string]string{"topic": topic, "consumer_group": group}, 0},
		{"rocketmq_consumer_inflight_messages", map[string]string{"topic": topic, "consumer_group": group}, 0},
		{"rocketmq_consumer_ready_messages", map[string]string{"topic": topic, "consumer_group": group}, 0},
		{"rocketmq_timer_enqueue_total", nil, timers + 1},
		{"rocketmq_timer_dequeue_total", nil, timers},
		{"rocketmq_timing_messages", nil, 1},
		{"rocketmq_timer_message_snapshot", map[string]string{"timer_bound_s": "3600"}, 1},
		{"rmq_delay_pending_messages", map[string]string{"level": "1", "delay": "1s"}, 0},
		{"rmq_delivery_lateness_milliseconds", map[string]string{"kind": "delay_level"}, delayed},
		{"rmq_delivery_lateness_milliseconds", map[string]string{"kind": "timer"}, timers},
	}
	for _, c := range checks {
		if got := delta(c.name, c.labels); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	in := after.value("rocketmq_throughput_in_total", map[string]string{"topic": topic}) - before.value("rocketmq_throughput_in_total", map[string]string{"topic": topic})
	if min := float64(plain * len(bodyFor("plain-0"))); in < min {
		t.Errorf("rocketmq_throughput_in_total moved by %v, want at least the bodies (%v)", in, min)
	}
	sends := delta("rocketmq_rpc_latency_milliseconds", map[string]string{"protocol_type": "remoting", "request_code": "send_message", "response_code": "success"}) +
		delta("rocketmq_rpc_latency_milliseconds", map[string]string{"protocol_type": "remoting", "request_code": "send_message_v2", "response_code": "success"})
	if sends != plain+delayed+timers+1 {
		t.Errorf("rocketmq_rpc_latency of successful sends counted %v, want %d", sends, plain+delayed+timers+1)
	}
	if n := after.value("rocketmq_consumer_connections", map[string]string{"consumer_group": group, "language": "go", "consume_mode": "push"}); n != 1 {
		t.Errorf("rocketmq_consumer_connections of the group = %v, want 1", n)
	}
	if n := after.value("rocketmq_producer_connections", map[string]string{"language": "go"}); n < 1 {
		t.Errorf("rocketmq_producer_connections{language=GO} = %v", n)
	}
	if after["rocketmq_storage_size_bytes"] == nil || after["rocketmq_storage_dispatch_behind_bytes"] == nil {
		t.Error("storage gauges missing")
	}

	// Every rocketmq_* family is a 5.x name with 5.x labels; types too.
	stockMetricNames, stockHistograms, stockLabels := stockMetrics(t)
	var names []string
	for name, f := range after {
		if !strings.HasPrefix(name, "rocketmq_") {
			continue
		}
		names = append(names, name)
		if !stockMetricNames[name] {
			t.Errorf("%s is not a metric of the 5.x broker", name)
		}
		wantType := dto.MetricType_GAUGE
		switch {
		case strings.HasSuffix(name, "_total"):
			wantType = dto.MetricType_COUNTER
		case stockHistograms[name]:
			wantType = dto.MetricType_HISTOGRAM
		}
		if f.GetType() != wantType {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), wantType)
		}
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if !stockLabels[lp.GetName()] {
					t.Errorf("%s has label %s, not a 5.x label", name, lp.GetName())
				}
			}
		}
	}
	sort.Strings(names)
	t.Logf("rocketmq_* families: %v", names)
	if len(names) < 20 {
		t.Errorf("only %d rocketmq_* families", len(names))
	}
}
