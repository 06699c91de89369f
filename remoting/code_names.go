package remoting

// Request codes served by rmq that the other code files do not name: the
// 5.x timer admin requests and two stats requests (RequestCode.java).
const (
	GetTimerCheckPoint  int32 = 60
	GetTimerMetrics     int32 = 61
	ViewBrokerStatsData int32 = 315
	GetAllProducerInfo  int32 = 328
)

// requestCodeNames are the stock names (RequestCode.java of 4.9.8 and
// 5.3.3) of the request codes rmq sends or serves. They are the one place
// the names are kept: logs, metrics labels and docs/compatibility.md (the
// generator fails on a served code without a name) read them from here.
var requestCodeNames = map[int32]string{
	SendMessage:                      "SEND_MESSAGE",
	PullMessage:                      "PULL_MESSAGE",
	QueryMessage:                     "QUERY_MESSAGE",
	QueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	GetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	UpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                  "GET_BROKER_CONFIG",
	GetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                     "GET_MAX_OFFSET",
	GetMinOffset:                     "GET_MIN_OFFSET",
	GetEarliestMsgStoretime:          "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	HeartBeat:                        "HEART_BEAT",
	UnregisterClient:                 "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:              "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                   "END_TRANSACTION",
	GetConsumerListByGroup:           "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:            "CHECK_TRANSACTION_STATE",
	NotifyConsumerIdsChanged:         "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                      "LOCK_BATCH_MQ",
	UnlockBatchMQ:                    "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:             "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:                "GET_ALL_DELAY_OFFSET",
	CheckClientConfig:                "CHECK_CLIENT_CONFIG",
	UpdateAndCreateACLConfig:         "UPDATE_AND_CREATE_ACL_CONFIG",
	DeleteACLConfig:                  "DELETE_ACL_CONFIG",
	GetBrokerClusterACLInfo:          "GET_BROKER_CLUSTER_ACL_INFO",
	UpdateGlobalWhiteAddrsConfig:     "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetTimerCheckPoint:               "GET_TIMER_CHECK_POINT",
	GetTimerMetrics:                  "GET_TIMER_METRICS",
	PutKVConfig:                      "PUT_KV_CONFIG",
	GetKVConfig:                      "GET_KV_CONFIG",
	DeleteKVConfig:                   "DELETE_KV_CONFIG",
	RegisterBroker:                   "REGISTER_BROKER",
	UnregisterBroker:                 "UNREGISTER_BROKER",
	GetRouteinfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:            "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameserver:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                  "GET_CONSUME_STATS",
	DeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv:             "DELETE_TOPIC_IN_NAMESRV",
	RegisterTopicInNamesrv:           "REGISTER_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:             "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:        "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:      "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:               "GET_TOPICS_BY_CLUSTER",
	QueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	QueryConsumeTimeSpan:             "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromNS:         "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker:     "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	CleanExpiredConsumeQueue:         "CLEAN_EXPIRED_CONSUMEQUEUE",
	GetConsumerRunningInfo:           "GET_CONSUMER_RUNNING_INFO",
	QueryCorrectionOffset:            "QUERY_CORRECTION_OFFSET",
	ConsumeMessageDirectly:           "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                    "SEND_MESSAGE_V2",
	GetUnitTopicList:                 "GET_UNIT_TOPIC_LIST",
	GetHasUnitSubTopicList:           "GET_HAS_UNIT_SUB_TOPIC_LIST",
	GetHasUnitSubUnunitTopicList:     "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
	CloneGroupOffset:                 "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData:              "VIEW_BROKER_STATS_DATA",
	CleanUnusedTopic:                 "CLEAN_UNUSED_TOPIC",
	GetBrokerConsumeStats:            "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:              "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:                 "GET_NAMESRV_CONFIG",
	SendBatchMessage:                 "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	QueryDataVersion:                 "QUERY_DATA_VERSION",
	ResumeCheckHalfMessage:           "RESUME_CHECK_HALF_MESSAGE",
	SendReplyMessage:                 "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:               "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:         "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker:             "ADD_WRITE_PERM_OF_BROKER",
	GetAllProducerInfo:               "GET_ALL_PRODUCER_INFO",
	DeleteExpiredCommitLog:           "DELETE_EXPIRED_COMMITLOG",
	GetTopicConfig:                   "GET_TOPIC_CONFIG",
	GetSubscriptionGroupConfig:       "GET_SUBSCRIPTIONGROUP_CONFIG",
	LitePullMessage:                  "LITE_PULL_MESSAGE",
	RecallMessage:                    "RECALL_MESSAGE",
	QueryAssignment:                  "QUERY_ASSIGNMENT",
	SetMessageRequestMode:            "SET_MESSAGE_REQUEST_MODE",
	GetAllMessageRequestMode:         "GET_ALL_MESSAGE_REQUEST_MODE",
	PopMessage:                       "POP_MESSAGE",
	AckMessage:                       "ACK_MESSAGE",
	BatchAckMessage:                  "BATCH_ACK_MESSAGE",
	PeekMessage:                      "PEEK_MESSAGE",
	ChangeMessageInvisibleTime:       "CHANGE_MESSAGE_INVISIBLETIME",
	Notification:                     "NOTIFICATION",
	PollingInfo:                      "POLLING_INFO",
}

// RequestCodeName is the stock name of request code code, and whether it
// has one.
func RequestCodeName(code int32) (string, bool) {
	n, ok := requestCodeNames[code]
	return n, ok
}
