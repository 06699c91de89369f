package broker

import (
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/timer"
)

// Accessors for the metrics endpoint and the console (read-only use).

// EnableMetrics turns on the figures only the metrics endpoint reads
// (request latencies, message sizes, pull positions, DLQ sends), best
// before Start. Without it the send and pull paths record none of them.
func (b *Broker) EnableMetrics() { b.bstats.EnableDetail() }

// Refusals counts refused requests by reason and response code (every
// front end's) and rate-limits their log lines.
func (b *Broker) Refusals() *ratelog.Limiter { return b.refusals }

// Schedule is the delay-level service.
func (b *Broker) Schedule() *schedule.Service { return b.sched }

// Timers is the timer store, nil when timerWheelEnable is off.
func (b *Broker) Timers() *timer.TimerStore { return b.timers }

// Permission is the broker's current brokerPermission (it changes with
// UPDATE_BROKER_CONFIG and wipeWritePerm).
func (b *Broker) Permission() int32 { return b.runtime().BrokerPermission }

// TopicCount is the number of topics in the topic table.
func (b *Broker) TopicCount() int {
	b.topics.mu.RLock()
	defer b.topics.mu.RUnlock()
	return len(b.topics.table)
}

// Options are the options the broker was built with.
func (b *Broker) Options() Options { return b.opts }

// Ready is true once the broker has started and, with name servers
// configured, its last registration was accepted by every one of them.
func (b *Broker) Ready() bool {
	if !b.started.Load() {
		return false
	}
	if len(b.opts.NamesrvAddrs()) == 0 {
		return true
	}
	return b.registeredAll.Load()
}

// timedServe runs h and records its latency by request and response code;
// a parked request (nil response) is not recorded.
func (b *Broker) timedServe(d *brokerstats.Detail, h HandlerFunc, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	begin := b.clock.Now()
	resp := h(c, req)
	if resp == nil {
		return nil
	}
	took := b.clock.Now().Sub(begin)
	d.RecordRPC(req.Code, resp.Code, took)
	// 5.x times topic and group creates apart (AdminBrokerProcessor:
	// topicCreateExecuteTime, consumerGroupCreateExecuteTime), over the
	// whole request, by outcome and, for a topic, whether the topic named
	// is a system topic. The _LIST forms are timed as stock times them: a
	// body that does not decode is not (it fails before the timed block);
	// the topic list's is_system is TopicValidator.isSystemTopic of the
	// names joined as "a;b;", so only a first topic with the system prefix
	// sets it.
	switch req.Code {
	case remoting.UpdateAndCreateTopicList:
		if raw, err := remoting.DecodeListBody(req.Body, "topicConfigList", len(req.Body)); err == nil {
			var names strings.Builder
			for _, r := range raw {
				var tc struct {
					TopicName string `json:"topicName"`
				}
				_ = remoting.UnmarshalBody(r, &tc)
				names.WriteString(tc.TopicName + ";")
			}
			sys := b.topics.IsSystemTopic(names.String())
			d.TopicCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success, System: sys}, took.Milliseconds())
		}
	case remoting.UpdateAndCreateSubscriptionGroupList:
		if _, err := remoting.DecodeListBody(req.Body, "groupConfigList", len(req.Body)); err == nil {
			d.GroupCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success}, took.Milliseconds())
		}
	case remoting.UpdateAndCreateTopic:
		// Only the topic matters here; the processor has answered a bad header.
		hd, _ := remoting.DecodeHeader[remoting.CreateTopicRequestHeader](req)
		sys := b.topics.IsSystemTopic(hd.Topic)
		d.TopicCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success, System: sys}, took.Milliseconds())
	case remoting.UpdateAndCreateSubscriptionGroup:
		d.GroupCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success}, took.Milliseconds())
	}
	return resp
}

// recordPop counts a pop for the metrics endpoint (pop.Options.OnPopped).
func (b *Broker) recordPop(topic, group string, retry bool, msgs, bytes int) {
	if d := b.bstats.Detail(); d != nil {
		d.RecordPop(topic, group, retry, msgs, bytes)
	}
}

// MetricsConfig holds the keys of the HTTP endpoint (package metrics),
// which cmd/rmq starts next to the broker.
type MetricsConfig struct {
	// MetricsExporterType is the 5.x key: "PROM" serves Prometheus metrics;
	// "DISABLE" (the default) serves nothing.
	MetricsExporterType string `conf:"metricsExporterType"`
	// MetricsPromExporterHost is the interface to listen on ("" means
	// bindAddress).
	MetricsPromExporterHost string `conf:"metricsPromExporterHost"`
	MetricsPromExporterPort int    `conf:"metricsPromExporterPort"`
	// MetricsPprofEnable also serves /debug/pprof/ on the metrics port.
	MetricsPprofEnable bool `conf:"metricsPprofEnable"`
	// ConsoleEnable serves the read-only web console on the metrics port
	// (at / and /console).
	ConsoleEnable bool `conf:"consoleEnable"`
}

// MetricsEnabled reports whether metricsExporterType asks for Prometheus.
func (c MetricsConfig) MetricsEnabled() bool { return strings.EqualFold(c.MetricsExporterType, "PROM") }

func defaultMetricsConfig() MetricsConfig {
	return MetricsConfig{MetricsExporterType: "DISABLE", MetricsPromExporterPort: 5557, ConsoleEnable: true}
}

// componentLog is log for a subsystem: its "component" field lets
// --log-level set the subsystem's level. log must be the process's logger
// (Options.Logger), never a component's: zerolog appends fields, so a
// second "component" would repeat the key, which JSON log stores such as
// Elasticsearch refuse.
func componentLog(log zerolog.Logger, name string) zerolog.Logger {
	return log.With().Str("component", name).Logger()
}

// offsetsAndStats forgets a deleted topic's consumer offsets and its stats
// items (brokeradmin's DELETE_TOPIC_IN_BROKER).
type offsetsAndStats struct {
	offsets interface{ RemoveTopic(string) }
	stats   *brokerstats.Manager
}

func (o offsetsAndStats) RemoveTopic(topic string) {
	o.offsets.RemoveTopic(topic)
	o.stats.RemoveTopic(topic)
}

// sampleRuntimeRates records the store's pull counters for the get TPS
// figures of GET_BROKER_RUNTIME_INFO (found, missed, total).
func (b *Broker) sampleRuntimeRates(now time.Time) {
	info := b.store.RuntimeInfo()
	total, _ := strconv.ParseInt(info["getMessageTimesTotal"], 10, 64)
	found, _ := strconv.ParseInt(info["getMessageTimesTotalFound"], 10, 64)
	b.bstats.Runtime.Sample(now, found, total-found, total)
}

// runtimeInfoExtras adds to GET_BROKER_RUNTIME_INFO the timer figures and
// the stock StoreStatsService get rates ("%.2f %.2f %.2f" over 10 s, 1 min
// and 10 min).
func (b *Broker) runtimeInfoExtras(t map[string]string) {
	b.timerRuntimeInfo(t)
	b.laneRuntimeInfo(t) // fastfail.go
	t["getFoundTps"] = b.bstats.Runtime.Text(0)
	t["getMissTps"] = b.bstats.Runtime.Text(1)
	t["getTotalTps"] = b.bstats.Runtime.Text(2)
	b.haRuntimeInfo(t)
}

// Replication keys of GET_BROKER_RUNTIME_INFO. Stock 4.9.8 and 5.3.3 put
// none in the table (the HA offsets show only as commitLogMaxOffset, and
// 4.9.8 logs slaveFallBehindMuch once a minute, printMasterAndSlaveDiff);
// 5.x serves them apart, as HARuntimeInfo (GET_BROKER_HA_STATUS). rmq adds
// them to the table, so that mqadmin brokerStatus, rmq admin and the
// console show a pair's state from one request, under the names of the
// stock figures they are:
//
//	brokerRole, brokerId              both (the BrokerConfig keys; brokerActive is 5.3.3's)
//	haConnectionCount                 master: connected slaves (HAService.connectionCount)
//	haPush2SlaveMaxOffset             master: the highest offset a slave acked (push2SlaveMaxOffset)
//	haSlaveFallBehindMuch             master: commitLogMaxOffset - haPush2SlaveMaxOffset (DefaultMessageStore.slaveFallBehindMuch)
//	haSlaveAckOffset_<addr>           master: one slave's last ack (HAConnectionRuntimeInfo.slaveAckOffset, -1 before the first)
//	haSlaveDiff_<addr>                master: commitLogMaxOffset - that ack (HAConnectionRuntimeInfo.diff)
//	haMasterAddress, haMasterConnected, haReportedOffset
//	                                  slave: the HA address followed, whether connected, the offset last reported to it
//
// Per-slave keys carry the address as the stock per-path keys do
// (commitLogDiskRatio_<path>).
func (b *Broker) haRuntimeInfo(t map[string]string) {
	// 5.3.3's key (isSpecialServiceRunning: the delay, transaction-check
	// and revive services run), which its mqadmin clusterList prints as
	// #ACTIVATED: a master runs them, a slave does not (role.go).
	t["brokerActive"] = strconv.FormatBool(!b.isSlave())
	t["brokerRole"] = b.opts.BrokerRole
	t["brokerId"] = strconv.FormatInt(b.brokerID(), 10)
	if st, ok := b.HAMasterStats(); ok {
		t["haConnectionCount"] = strconv.Itoa(st.Connections)
		t["haPush2SlaveMaxOffset"] = strconv.FormatInt(st.Push2SlaveMaxOffset, 10)
		t["haSlaveFallBehindMuch"] = strconv.FormatInt(st.MasterMaxOffset-st.Push2SlaveMaxOffset, 10)
		for _, sl := range st.Slaves {
			t["haSlaveAckOffset_"+sl.Addr] = strconv.FormatInt(sl.AckOffset, 10)
			t["haSlaveDiff_"+sl.Addr] = strconv.FormatInt(SlaveLag(st.MasterMaxOffset, sl.AckOffset), 10)
		}
	}
	if st, ok := b.HAClientStats(); ok {
		t["haMasterAddress"] = st.MasterAddr
		t["haMasterConnected"] = strconv.FormatBool(st.Connected)
		t["haReportedOffset"] = strconv.FormatInt(st.ReportedOffset, 10)
	}
}

// SlaveLag is how many commitlog bytes a slave that acked ack lacks of a
// master at masterMax: all of them before its first ack (-1), never less
// than 0 (a slave that restarted with a longer commitlog acks past it).
func SlaveLag(masterMax, ack int64) int64 {
	return max(masterMax-max(ack, 0), 0)
}
