package metrics

// Metric and label names. The rocketmq_* ones are the 5.x broker's
// OpenTelemetry metrics, as named in rocketmq-all-5.3.3:
// broker/src/main/java/org/apache/rocketmq/broker/metrics/BrokerMetricsConstant.java,
// remoting/src/main/java/org/apache/rocketmq/remoting/metrics/RemotingMetricsConstant.java and
// store/src/main/java/org/apache/rocketmq/store/metrics/DefaultStoreMetricsConstant.java.
// The rmq_* ones are rmq's own.
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
	nameConsumerLagLatency  = "rocketmq_consumer_lag_latency"
	nameConsumerInflight    = "rocketmq_consumer_inflight_messages"
	nameConsumerQueueing    = "rocketmq_consumer_queueing_latency"
	nameConsumerReady       = "rocketmq_consumer_ready_messages"
	nameSendToDLQ           = "rocketmq_send_to_dlq_messages_total"
	// RemotingMetricsConstant
	nameRPCLatency = "rocketmq_rpc_latency"
	// DefaultStoreMetricsConstant
	nameStorageSize           = "rocketmq_storage_size"
	nameStorageFlushBehind    = "rocketmq_storage_flush_behind_bytes"
	nameStorageDispatchBehind = "rocketmq_storage_dispatch_behind_bytes"
	nameTimerEnqueueLag       = "rocketmq_timer_enqueue_lag"
	nameTimerDequeueLatency   = "rocketmq_timer_dequeue_latency"
	nameTimingMessages        = "rocketmq_timing_messages"
	nameTimerEnqueueTotal     = "rocketmq_timer_enqueue_total"
	nameTimerDequeueTotal     = "rocketmq_timer_dequeue_total"
	nameTimerMessageSnapshot  = "rocketmq_timer_message_snapshot"

	// rmq's own.
	nameDelayPending       = "rmq_delay_pending_messages"
	nameDeliveryLateness   = "rmq_delivery_lateness_milliseconds"
	nameTimerRecalls       = "rmq_timer_recalls_total"
	nameTimerRecallDropped = "rmq_timer_recall_dropped_total"
	nameHalfMessages       = "rmq_transaction_half_messages"
	nameTxChecks           = "rmq_transaction_checks_total"
	nameRefusals           = "rmq_refusals_total"

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
	// rmq's own labels.
	labelLevel  = "level"
	labelDelay  = "delay"
	labelKind   = "kind"
	labelReason = "reason"
)
