package message

// Property keys (MessageConst.java; the TIMER_* keys are 5.x). Each is named
// after its value, not after the Java constant.
const (
	// PropKeys holds the business keys, separated by KeySeparator; the index
	// serves QUERY_MESSAGE by each of them.
	PropKeys = "KEYS" // PROPERTY_KEYS
	// PropTags is the tag; its hash is the consume-queue tagsCode (TagsHash).
	PropTags = "TAGS" // PROPERTY_TAGS
	// PropWait is "false" when the producer does not wait for the flush of a
	// SYNC_FLUSH store; absent means true.
	PropWait = "WAIT" // PROPERTY_WAIT_STORE_MSG_OK
	// PropDelay is the 4.x delay level (1..18).
	PropDelay = "DELAY" // PROPERTY_DELAY_TIME_LEVEL
	// PropUniqKey is the client message id (MessageClientIDSetter).
	PropUniqKey = "UNIQ_KEY" // PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
	// PropRealTopic and PropRealQueueID keep the destination of a message the
	// broker stored elsewhere first (delay level, timer, half message).
	PropRealTopic   = "REAL_TOPIC" // PROPERTY_REAL_TOPIC
	PropRealQueueID = "REAL_QID"   // PROPERTY_REAL_QUEUE_ID
	// PropRetryTopic is the original topic of a message sent back for retry.
	PropRetryTopic = "RETRY_TOPIC" // PROPERTY_RETRY_TOPIC
	// PropOriginMessageID is the first message id of a retry chain.
	PropOriginMessageID = "ORIGIN_MESSAGE_ID" // PROPERTY_ORIGIN_MESSAGE_ID
	// PropReconsumeTime and PropMaxReconsumeTimes are set by clients on
	// retried messages.
	PropReconsumeTime     = "RECONSUME_TIME"      // PROPERTY_RECONSUME_TIME
	PropMaxReconsumeTimes = "MAX_RECONSUME_TIMES" // PROPERTY_MAX_RECONSUME_TIMES
	// PropCluster is added by the broker to every stored message.
	PropCluster = "CLUSTER" // PROPERTY_CLUSTER
	// PropMsgRegion and PropTraceOn travel in send replies and for traces.
	PropMsgRegion = "MSG_REGION" // PROPERTY_MSG_REGION
	PropTraceOn   = "TRACE_ON"   // PROPERTY_TRACE_SWITCH
	// PropMinOffset and PropMaxOffset are added client-side after a pull.
	PropMinOffset = "MIN_OFFSET" // PROPERTY_MIN_OFFSET
	PropMaxOffset = "MAX_OFFSET" // PROPERTY_MAX_OFFSET

	// PropTranMsg is "true" on a transactional half send.
	PropTranMsg = "TRAN_MSG" // PROPERTY_TRANSACTION_PREPARED
	// PropProducerGroup is the producer group (transaction check-back, recall
	// markers).
	PropProducerGroup = "PGROUP" // PROPERTY_PRODUCER_GROUP
	// PropTranPreparedQueueOffset is the queue offset of the half message
	// a commit or rollback ends.
	PropTranPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET" // PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET
	// PropTransactionCheckTimes counts the check-backs of a half message.
	PropTransactionCheckTimes = "TRANSACTION_CHECK_TIMES" // PROPERTY_TRANSACTION_CHECK_TIMES
	// PropCheckImmunityTimeInSeconds delays the first check-back.
	PropCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS" // PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS

	// PropTimerDeliverMs is the absolute delivery time in ms (setDeliverTimeMs).
	PropTimerDeliverMs = "TIMER_DELIVER_MS" // PROPERTY_TIMER_DELIVER_MS
	// PropTimerDelaySec is a delay in seconds from the broker's receipt (setDelayTimeSec).
	PropTimerDelaySec = "TIMER_DELAY_SEC" // PROPERTY_TIMER_DELAY_SEC
	// PropTimerDelayMs is a delay in ms from the broker's receipt (setDelayTimeMs).
	PropTimerDelayMs = "TIMER_DELAY_MS" // PROPERTY_TIMER_DELAY_MS
	// PropTimerOutMs is set by the broker on admission: the delivery time in
	// ms. Its presence marks a message as already admitted.
	PropTimerOutMs = "TIMER_OUT_MS" // PROPERTY_TIMER_OUT_MS
	// PropTimerEnqueueMs is set at delivery: the wheel write time when the
	// message entered the wheel, or MaxInt64 when it never did.
	PropTimerEnqueueMs = "TIMER_ENQUEUE_MS" // PROPERTY_TIMER_ENQUEUE_MS
	// PropTimerDequeueMs is set at delivery: the time of delivery.
	PropTimerDequeueMs = "TIMER_DEQUEUE_MS" // PROPERTY_TIMER_DEQUEUE_MS
	// PropTimerRollTimes counts how often a timer message was rolled.
	PropTimerRollTimes = "TIMER_ROLL_TIMES" // PROPERTY_TIMER_ROLL_TIMES
	// PropTimerDelUniqKey marks a recall (delete) marker:
	// "<realTopic>+<uniqKey>" of the message to drop.
	PropTimerDelUniqKey = "TIMER_DEL_UNIQKEY" // PROPERTY_TIMER_DEL_UNIQKEY
)

// PropTimerPrefix starts every 5.x timer property key above; a properties
// text without it carries no timer request.
const PropTimerPrefix = "TIMER_"

// KeySeparator separates the keys of PropKeys (MessageConst.KEY_SEPARATOR).
const KeySeparator = " "

// Multi-dispatch and LMQ (4.9.8 MessageConst, MixAll).
const (
	// PropInnerMultiDispatch lists the queues a message is dispatched to
	// besides its own, separated by MultiDispatchSeparator
	// (PROPERTY_INNER_MULTI_DISPATCH).
	PropInnerMultiDispatch = "INNER_MULTI_DISPATCH"
	// PropInnerMultiQueueOffset is set by the store: the queue offset the
	// message takes in each queue of PropInnerMultiDispatch, in the same
	// order (PROPERTY_INNER_MULTI_QUEUE_OFFSET).
	PropInnerMultiQueueOffset = "INNER_MULTI_QUEUE_OFFSET"
	// MultiDispatchSeparator is MixAll.MULTI_DISPATCH_QUEUE_SPLITTER.
	MultiDispatchSeparator = ","
	// LmqPrefix starts the name of a light message queue (MixAll.LMQ_PREFIX).
	LmqPrefix = "%LMQ%"
)

// IsLmq is MixAll.isLmq: name is a light message queue's topic (or group).
func IsLmq(name string) bool {
	return len(name) >= len(LmqPrefix) && name[:len(LmqPrefix)] == LmqPrefix
}
