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
// Figures only a scrape needs (request latency, message size by topic, pull
// positions, pops, DLQ sends, create times) are recorded only after
// Broker.EnableMetrics; each record is a lock-free map lookup and atomic
// adds (histo.Family), no allocation once the key exists.
//
// Where each figure is recorded, as 5.3.3 records it:
//
//   - rocketmq_commit_messages_total, rocketmq_rollback_messages_total,
//     rocketmq_finish_message_latency_milliseconds: broker/transaction
//     (end.go) when END_TRANSACTION applies a decision, by real topic; the
//     latency is the half message's age at its commit in seconds, as
//     EndTransactionProcessor records it despite the "ms" unit.
//   - rocketmq_topic_create_execution_time_milliseconds,
//     rocketmq_consumer_group_create_execution_time_milliseconds: the
//     broker's timedServe around UPDATE_AND_CREATE_TOPIC and
//     UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, by outcome (invocation_status)
//     and, for topics, is_system.
//   - rocketmq_message_size: brokerstats.RecordPut (sends, replies and
//     delay-level deliveries), by topic.
//   - rocketmq_messages_out_total and rocketmq_throughput_out_total with
//     is_retry: the pop service (pop.Options.OnPopped), by the requested
//     topic; pulls are the series without is_retry. The two label sets of
//     one name are served by an unchecked collector (popCollector).
//   - rocketmq_pop_revive_in_message_total: every ck and ack record the pop
//     service writes to the revive topic, by group, topic, CK/ACK and the
//     put's PutMessageStatus name (store.PutStatusName).
//   - rocketmq_pop_revive_latency_milliseconds: how long the oldest trigger
//     read but not revived yet has been due (PopReviveService
//     getReviveBehindMillis), queue_id 0 (rmq's one revive queue).
//   - rocketmq_pop_offset_buffer_size: the live checkpoints, which hold the
//     consumer offset back until acked or revived (PopBufferMergeService
//     keeps the same checkpoints per queue to commit offsets in order).
//   - rocketmq_storage_message_reserve_time_milliseconds: now minus the
//     commitlog's first store time (store.EarliestStoreTime).
//   - rocketmq_timer_enqueue_latency_milliseconds: the age of the message
//     the timer enqueue read last, if read in the last 2 s
//     (getEnqueueBehindMillis); rocketmq_timer_dequeue_lag: the wheel
//     entries from the read cursor on (getDequeueBehindMessages);
//     rocketmq_delay_message_latency_seconds: by real topic, TIMER_OUT_MS
//     minus the born time of each message the enqueue reads, in seconds
//     (timerMessageSetLatency). rmq's pop revive triggers are timer
//     messages too, so they show under the revive topic.
//
// Replication (collectHA; 5.3.3 exports no HA series): a master serves
// rmq_ha_slave_connections (HAService.connectionCount),
// rmq_ha_slave_lag_bytes{slave} (its commitlog end minus each slave's last
// ack, the whole log before the first) and rmq_ha_fall_behind_bytes (past
// the highest ack: 4.9.8's slaveFallBehindMuch, what a SYNC_MASTER checks
// against haSlaveFallbehindMax); a slave rmq_ha_master_connected and
// rmq_ha_replicated_offset_bytes. A slave cannot serve its own lag: the
// classic protocol never tells it where the master's commitlog ends, so its
// lag is its master's rmq_ha_slave_lag_bytes{slave="<its address>"} (the
// address the master sees, host and ephemeral port); rmq admin clusterList
// and the console show it per broker from both runtime tables.
//
// In controller mode (collectControllerHA) every member serves rmq_ha_master
// (1 on the master the controller elected), rmq_ha_master_epoch and
// rmq_ha_confirm_offset_bytes, and the master rmq_ha_sync_state_set_size and
// rmq_ha_sync_state_set_epoch (a slave keeps no set), from
// broker.ControllerState.
//
// Checked against Java: make java-oracle runs integration/java/metrics-oracle.sh
// (a Java 5.3.3 broker with metricsExporterType=PROM, the traffic of
// traffic_test.go, a scrape diffed with rmq's); its scrape is
// testdata/java-5.3.3-metrics.txt, which TestServesEveryJavaMetric checks in
// make test: rmq serves all 61 of its series (name and label names), and
// notServed (oracle_test.go) is empty. Two of them have rmq counterparts
// that differ in what they measure:
//
//   - rocketmq_processor_watermark: requests waiting in each processor's
//     queue. rmq has queues for the send, pull, heartbeat and transaction
//     processors (the lanes of broker/fastfail.go, sized by the stock
//     executor keys); a request served inline on its event loop never
//     waits, and the other 5.x processors (async_put, ack, query_message,
//     client_manager, lite_pull, consumer_manager, admin, reply) have no
//     queue in rmq, so they read 0.
//   - rocketmq_pop_buffer_scan_time_consume_milliseconds (_bucket, _count,
//     _sum; buckets 1 ms to 3 s): the time of each pass of the pop service
//     over its checkpoints (reading the revive log, reviving the due ones;
//     broker/pop ScanTimes). 5.x times PopBufferMergeService's scan, which
//     also merges buffered acks; rmq applies an ack to its checkpoint as it
//     arrives.
//
// Approximations: rocketmq_timing_messages, rocketmq_timer_enqueue_total and
// rocketmq_timer_dequeue_total are broker-wide, their topic label the timer
// topic; rocketmq_half_messages is broker-wide, its topic label the half
// topic; rocketmq_pop_checkpoint_buffer_size counts popped messages neither
// acked nor revived, rocketmq_pop_revive_lag_milliseconds (a count, as 5.3.3
// records it) the revive triggers still to do, on queue_id 0;
// rocketmq_message_size's message_type is the topic's (as for
// rocketmq_messages_in_total), not each send's.
package metrics
