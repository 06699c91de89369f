package broker

import "github.com/rmqio/rmq/remoting"

// coreProcessors maps the request codes served by the core of the broker:
// sends, pulls, offset/time/view queries and the broker config.
func (b *Broker) coreProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.SendMessage:        b.processSend,
		remoting.SendMessageV2:      b.processSend,
		remoting.SendBatchMessage:   b.processSend,
		remoting.SendReplyMessage:   b.processReply,
		remoting.SendReplyMessageV2: b.processReply,

		remoting.ConsumerSendMsgBack: b.processConsumerSendMsgBack,
		remoting.RecallMessage:       b.processRecallMessage,

		remoting.PullMessage:     b.processPullRequest,
		remoting.LitePullMessage: b.processPullRequest,

		remoting.GetMaxOffset:            b.processGetMaxOffset,
		remoting.GetMinOffset:            b.processGetMinOffset,
		remoting.SearchOffsetByTimestamp: b.processSearchOffset,
		remoting.GetEarliestMsgStoretime: b.processEarliestMsgStoreTime,
		remoting.ViewMessageByID:         b.processViewMessageByID,
		remoting.QueryConsumerOffset:     b.processQueryConsumerOffset,

		remoting.GetBrokerConfig:    b.processGetBrokerConfig,
		remoting.UpdateBrokerConfig: b.processUpdateBrokerConfig,

		remoting.NotifyMinBrokerIDChange: b.processNotifyMinBrokerIDChange,
		remoting.NotifyBrokerRoleChanged: b.processNotifyBrokerRoleChanged, // role.go, controller mode
		remoting.GetBrokerEpochCache:     b.processGetBrokerEpochCache,

		remoting.GetAllDelayOffset:            b.processGetAllDelayOffset,
		remoting.GetSystemTopicListFromBroker: b.processGetSystemTopicListFromBroker,
		remoting.CleanUnusedTopic:             b.processCleanUnusedTopic,

		remoting.GetBrokerHaStatus: b.processGetBrokerHAStatus, // ha_status.go
	}
}
