package timer

// Topic is the system topic timer messages are stored on until they are due
// (TopicValidator SYSTEM_TOPIC_PREFIX + "wheel_timer"). It has one queue, 0.
const Topic = "rmq_sys_wheel_timer"

// Message properties of the timer path (5.x MessageConst).
const (
	// PropDeliverMs is the absolute delivery time in ms (setDeliverTimeMs).
	PropDeliverMs = "TIMER_DELIVER_MS"
	// PropDelaySec is a delay in seconds from the broker's receipt (setDelayTimeSec).
	PropDelaySec = "TIMER_DELAY_SEC"
	// PropDelayMs is a delay in ms from the broker's receipt (setDelayTimeMs).
	PropDelayMs = "TIMER_DELAY_MS"
	// PropOutMs is set by Rewrite: the exact delivery time in ms. Its presence
	// marks a message as already admitted (re-puts are not admitted again).
	PropOutMs = "TIMER_OUT_MS"
	// PropEnqueueMs is set at delivery: the wheel write time (a multiple of the
	// precision) when the message entered the wheel, or MaxInt64 when it never
	// did because it was already due when read.
	PropEnqueueMs = "TIMER_ENQUEUE_MS"
	// PropDequeueMs is set at delivery: the time of delivery.
	PropDequeueMs = "TIMER_DEQUEUE_MS"
	// PropRollTimes counts how often the message was rolled (re-put because its
	// time lay beyond the roll window).
	PropRollTimes = "TIMER_ROLL_TIMES"
	// PropDelUniqKey marks a delete marker: "<realTopic>+<uniqKey>" of the
	// message to drop.
	PropDelUniqKey = "TIMER_DEL_UNIQKEY"

	// PropRealTopic and PropRealQueueID keep the destination of a rewritten message.
	PropRealTopic   = "REAL_TOPIC"
	PropRealQueueID = "REAL_QID"
	// PropUniqKey is the client-generated message id.
	PropUniqKey = "UNIQ_KEY"
	// PropTags and PropProducerGroup are set on recall markers like stock.
	PropTags          = "TAGS"
	PropProducerGroup = "PGROUP"
)

// RecallTag is the TAGS value of the delete markers Recall stores.
const RecallTag = "_RECALL_TAG_"

// retryTopicPrefix marks retry topics, for which no recall handle is issued.
const retryTopicPrefix = "%RETRY%"
