package broker

import (
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Light message queues (LMQ) in the broker, as 4.9.8 with enableLmq
// (BrokerController picks the Lmq* managers):
//
//   - every %LMQ% topic has a synthetic config, one read-write queue, never
//     stored (LmqTopicConfigManager), so a consumer pulls
//     MessageQueue("%LMQ%a", brokerName, 0) from the broker address with
//     no topic created and no name-server route, and an update of such a
//     topic is dropped;
//   - every %LMQ% group has the default group config, never stored
//     (LmqSubscriptionGroupManager);
//   - a %LMQ% group's offset of a topic is one number whatever queue id it
//     names (LmqConsumerOffsetManager's topic@group key). Java keeps those
//     offsets in config/lmqConsumerOffset.json (and with LMQ on it moves
//     the other offsets there too); rmq keeps them in consumerOffset.json
//     with the others, under queue 0, so switching LMQ off and on loses
//     nothing;
//   - the store multi-dispatches (store/lmq.go, with enableMultiDispatch) and
//     wakes the long polls of each LMQ queue it writes to, through
//     onDispatch as for any queue (LmqPullRequestHoldService,
//     notifyMessageArrive4MultiQueue);
//   - past maxLmqConsumeQueueNum LMQ queues a pull of an LMQ topic gets
//     SYSTEM_ERROR "store getMessage return null" (getMessage returns null
//     then), and a send naming LMQ queues the stock
//     LMQ_CONSUME_QUEUE_NUM_EXCEEDED answer (lmqExceededRemark).

// lmqTopicConfig is LmqTopicConfigManager.simpleLmqTopicConfig.
func lmqTopicConfig(topic string) topicgroup.TopicConfig {
	return topicgroup.TopicConfig{
		TopicName: topic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: filterTypeSingleTag,
	}
}

// lmqExceededRemark is SendMessageProcessor's remark for
// LMQ_CONSUME_QUEUE_NUM_EXCEEDED (code SYSTEM_ERROR).
const lmqExceededRemark = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq consumeQueue num exceed maxLmqConsumeQueueNum config num, default limit 2w."

// lmqPullRefused is DefaultMessageStore.getMessage's null for an LMQ topic
// while the LMQ queues are over their limit.
func (b *Broker) lmqPullRefused(topic string) bool {
	return b.opts.EnableLmq && message.IsLmq(topic) && b.store.LmqQueueNumExceeded()
}

// lmqStoreOptions passes the LMQ keys to the store.
func (o *Options) lmqStoreOptions(so *store.Options) {
	so.EnableLmq, so.EnableMultiDispatch, so.MaxLmqConsumeQueueNum = o.EnableLmq, o.EnableMultiDispatch, o.MaxLmqConsumeQueueNum
}

// enableLmq switches the managers to their LMQ behaviour (before serving).
func enableLmq(opts *Options, topics *TopicConfigManager, cs *clients.Service) {
	if !opts.EnableLmq {
		return
	}
	topics.lmq = true
	cs.SubGroups.Lmq = true
	cs.Offsets.Lmq = true
}
