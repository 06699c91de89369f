// Package metrics serves the broker's HTTP endpoint: Prometheus metrics on
// /metrics, readiness on /healthz and, opt-in, /debug/pprof/. It is off by
// default and switched on with the 5.x broker keys metricsExporterType=PROM,
// metricsPromExporterHost and metricsPromExporterPort (default 5557).
//
//	names.go      metric and label names (5.x BrokerMetricsConstant & co., rmq's own)
//	collector.go  the collector: reads the broker's counters and tables at scrape time
//	server.go     the HTTP server
//
// Metric names and label sets are the 5.3.3 broker's as its Prometheus
// exporter serves them (opentelemetry-exporter-prometheus 1.29.0-alpha):
// the instrument's unit appended when the name lacks it ("milliseconds",
// "bytes", "seconds"; "ms" → "milliseconds", "By" → "bytes"), "_total" for a
// counter whose name lacks "total", "_ratio" for a gauge of unit "1"; so
// rocketmq_rpc_latency_milliseconds, rocketmq_consumer_lag_latency_milliseconds,
// rocketmq_storage_size_bytes. Every rocketmq_* sample carries
// otel_scope_name="broker-meter" and the node labels cluster,
// node_type="broker" and node_id=<brokerName>; target_info and
// otel_scope_info are served as the exporter serves them. The
// request_code and response_code labels are the stock table's lower-case
// names (remoting.RequestCodeName, generated from 5.3.3's RequestCode and
// ResponseCode), a number for a code it lacks, as RemotingHelper gives them.
// One difference in form: the 1.29 exporter writes TYPE and HELP lines
// without the unit suffix ("# TYPE rocketmq_rpc_latency histogram" above
// rocketmq_rpc_latency_milliseconds_bucket samples), which strict parsers
// take as untyped samples; rmq's TYPE lines name the series they head.
//
// Nothing here runs on the send or pull path: the collector reads the
// atomic counters of package brokerstats (messages and bytes in and out per
// topic and group), the client tables, the store positions and the
// schedule, timer, pop and transaction services when Prometheus scrapes.
// Figures only a scrape needs (request latency, message size, pull
// positions, DLQ sends) are recorded only after Broker.EnableMetrics.
//
// Checked against Java: make java-oracle runs integration/java/metrics-oracle.sh
// (a Java 5.3.3 broker with metricsExporterType=PROM, the traffic of
// traffic_test.go, a scrape diffed with rmq's); its scrape is
// testdata/java-5.3.3-metrics.txt, which TestServesEveryJavaMetric checks in
// make test. Of its 61 series (name and label names) rmq serves 32; the rest
// are listed with their reason in notServed (oracle_test.go):
//
//   - no rmq equivalent: rocketmq_processor_watermark (no request thread-pool
//     queues), rocketmq_pop_buffer_scan_time_consume_milliseconds and
//     rocketmq_pop_offset_buffer_size (no pop buffer merge service);
//   - not recorded yet (each needs a hook outside this package):
//     rocketmq_commit_messages_total, rocketmq_rollback_messages_total,
//     rocketmq_finish_message_latency_milliseconds,
//     rocketmq_topic_create_execution_time_milliseconds,
//     rocketmq_consumer_group_create_execution_time_milliseconds,
//     rocketmq_delay_message_latency_seconds, rocketmq_pop_revive_in_message_total,
//     rocketmq_pop_revive_latency_milliseconds,
//     rocketmq_storage_message_reserve_time_milliseconds,
//     rocketmq_timer_dequeue_lag, rocketmq_timer_enqueue_latency_milliseconds;
//   - coarser: rocketmq_message_size is broker-wide (no topic, message_type,
//     is_system); pops are counted in the pull series of
//     rocketmq_messages_out_total and rocketmq_throughput_out_total (5.x
//     counts them apart, with is_retry).
//
// Approximations: rocketmq_timing_messages, rocketmq_timer_enqueue_total and
// rocketmq_timer_dequeue_total are broker-wide, their topic label the timer
// topic; rocketmq_half_messages is broker-wide, its topic label the half
// topic; rocketmq_pop_checkpoint_buffer_size counts popped messages neither
// acked nor revived, rocketmq_pop_revive_lag_milliseconds (a count, as 5.3.3
// records it) the revive triggers still to do, on queue_id 0.
package metrics
