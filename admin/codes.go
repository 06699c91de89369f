package admin

import (
	"fmt"

	"github.com/rmqio/rmq/remoting"
)

// GetTimerCheckPoint and GetTimerMetrics are the 5.x timer admin codes.
const (
	GetTimerCheckPoint int32 = 60
	GetTimerMetrics    int32 = 61
)

var requestNames = map[int32]string{
	remoting.SendMessage:                      "SEND_MESSAGE",
	remoting.PullMessage:                      "PULL_MESSAGE",
	remoting.QueryMessage:                     "QUERY_MESSAGE",
	remoting.QueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	remoting.UpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	remoting.UpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	remoting.GetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	remoting.UpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	remoting.GetBrokerConfig:                  "GET_BROKER_CONFIG",
	remoting.GetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	remoting.SearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	remoting.GetMaxOffset:                     "GET_MAX_OFFSET",
	remoting.GetMinOffset:                     "GET_MIN_OFFSET",
	remoting.GetEarliestMsgStoretime:          "GET_EARLIEST_MSG_STORETIME",
	remoting.ViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	remoting.HeartBeat:                        "HEART_BEAT",
	remoting.UnregisterClient:                 "UNREGISTER_CLIENT",
	remoting.PutKVConfig:                      "PUT_KV_CONFIG",
	remoting.GetKVConfig:                      "GET_KV_CONFIG",
	remoting.DeleteKVConfig:                   "DELETE_KV_CONFIG",
	remoting.GetRouteinfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	remoting.GetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	remoting.UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	remoting.GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	remoting.GetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	remoting.GetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	remoting.GetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	remoting.GetAllTopicListFromNameserver:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	remoting.DeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	remoting.GetConsumeStats:                  "GET_CONSUME_STATS",
	remoting.DeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	remoting.DeleteTopicInNamesrv:             "DELETE_TOPIC_IN_NAMESRV",
	remoting.QueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	remoting.SendMessageV2:                    "SEND_MESSAGE_V2",
	remoting.SendBatchMessage:                 "SEND_BATCH_MESSAGE",
	remoting.RecallMessage:                    "RECALL_MESSAGE",
	remoting.InvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	remoting.InvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	remoting.CloneGroupOffset:                 "CLONE_GROUP_OFFSET",
	remoting.QueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	remoting.GetNamesrvConfig:                 "GET_NAMESRV_CONFIG",
	remoting.UpdateNamesrvConfig:              "UPDATE_NAMESRV_CONFIG",
	remoting.UpdateAndCreateACLConfig:         "UPDATE_AND_CREATE_ACL_CONFIG",
	remoting.DeleteACLConfig:                  "DELETE_ACL_CONFIG",
	remoting.GetBrokerClusterACLInfo:          "GET_BROKER_CLUSTER_ACL_INFO",
	remoting.UpdateGlobalWhiteAddrsConfig:     "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetTimerCheckPoint:                        "GET_TIMER_CHECK_POINT",
	GetTimerMetrics:                           "GET_TIMER_METRICS",
}

var responseNames = map[int32]string{
	remoting.Success:                   "SUCCESS",
	remoting.SystemError:               "SYSTEM_ERROR",
	remoting.SystemBusy:                "SYSTEM_BUSY",
	remoting.RequestCodeNotSupported:   "REQUEST_CODE_NOT_SUPPORTED",
	remoting.TransactionFailed:         "TRANSACTION_FAILED",
	remoting.FlushDiskTimeout:          "FLUSH_DISK_TIMEOUT",
	remoting.SlaveNotAvailable:         "SLAVE_NOT_AVAILABLE",
	remoting.FlushSlaveTimeout:         "FLUSH_SLAVE_TIMEOUT",
	remoting.MessageIllegal:            "MESSAGE_ILLEGAL",
	remoting.ServiceNotAvailable:       "SERVICE_NOT_AVAILABLE",
	remoting.VersionNotSupported:       "VERSION_NOT_SUPPORTED",
	remoting.NoPermission:              "NO_PERMISSION",
	remoting.TopicNotExist:             "TOPIC_NOT_EXIST",
	remoting.TopicExistAlready:         "TOPIC_EXIST_ALREADY",
	remoting.PullNotFound:              "PULL_NOT_FOUND",
	remoting.PullRetryImmediately:      "PULL_RETRY_IMMEDIATELY",
	remoting.PullOffsetMoved:           "PULL_OFFSET_MOVED",
	remoting.QueryNotFound:             "QUERY_NOT_FOUND",
	remoting.SubscriptionParseFailed:   "SUBSCRIPTION_PARSE_FAILED",
	remoting.SubscriptionNotExist:      "SUBSCRIPTION_NOT_EXIST",
	remoting.SubscriptionNotLatest:     "SUBSCRIPTION_NOT_LATEST",
	remoting.SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST",
	remoting.InvalidParameter:          "INVALID_PARAMETER",
	remoting.ConsumerNotOnline:         "CONSUMER_NOT_ONLINE",
	207:                                "CONSUME_MSG_TIMEOUT",
	208:                                "NO_MESSAGE",
	215:                                "FLOW_CONTROL",
	remoting.IllegalOperation:          "ILLEGAL_OPERATION",
}

// RequestName renders a request code as "NAME(code)".
func RequestName(code int32) string {
	if n, ok := requestNames[code]; ok {
		return fmt.Sprintf("%s(%d)", n, code)
	}
	return fmt.Sprintf("request(%d)", code)
}

// ResponseName is the stock name of a response code, "UNKNOWN" if it has none.
func ResponseName(code int32) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return "UNKNOWN"
}
