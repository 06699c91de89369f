// Package admin is the library behind `rmq admin`: the stock mqadmin
// commands spoken directly over the remoting protocol (remoting.Client), for
// any RocketMQ 4.x-compatible name server and broker, with no JVM.
//
// One file per command family: topic.go (updateTopic, deleteTopic,
// topicList, topicRoute, topicStatus), cluster.go (clusterList,
// brokerStatus), group.go (updateSubGroup, deleteSubGroup,
// consumerProgress, consumerConnection), message.go (queryMsgById,
// queryMsgByKey, sendMessage, consumeMessage, printMsg), config.go
// (getBrokerConfig, updateBrokerConfig) and timer.go (timerStatus,
// recallMessage). Each operation returns a result value that prints as the
// stock table (Print… helpers, output.go) or as JSON (WriteJSON).
// sendpull.go holds the send and pull request builders that the load
// generator (package bench) shares.
//
// Errors name the peer, the request and the answer:
//
//	broker 127.0.0.1:10911 answered GET_BROKER_CONFIG(26) with CODE 3 (REQUEST_CODE_NOT_SUPPORTED) DESC:  request type 26 not supported
//
// # Bodies written by fastjson
//
// Java brokers and name servers serialize maps with non-string keys in
// fastjson's own form, which is not JSON:
//
//	Map<Long,String>          {0:"127.0.0.1:10911"}
//	Map<MessageQueue,V>       {{"brokerName":"b","queueId":0,"topic":"T"}:{...}}
//
// Every body is decoded through rmq/internal/fastjson, which reads both, and
// MessageQueue-keyed maps (TopicStatsTable, ConsumeStats,
// ConsumerRunningInfo.mqTable) decode as fastjson.Entries.
//
// # Message ids and records
//
// queryMsgById decodes the offset message id (message.DecodeMessageID) to
// find the broker and the commitlog offset, then asks that broker
// (VIEW_MESSAGE_BY_ID). Pull, query and view bodies are stored records back
// to back, decoded by DecodeMessages through message.DecodeRecord; the byte
// layouts of both are documented in package message.
//
// # Timer status
//
// timerStatus reads the timer keys of GET_BROKER_RUNTIME_INFO that a 5.x
// broker reports (timerCongestNum, timerReadBehind, timerOffsetBehind,
// timerEnqueueTps, timerDequeueTps; see timer.go), so it works unchanged
// against a Java 5.x broker; a broker without them has no timer wheel.
package admin
