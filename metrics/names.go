package metrics

// Metric and label names. The rocketmq_* ones are the 5.x broker's
// OpenTelemetry metrics, as named in rocketmq-all-5.3.3:
// broker/src/main/java/org/apache/rocketmq/broker/metrics/BrokerMetricsConstant.java,
// remoting/src/main/java/org/apache/rocketmq/remoting/metrics/RemotingMetricsConstant.java and
// store/src/main/java/org/apache/rocketmq/store/metrics/DefaultStoreMetricsConstant.java.
// The rmq_* ones are rmq's own.
//
// Every rocketmq_* name is the one 5.3.3's Prometheus exporter
// (opentelemetry-exporter-prometheus 1.29.0-alpha, PrometheusMetricNameMapper)
// serves, not the instrument's: it appends the instrument's unit when the
// name does not already contain it ("milliseconds" and "bytes" as set with
// setUnit, "ms" becomes "milliseconds", "s" "seconds", "By" "bytes"), then
// "_total" to a counter whose name does not contain "total", and "_ratio"
// to a gauge of unit "1". Histograms add _bucket, _sum and _count. Every
// sample carries otel_scope_name="broker-meter" (the meter's name) besides
// the broker's cluster, node_type and node_id.
const (
	// BrokerMetricsConstant
	nameMessagesIn          = "rocketmq_messages_in_total"
	nameMessagesOut         = "rocketmq_messages_out_total"
	nameThroughputIn        = "rocketmq_throughput_in_total"
	nameThroughputOut       = "rocketmq_throughput_out_total"
	nameMessageSize         = "rocketmq_message_size"
	nameProducerConnections = "rocketmq_producer_connections"
	nameConsumerConnections = "rocketmq_consumer_connections"
	nameConsumerLagMessages = "rocketmq_consumer_lag_messages"
	nameConsumerLagLatency  = "rocketmq_consumer_lag_latency_milliseconds"
	nameConsumerInflight    = "rocketmq_consumer_inflight_messages"
	nameConsumerQueueing    = "rocketmq_consumer_queueing_latency_milliseconds"
	nameConsumerReady       = "rocketmq_consumer_ready_messages"
	nameSendToDLQ           = "rocketmq_send_to_dlq_messages_total"
	nameBrokerPermission    = "rocketmq_broker_permission"
	nameTopicNumber         = "rocketmq_topic_number"
	nameGroupNumber         = "rocketmq_consumer_group_number"
	nameHalfMessagesStock   = "rocketmq_half_messages"
	nameCommitMessages      = "rocketmq_commit_messages_total"
	nameRollbackMessages    = "rocketmq_rollback_messages_total"
	nameFinishLatency       = "rocketmq_finish_message_latency_milliseconds" // sic: seconds, as 5.3.3 records it
	nameTopicCreateTime     = "rocketmq_topic_create_execution_time_milliseconds"
	nameGroupCreateTime     = "rocketmq_consumer_group_create_execution_time_milliseconds"
	nameProcessorWatermark  = "rocketmq_processor_watermark"
	// PopMetricsConstant
	namePopCheckpointBuffer = "rocketmq_pop_checkpoint_buffer_size"
	namePopReviveLag        = "rocketmq_pop_revive_lag_milliseconds" // sic: a message count, as 5.3.3 records it
	namePopReviveLatency    = "rocketmq_pop_revive_latency_milliseconds"
	namePopReviveIn         = "rocketmq_pop_revive_in_message_total"
	namePopOffsetBuffer     = "rocketmq_pop_offset_buffer_size"
	namePopBufferScanTime   = "rocketmq_pop_buffer_scan_time_consume_milliseconds"
	// RemotingMetricsConstant
	nameRPCLatency = "rocketmq_rpc_latency_milliseconds"
	// DefaultStoreMetricsConstant
	nameStorageSize           = "rocketmq_storage_size_bytes"
	nameStorageFlushBehind    = "rocketmq_storage_flush_behind_bytes"
	nameStorageDispatchBehind = "rocketmq_storage_dispatch_behind_bytes"
	nameStorageReserveTime    = "rocketmq_storage_message_reserve_time_milliseconds"
	nameTimerEnqueueLatency   = "rocketmq_timer_enqueue_latency_milliseconds"
	nameTimerDequeueLag       = "rocketmq_timer_dequeue_lag"
	nameDelayMessageLatency   = "rocketmq_delay_message_latency_seconds"
	nameTimerEnqueueLag       = "rocketmq_timer_enqueue_lag"
	nameTimerDequeueLatency   = "rocketmq_timer_dequeue_latency_milliseconds"
	nameTimingMessages        = "rocketmq_timing_messages"
	nameTimerEnqueueTotal     = "rocketmq_timer_enqueue_total"
	nameTimerDequeueTotal     = "rocketmq_timer_dequeue_total"
	nameTimerMessageSnapshot  = "rocketmq_timer_message_snapshot"

	// The exporter's own series (Serializer.writeResource, writeScopeInfo).
	nameTargetInfo = "target_info"
	nameScopeInfo  = "otel_scope_info"

	// rmq's own.
	nameDelayPending       = "rmq_delay_pending_messages"
	nameDeliveryLateness   = "rmq_delivery_lateness_milliseconds"
	nameTimerRecalls       = "rmq_timer_recalls_total"
	nameTimerRecallDropped = "rmq_timer_recall_dropped_total"
	nameHalfMessages       = "rmq_transaction_half_messages"
	nameTxChecks           = "rmq_transaction_checks_total"
	nameRefusals           = "rmq_refusals_total"
	nameHASlaves           = "rmq_ha_slave_connections"
	nameHASlaveLag         = "rmq_ha_slave_lag_bytes"
	nameHAFallBehind       = "rmq_ha_fall_behind_bytes"
	nameHAMasterConnected  = "rmq_ha_master_connected"
	nameHAReplicated       = "rmq_ha_replicated_offset_bytes"
	nameHAMaster           = "rmq_ha_master"
	nameHAMasterEpoch      = "rmq_ha_master_epoch"
	nameHASyncStateSet     = "rmq_ha_sync_state_set_size"
	nameHASyncStateEpoch   = "rmq_ha_sync_state_set_epoch"
	nameHAConfirmOffset    = "rmq_ha_confirm_offset_bytes"

	// Labels (BrokerMetricsConstant, RemotingMetricsConstant,
	// DefaultStoreMetricsConstant).
	labelCluster       = "cluster"
	labelNodeType      = "node_type"
	labelNodeID        = "node_id"
	labelTopic         = "topic"
	labelIsRetry       = "is_retry"
	labelIsSystem      = "is_system"
	labelConsumerGroup = "consumer_group"
	labelMessageType   = "message_type"
	labelLanguage      = "language"
	labelVersion       = "version"
	labelConsumeMode   = "consume_mode"
	labelProtocolType  = "protocol_type"
	labelRequestCode   = "request_code"
	labelResponseCode  = "response_code"
	labelStorageType   = "storage_type"
	labelStorageMedium = "storage_medium"
	labelTimingBound   = "timer_bound_s"
	labelIsLongPolling = "is_long_polling"
	labelResult        = "result"
	labelQueueID       = "queue_id"
	labelScope         = "otel_scope_name"
	labelInvocation    = "invocation_status"
	labelPutStatus     = "put_status"
	labelReviveType    = "revive_message_type"
	labelProcessor     = "processor"

	// scopeName is the 5.x broker's OpenTelemetry meter name
	// (BrokerMetricsConstant.OPEN_TELEMETRY_METER_NAME).
	scopeName = "broker-meter"
	// rmq's own labels.
	labelLevel  = "level"
	labelDelay  = "delay"
	labelKind   = "kind"
	labelReason = "reason"
	labelSlave  = "slave"
)
