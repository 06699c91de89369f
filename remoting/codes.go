package remoting

// Request codes (apache/rocketmq 4.9.8 common/protocol/RequestCode.java, 5.3.3 additions marked).
const (
	SendMessage                      int32 = 10
	PullMessage                      int32 = 11
	QueryMessage                     int32 = 12
	QueryConsumerOffset              int32 = 14
	UpdateConsumerOffset             int32 = 15
	UpdateAndCreateTopic             int32 = 17
	GetAllTopicConfig                int32 = 21
	UpdateBrokerConfig               int32 = 25
	GetBrokerConfig                  int32 = 26
	GetBrokerRuntimeInfo             int32 = 28
	SearchOffsetByTimestamp          int32 = 29
	GetMaxOffset                     int32 = 30
	GetMinOffset                     int32 = 31
	GetEarliestMsgStoretime          int32 = 32
	ViewMessageByID                  int32 = 33
	HeartBeat                        int32 = 34
	UnregisterClient                 int32 = 35
	ConsumerSendMsgBack              int32 = 36
	EndTransaction                   int32 = 37
	GetConsumerListByGroup           int32 = 38
	CheckTransactionState            int32 = 39
	NotifyConsumerIdsChanged         int32 = 40
	LockBatchMQ                      int32 = 41
	UnlockBatchMQ                    int32 = 42
	GetAllConsumerOffset             int32 = 43
	GetAllDelayOffset                int32 = 45
	CheckClientConfig                int32 = 46
	PutKVConfig                      int32 = 100
	GetKVConfig                      int32 = 101
	DeleteKVConfig                   int32 = 102
	RegisterBroker                   int32 = 103
	UnregisterBroker                 int32 = 104
	GetRouteinfoByTopic              int32 = 105
	GetBrokerClusterInfo             int32 = 106
	UpdateAndCreateSubscriptionGroup int32 = 200
	GetAllSubscriptionGroupConfig    int32 = 201
	GetTopicStatsInfo                int32 = 202
	GetConsumerConnectionList        int32 = 203
	GetProducerConnectionList        int32 = 204
	WipeWritePermOfBroker            int32 = 205
	GetAllTopicListFromNameserver    int32 = 206
	DeleteSubscriptionGroup          int32 = 207
	GetConsumeStats                  int32 = 208
	DeleteTopicInBroker              int32 = 215
	DeleteTopicInNamesrv             int32 = 216
	RegisterTopicInNamesrv           int32 = 217
	GetKVListByNamespace             int32 = 219
	ResetConsumerClientOffset        int32 = 220
	GetConsumerStatusFromClient      int32 = 221
	InvokeBrokerToResetOffset        int32 = 222
	InvokeBrokerToGetConsumerStatus  int32 = 223
	GetTopicsByCluster               int32 = 224
	QueryTopicConsumeByWho           int32 = 300
	GetSystemTopicListFromNS         int32 = 304
	GetSystemTopicListFromBroker     int32 = 305
	GetConsumerRunningInfo           int32 = 307
	ConsumeMessageDirectly           int32 = 309
	SendMessageV2                    int32 = 310
	GetBrokerConsumeStats            int32 = 317
	SendBatchMessage                 int32 = 320
	QueryConsumeQueue                int32 = 321
	QueryDataVersion                 int32 = 322
	SendReplyMessage                 int32 = 324
	SendReplyMessageV2               int32 = 325
	PushReplyMessageToClient         int32 = 326
	AddWritePermOfBroker             int32 = 327
	GetTopicConfig                   int32 = 351
	GetSubscriptionGroupConfig       int32 = 352
	// The 5.3.3 batch and group admin codes (AdminBrokerProcessor).
	UpdateAndCreateTopicList             int32 = 18
	UpdateAndCreateSubscriptionGroupList int32 = 225
	QueryTopicsByConsumer                int32 = 343
	QuerySubscriptionByConsumer          int32 = 345
	UpdateAndGetGroupForbidden           int32 = 353
	LitePullMessage                      int32 = 361
	RecallMessage                        int32 = 370
	// ACL 2.0 (5.3.3 RequestCode.AUTH_*; package auth).
	AuthCreateUser int32 = 3001
	AuthUpdateUser int32 = 3002
	AuthDeleteUser int32 = 3003
	AuthGetUser    int32 = 3004
	AuthListUser   int32 = 3005
	AuthCreateACL  int32 = 3006
	AuthUpdateACL  int32 = 3007
	AuthDeleteACL  int32 = 3008
	AuthGetACL     int32 = 3009
	AuthListACL    int32 = 3010
)

// Response codes (RemotingSysResponseCode.java, ResponseCode.java).
const (
	Success                   int32 = 0
	SystemError               int32 = 1
	SystemBusy                int32 = 2
	RequestCodeNotSupported   int32 = 3
	TransactionFailed         int32 = 4
	FlushDiskTimeout          int32 = 10
	SlaveNotAvailable         int32 = 11
	FlushSlaveTimeout         int32 = 12
	MessageIllegal            int32 = 13
	ServiceNotAvailable       int32 = 14
	VersionNotSupported       int32 = 15
	NoPermission              int32 = 16
	TopicNotExist             int32 = 17
	TopicExistAlready         int32 = 18
	PullNotFound              int32 = 19
	PullRetryImmediately      int32 = 20
	PullOffsetMoved           int32 = 21
	QueryNotFound             int32 = 22
	SubscriptionParseFailed   int32 = 23
	SubscriptionNotExist      int32 = 24
	SubscriptionNotLatest     int32 = 25
	SubscriptionGroupNotExist int32 = 26
	FilterDataNotExist        int32 = 27
	FilterDataNotLatest       int32 = 28
	InvalidParameter          int32 = 29
	TransactionShouldCommit   int32 = 200
	TransactionShouldRollback int32 = 201
	TransactionStateUnknow    int32 = 202
	ConsumerNotOnline         int32 = 206
	IllegalOperation          int32 = 604
)

// Flag bits of RemotingCommand.flag.
const (
	FlagResponse int32 = 1 << 0
	FlagOneway   int32 = 1 << 1
)

// Serialize types carried in the top byte of the header-length word.
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)

// Version is the MQVersion ordinal this server reports (V4_9_8).
const Version = 409

// ACL request and response codes (4.9.8 RequestCode.java, ResponseCode.java).
const (
	UpdateAndCreateACLConfig           int32 = 50
	DeleteACLConfig                    int32 = 51
	GetBrokerClusterACLInfo            int32 = 52
	UpdateGlobalWhiteAddrsConfig       int32 = 53
	UpdateAndCreateACLConfigFailed     int32 = 209
	DeleteACLConfigFailed              int32 = 210
	UpdateGlobalWhiteAddrsConfigFailed int32 = 211
)

// sendStatuses are the client SendStatus names of the send response codes
// that mean "stored" (4.9.8 MQClientAPIImpl.processSendResponse).
var sendStatuses = map[int32]string{
	Success:           "SEND_OK",
	FlushDiskTimeout:  "FLUSH_DISK_TIMEOUT",
	FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	SlaveNotAvailable: "SLAVE_NOT_AVAILABLE",
}

// SendStatus maps a send response code to the client's SendStatus; ok is
// false for the codes a client treats as failures.
func SendStatus(code int32) (status string, ok bool) {
	status, ok = sendStatuses[code]
	return status, ok
}
