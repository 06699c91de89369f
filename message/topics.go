package message

import "strings"

// System topics and topic-name rules (TopicValidator.java, MixAll.java; 5.x
// for the timer topic).
const (
	// TopicAutoCreateKey is the topic whose route a producer borrows, and
	// whose config a broker copies, when a topic does not exist yet
	// (AUTO_CREATE_TOPIC_KEY_TOPIC).
	TopicAutoCreateKey = "TBW102"
	// TopicSchedule holds 4.x delay-level messages, queue level-1, until due
	// (RMQ_SYS_SCHEDULE_TOPIC).
	TopicSchedule = "SCHEDULE_TOPIC_XXXX"
	// TopicBenchmark is the stock benchmark topic (BENCHMARK_TOPIC).
	TopicBenchmark = "BenchmarkTest"
	// TopicSelfTest is SELF_TEST_TOPIC.
	TopicSelfTest = "SELF_TEST_TOPIC"
	// TopicOffsetMovedEvent is OFFSET_MOVED_EVENT.
	TopicOffsetMovedEvent = "OFFSET_MOVED_EVENT"
	// TopicTransHalf holds transactional half messages (RMQ_SYS_TRANS_HALF_TOPIC).
	TopicTransHalf = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TopicTransOpHalf holds the op records that end half messages
	// (RMQ_SYS_TRANS_OP_HALF_TOPIC).
	TopicTransOpHalf = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TopicTransCheckMaxTime receives half messages checked too often
	// (TRANS_CHECK_MAX_TIME_TOPIC).
	TopicTransCheckMaxTime = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TopicTrace is the default message-trace topic (RMQ_SYS_TRACE_TOPIC).
	TopicTrace = "RMQ_SYS_TRACE_TOPIC"
	// TopicWheelTimer holds 5.x timer messages until due, queue 0
	// (TimerMessageStore.TIMER_TOPIC = SYSTEM_TOPIC_PREFIX + "wheel_timer").
	TopicWheelTimer = SystemTopicPrefix + "wheel_timer"

	// SystemTopicPrefix starts every name reserved for system topics
	// (SYSTEM_TOPIC_PREFIX).
	SystemTopicPrefix = "rmq_sys_"
	// RetryTopicPrefix + group is the group's retry topic (RETRY_GROUP_TOPIC_PREFIX).
	RetryTopicPrefix = "%RETRY%"
	// DLQTopicPrefix + group is the group's dead-letter topic (DLQ_GROUP_TOPIC_PREFIX).
	DLQTopicPrefix = "%DLQ%"
	// ReplyTopicSuffix: cluster + ReplyTopicSuffix is the cluster's
	// request-reply topic (MixAll.getReplyTopic: "_" + REPLY_TOPIC_POSTFIX).
	ReplyTopicSuffix = "_REPLY_TOPIC"
)

// System consumer groups (MixAll).
const (
	// SysGroupPrefix starts the name of every system consumer group; a
	// broker creates such a group even with auto-creation off
	// (CID_RMQ_SYS_PREFIX, MixAll.isSysConsumerGroup).
	SysGroupPrefix = "CID_RMQ_SYS_"
	// GroupTransCheck is the system group whose offsets on the half and op
	// topics are the transaction check's progress (CID_RMQ_SYS_TRANS,
	// TransactionalMessageUtil.buildConsumerGroup).
	GroupTransCheck = SysGroupPrefix + "TRANS"
	// GroupTools is the group of the admin tools' pull consumer, one a
	// broker knows from the start (TOOLS_CONSUMER_GROUP).
	GroupTools = "TOOLS_CONSUMER"
)

// RetryTopic is the retry topic of a consumer group: %RETRY%<group>
// (MixAll.getRetryTopic).
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic is the dead-letter topic of a consumer group: %DLQ%<group>
// (MixAll.getDLQTopic).
func DLQTopic(group string) string { return DLQTopicPrefix + group }

// ReplyTopic is the request-reply topic of a cluster: <cluster>_REPLY_TOPIC
// (MixAll.getReplyTopic).
func ReplyTopic(cluster string) string { return cluster + ReplyTopicSuffix }

// IsRetryTopic reports whether topic is a group's retry topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, RetryTopicPrefix) }

// IsDLQTopic reports whether topic is a group's dead-letter topic.
func IsDLQTopic(topic string) bool { return strings.HasPrefix(topic, DLQTopicPrefix) }

// RetryTopicGroup returns the group of a retry topic, and "", false for
// other topics.
func RetryTopicGroup(topic string) (group string, ok bool) {
	if group, ok = strings.CutPrefix(topic, RetryTopicPrefix); !ok {
		return "", false
	}
	return group, true
}
