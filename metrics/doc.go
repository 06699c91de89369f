// Package metrics serves the broker's HTTP endpoint: Prometheus metrics on
// /metrics, readiness on /healthz and, opt-in, /debug/pprof/. It is off by
// default and switched on with the 5.x broker keys metricsExporterType=PROM,
// metricsPromExporterHost and metricsPromExporterPort (default 5557).
//
//	names.go      metric and label names (5.x BrokerMetricsConstant & co., rmq's own)
//	collector.go  the collector: reads the broker's counters and tables at scrape time
//	server.go     the HTTP server
//
// Metric names, types and labels follow the 5.x broker's OpenTelemetry
// metrics as its Prometheus exporter shows them; every series carries the
// constant labels cluster, node_type="broker" and node_id=<brokerName>.
// Nothing here runs on the send or pull path: the collector reads the
// atomic counters of package brokerstats (messages and bytes in and out per
// topic and group), the client tables, the store positions and the
// schedule, timer and transaction services when Prometheus scrapes.
// Figures only a scrape needs (request latency, message size, pull
// positions, DLQ sends) are recorded only after Broker.EnableMetrics.
//
// Gaps against 5.x: rocketmq_message_size has no topic or message_type
// label; rocketmq_storage_size counts the commitlog span; there is no
// rocketmq_processor_watermark (rmq has no bounded request queues),
// rocketmq_commit_messages_total, rocketmq_rollback_messages_total,
// rocketmq_finish_message_latency, rocketmq_half_messages (see
// rmq_transaction_half_messages) nor rocketmq_storage_message_reserve_time.
package metrics
