package broker

import (
	"os"
	"runtime"
)

// StockKeys are the stock 4.9.8 broker keys (BrokerConfig, MessageStoreConfig,
// NettyServerConfig, NettyClientConfig) that rmq accepts, keeps, prints
// (-p, GET_BROKER_CONFIG), lets UPDATE_BROKER_CONFIG change and persist, and
// does not act on: each one's reason is in inertKeyReasons, and
// docs/compatibility.md shows it. A stock config file therefore loads with
// no warning and round-trips through mqadmin updateBrokerConfig /
// getBrokerConfig unchanged; a key rmq acts on is an Options field instead.
// The defaults are the stock ones (cpu = runtime.NumCPU()).
type StockKeys struct {
	StartAcceptSendRequestTimeStamp          int64  `conf:"startAcceptSendRequestTimeStamp"`
	ConsumerFallbehindThreshold              int64  `conf:"consumerFallbehindThreshold"`
	DisableConsumeIfConsumerReadSlowly       bool   `conf:"disableConsumeIfConsumerReadSlowly"`
	RegisterBrokerTimeoutMills               int    `conf:"registerBrokerTimeoutMills"`
	TransferMsgByHeap                        bool   `conf:"transferMsgByHeap"`
	MessageStorePlugIn                       string `conf:"messageStorePlugIn"`
	HighSpeedMode                            bool   `conf:"highSpeedMode"`
	RocketmqHome                             string `conf:"rocketmqHome"`
	PutMessageFutureThreadPoolNums           int    `conf:"putMessageFutureThreadPoolNums"`
	ProcessReplyMessageThreadPoolNums        int    `conf:"processReplyMessageThreadPoolNums"`
	QueryMessageThreadPoolNums               int    `conf:"queryMessageThreadPoolNums"`
	AdminBrokerThreadPoolNums                int    `conf:"adminBrokerThreadPoolNums"`
	FlushConsumerOffsetHistoryInterval       int    `conf:"flushConsumerOffsetHistoryInterval"`
	FetchNamesrvAddrByAddressServer          bool   `conf:"fetchNamesrvAddrByAddressServer"`
	PutThreadPoolQueueCapacity               int    `conf:"putThreadPoolQueueCapacity"`
	ReplyThreadPoolQueueCapacity             int    `conf:"replyThreadPoolQueueCapacity"`
	QueryThreadPoolQueueCapacity             int    `conf:"queryThreadPoolQueueCapacity"`
	FilterServerNums                         int    `conf:"filterServerNums"`
	ClientManageThreadPoolNums               int    `conf:"clientManageThreadPoolNums"`
	CommercialEnable                         bool   `conf:"commercialEnable"`
	CommercialTimerCount                     int    `conf:"commercialTimerCount"`
	CommercialTransCount                     int    `conf:"commercialTransCount"`
	CommercialBigCount                       int    `conf:"commercialBigCount"`
	MaxDelayTime                             int    `conf:"maxDelayTime"`
	ClientManagerThreadPoolQueueCapacity     int    `conf:"clientManagerThreadPoolQueueCapacity"`
	ConsumerManagerThreadPoolQueueCapacity   int    `conf:"consumerManagerThreadPoolQueueCapacity"`
	ConsumerManageThreadPoolNums             int    `conf:"consumerManageThreadPoolNums"`
	CommercialBaseCount                      int    `conf:"commercialBaseCount"`
	EnableCalcFilterBitMap                   bool   `conf:"enableCalcFilterBitMap"`
	ExpectConsumerNumUseFilter               int    `conf:"expectConsumerNumUseFilter"`
	MaxErrorRateOfBloomFilter                int    `conf:"maxErrorRateOfBloomFilter"`
	FilterDataCleanTimeSpan                  int64  `conf:"filterDataCleanTimeSpan"`
	CompressedRegister                       bool   `conf:"compressedRegister"`
	ForceRegister                            bool   `conf:"forceRegister"`
	EnableDetailStat                         bool   `conf:"enableDetailStat"`
	AutoDeleteUnusedStats                    bool   `conf:"autoDeleteUnusedStats"`
	IsolateLogEnable                         bool   `conf:"isolateLogEnable"`
	DebugLockEnable                          bool   `conf:"debugLockEnable"`
	DuplicationEnable                        bool   `conf:"duplicationEnable"`
	DiskFallRecorded                         bool   `conf:"diskFallRecorded"`
	WarmMapedFileEnable                      bool   `conf:"warmMapedFileEnable"`
	EnableConsumeQueueExt                    bool   `conf:"enableConsumeQueueExt"`
	MappedFileSizeConsumeQueueExt            int    `conf:"mappedFileSizeConsumeQueueExt"`
	BitMapLengthConsumeQueueExt              int    `conf:"bitMapLengthConsumeQueueExt"`
	FlushIntervalConsumeQueue                int    `conf:"flushIntervalConsumeQueue"`
	PutMsgIndexHightWater                    int    `conf:"putMsgIndexHightWater"`
	CheckCRCOnRecover                        bool   `conf:"checkCRCOnRecover"`
	StorePathDLedgerCommitLog                string `conf:"storePathDLedgerCommitLog"`
	FlushCommitLogLeastPages                 int    `conf:"flushCommitLogLeastPages"`
	FlushConsumeQueueLeastPages              int    `conf:"flushConsumeQueueLeastPages"`
	FlushCommitLogThoroughInterval           int    `conf:"flushCommitLogThoroughInterval"`
	FlushConsumeQueueThoroughInterval        int    `conf:"flushConsumeQueueThoroughInterval"`
	MaxMsgsNumBatch                          int    `conf:"maxMsgsNumBatch"`
	MessageIndexSafe                         bool   `conf:"messageIndexSafe"`
	FlushCommitLogTimed                      bool   `conf:"flushCommitLogTimed"`
	FlushLeastPagesWhenWarmMapedFile         int    `conf:"flushLeastPagesWhenWarmMapedFile"`
	TransientStorePoolEnable                 bool   `conf:"transientStorePoolEnable"`
	TransientStorePoolSize                   int    `conf:"transientStorePoolSize"`
	CommitIntervalCommitLog                  int    `conf:"commitIntervalCommitLog"`
	FastFailIfNoBufferInStorePool            bool   `conf:"fastFailIfNoBufferInStorePool"`
	UseReentrantLockWhenPutMessage           bool   `conf:"useReentrantLockWhenPutMessage"`
	CommitCommitLogLeastPages                int    `conf:"commitCommitLogLeastPages"`
	CommitCommitLogThoroughInterval          int    `conf:"commitCommitLogThoroughInterval"`
	ReadOnlyCommitLogStorePaths              string `conf:"readOnlyCommitLogStorePaths"`
	DLegerGroup                              string `conf:"dLegerGroup"`
	DLegerPeers                              string `conf:"dLegerPeers"`
	DLegerSelfId                             string `conf:"dLegerSelfId"`
	EnableDLegerCommitLog                    bool   `conf:"enableDLegerCommitLog"`
	PreferredLeaderId                        string `conf:"preferredLeaderId"`
	EnableBatchPush                          bool   `conf:"enableBatchPush"`
	EnableScheduleMessageStats               bool   `conf:"enableScheduleMessageStats"`
	EnableScheduleAsyncDeliver               bool   `conf:"enableScheduleAsyncDeliver"`
	ScheduleAsyncDeliverMaxPendingLimit      int    `conf:"scheduleAsyncDeliverMaxPendingLimit"`
	ScheduleAsyncDeliverMaxResendNum2Blocked int    `conf:"scheduleAsyncDeliverMaxResendNum2Blocked"`
	ServerWorkerThreads                      int    `conf:"serverWorkerThreads"`
	ServerSelectorThreads                    int    `conf:"serverSelectorThreads"`
	ServerOnewaySemaphoreValue               int    `conf:"serverOnewaySemaphoreValue"`
	ServerCallbackExecutorThreads            int    `conf:"serverCallbackExecutorThreads"`
	ServerAsyncSemaphoreValue                int    `conf:"serverAsyncSemaphoreValue"`
	ServerSocketSndBufSize                   int    `conf:"serverSocketSndBufSize"`
	ServerSocketRcvBufSize                   int    `conf:"serverSocketRcvBufSize"`
	ServerSocketBacklog                      int    `conf:"serverSocketBacklog"`
	ServerPooledByteBufAllocatorEnable       bool   `conf:"serverPooledByteBufAllocatorEnable"`
	UseEpollNativeSelector                   bool   `conf:"useEpollNativeSelector"`
	WriteBufferLowWaterMark                  int    `conf:"writeBufferLowWaterMark"`
	WriteBufferHighWaterMark                 int    `conf:"writeBufferHighWaterMark"`
	ClientCloseSocketIfTimeout               bool   `conf:"clientCloseSocketIfTimeout"`
	ClientWorkerThreads                      int    `conf:"clientWorkerThreads"`
	ClientOnewaySemaphoreValue               int    `conf:"clientOnewaySemaphoreValue"`
	ConnectTimeoutMillis                     int    `conf:"connectTimeoutMillis"`
	ClientCallbackExecutorThreads            int    `conf:"clientCallbackExecutorThreads"`
	ChannelNotActiveInterval                 int64  `conf:"channelNotActiveInterval"`
	ClientAsyncSemaphoreValue                int    `conf:"clientAsyncSemaphoreValue"`
	ClientChannelMaxIdleTimeSeconds          int    `conf:"clientChannelMaxIdleTimeSeconds"`
	ClientSocketSndBufSize                   int    `conf:"clientSocketSndBufSize"`
	ClientSocketRcvBufSize                   int    `conf:"clientSocketRcvBufSize"`
	ClientPooledByteBufAllocatorEnable       bool   `conf:"clientPooledByteBufAllocatorEnable"`
	UseTLS                                   bool   `conf:"useTLS"`
}

func defaultStockKeys() StockKeys {
	cpu := runtime.NumCPU()
	return StockKeys{
		ConsumerFallbehindThreshold:              1024 * 1024 * 1024 * 16,
		RegisterBrokerTimeoutMills:               6000,
		TransferMsgByHeap:                        true,
		RocketmqHome:                             os.Getenv("ROCKETMQ_HOME"),
		PutMessageFutureThreadPoolNums:           min(cpu, 4),
		ProcessReplyMessageThreadPoolNums:        16 + 2*cpu,
		QueryMessageThreadPoolNums:               8 + cpu,
		AdminBrokerThreadPoolNums:                16,
		FlushConsumerOffsetHistoryInterval:       1000 * 60,
		PutThreadPoolQueueCapacity:               10000,
		ReplyThreadPoolQueueCapacity:             10000,
		QueryThreadPoolQueueCapacity:             20000,
		ClientManageThreadPoolNums:               32,
		CommercialEnable:                         true,
		CommercialTimerCount:                     1,
		CommercialTransCount:                     1,
		CommercialBigCount:                       1,
		MaxDelayTime:                             40,
		ClientManagerThreadPoolQueueCapacity:     1000000,
		ConsumerManagerThreadPoolQueueCapacity:   1000000,
		ConsumerManageThreadPoolNums:             32,
		CommercialBaseCount:                      1,
		ExpectConsumerNumUseFilter:               32,
		MaxErrorRateOfBloomFilter:                20,
		FilterDataCleanTimeSpan:                  24 * 3600 * 1000,
		ForceRegister:                            true,
		EnableDetailStat:                         true,
		DiskFallRecorded:                         true,
		MappedFileSizeConsumeQueueExt:            48 * 1024 * 1024,
		BitMapLengthConsumeQueueExt:              64,
		FlushIntervalConsumeQueue:                1000,
		PutMsgIndexHightWater:                    600000,
		CheckCRCOnRecover:                        true,
		FlushCommitLogLeastPages:                 4,
		FlushConsumeQueueLeastPages:              2,
		FlushCommitLogThoroughInterval:           1000 * 10,
		FlushConsumeQueueThoroughInterval:        1000 * 60,
		MaxMsgsNumBatch:                          64,
		FlushCommitLogTimed:                      true,
		FlushLeastPagesWhenWarmMapedFile:         1024 / 4 * 16,
		TransientStorePoolSize:                   5,
		CommitIntervalCommitLog:                  200,
		UseReentrantLockWhenPutMessage:           true,
		CommitCommitLogLeastPages:                4,
		CommitCommitLogThoroughInterval:          200,
		EnableScheduleMessageStats:               true,
		ScheduleAsyncDeliverMaxPendingLimit:      2000,
		ScheduleAsyncDeliverMaxResendNum2Blocked: 3,
		ServerWorkerThreads:                      8,
		ServerSelectorThreads:                    3,
		ServerOnewaySemaphoreValue:               256,
		ServerAsyncSemaphoreValue:                64,
		ServerSocketBacklog:                      1024,
		ServerPooledByteBufAllocatorEnable:       true,
		ClientCloseSocketIfTimeout:               true,
		ClientWorkerThreads:                      4,
		ClientOnewaySemaphoreValue:               65535,
		ConnectTimeoutMillis:                     3000,
		ClientCallbackExecutorThreads:            cpu,
		ChannelNotActiveInterval:                 1000 * 60,
		ClientAsyncSemaphoreValue:                65535,
		ClientChannelMaxIdleTimeSeconds:          120,
	}
}

// inertKeyReasons says, per key of StockKeys, why it changes nothing in rmq.
var inertKeyReasons = func() map[string]string {
	m := map[string]string{}
	for reason, keys := range map[string][]string{
		"sends are served from the start":                                                                              {"startAcceptSendRequestTimeStamp"},
		"rmq does not disable slow consumer groups":                                                                    {"consumerFallbehindThreshold", "disableConsumeIfConsumerReadSlowly"},
		"rmq registers with a fixed timeout, uncompressed, and always in full":                                         {"registerBrokerTimeoutMills", "compressedRegister", "forceRegister"},
		"pull replies are always written from the mapped store (zero copy); the choice is not client-visible":          {"transferMsgByHeap"},
		"rmq loads no message-store plug-ins":                                                                          {"messageStorePlugIn"},
		"no reader in stock 4.9.8 either":                                                                              {"highSpeedMode", "flushConsumerOffsetHistoryInterval", "filterServerNums", "commercialEnable", "commercialTimerCount", "commercialTransCount", "commercialBigCount", "maxDelayTime", "putMsgIndexHightWater", "channelNotActiveInterval", "clientPooledByteBufAllocatorEnable"},
		"rmq needs no home directory; the ACL file defaults to $ROCKETMQ_HOME/conf/plain_acl.yml from the environment": {"rocketmqHome"},
		"rmq serves each request on its connection's goroutine or a bounded pool sized from the CPU count; there is no per-kind executor to size": {"putMessageFutureThreadPoolNums", "processReplyMessageThreadPoolNums", "queryMessageThreadPoolNums", "adminBrokerThreadPoolNums", "clientManageThreadPoolNums", "consumerManageThreadPoolNums"},
		"rmq has no address server client; set namesrvAddr (or NAMESRV_ADDR)":                                                                     {"fetchNamesrvAddrByAddressServer"},
		"no queue for these kinds (only send, pull, heartbeat and end-transaction wait, in lanes); back-pressure is serverMaxInflightBytes":       {"putThreadPoolQueueCapacity", "replyThreadPoolQueueCapacity", "queryThreadPoolQueueCapacity", "clientManagerThreadPoolQueueCapacity", "consumerManagerThreadPoolQueueCapacity"},
		"Java stats hooks; rmq keeps its own statistics (brokerstats)":                                                                            {"commercialBaseCount", "enableDetailStat", "autoDeleteUnusedStats", "enableScheduleMessageStats"},
		"SQL92 filtering evaluates every message; there are no bloom-filter bitmaps":                                                              {"enableCalcFilterBitMap", "expectConsumerNumUseFilter", "maxErrorRateOfBloomFilter", "filterDataCleanTimeSpan", "enableConsumeQueueExt", "mappedFileSizeConsumeQueueExt", "bitMapLengthConsumeQueueExt"},
		"Java log layout; rmq logs with its log* keys":                                                                                            {"isolateLogEnable"},
		"rmq's put path has one writer lock of its own":                                                                                           {"debugLockEnable", "useReentrantLockWhenPutMessage"},
		"store internals of the Java recovery path with no rmq equivalent":                                                                        {"duplicationEnable", "diskFallRecorded"},
		"rmq pre-allocates new mapped files (fallocate) instead of touching pages":                                                                {"warmMapedFileEnable", "flushLeastPagesWhenWarmMapedFile"},
		"consume queues are flushed with the commitlog flush; no separate loop":                                                                   {"flushIntervalConsumeQueue", "flushConsumeQueueLeastPages", "flushConsumeQueueThoroughInterval"},
		"rmq always checks record CRCs on recovery":                                                                                               {"checkCRCOnRecover"},
		"rmq's store has no DLedger commitlog":                                                                                                    {"storePathDLedgerCommitLog", "dLegerGroup", "dLegerPeers", "dLegerSelfId", "enableDLegerCommitLog", "preferredLeaderId", "enableBatchPush"},
		"rmq's flush loop flushes everything written each flushIntervalCommitLog; no page thresholds":                                             {"flushCommitLogLeastPages", "flushCommitLogThoroughInterval", "flushCommitLogTimed"},
		"QUERY_MESSAGE caps each index query at 64 (store/index_service.go)":                                                                      {"maxMsgsNumBatch"},
		"the index is written by the dispatcher and recovered from the commitlog":                                                                 {"messageIndexSafe"},
		"rmq has no transient store pool (writes go to the mapped file)":                                                                          {"transientStorePoolEnable", "transientStorePoolSize", "commitIntervalCommitLog", "fastFailIfNoBufferInStorePool", "commitCommitLogLeastPages", "commitCommitLogThoroughInterval"},
		"rmq's store has one commitlog path (storePathCommitLog); no read-only extra paths":                                                       {"readOnlyCommitLogStorePaths"},
		"delay levels are delivered by the schedule service synchronously":                                                                        {"enableScheduleAsyncDeliver", "scheduleAsyncDeliverMaxPendingLimit", "scheduleAsyncDeliverMaxResendNum2Blocked"},
		"Netty server tuning; rmq's server is Go net (remoting/server.go)":                                                                        {"serverWorkerThreads", "serverSelectorThreads", "serverOnewaySemaphoreValue", "serverCallbackExecutorThreads", "serverAsyncSemaphoreValue", "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverSocketBacklog", "serverPooledByteBufAllocatorEnable", "useEpollNativeSelector", "writeBufferLowWaterMark", "writeBufferHighWaterMark"},
		"Netty client tuning of the broker's name-server client; rmq's client is Go net with fixed timeouts":                                      {"clientCloseSocketIfTimeout", "clientWorkerThreads", "clientOnewaySemaphoreValue", "connectTimeoutMillis", "clientCallbackExecutorThreads", "clientAsyncSemaphoreValue", "clientChannelMaxIdleTimeSeconds", "clientSocketSndBufSize", "clientSocketRcvBufSize"},
		"TLS to the name servers is set with the tls.* keys":                                                                                      {"useTLS"},
	} {
		for _, k := range keys {
			m[k] = reason
		}
	}
	return m
}()

// InertKeyReason returns why rmq accepts key without acting on it, and
// whether key is such a key.
func InertKeyReason(key string) (string, bool) {
	r, ok := inertKeyReasons[key]
	return r, ok
}
