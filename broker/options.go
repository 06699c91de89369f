package broker

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/replicas"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/timer"
	"github.com/rmqio/rmq/topicgroup"
)

// Options configures a Broker. `conf` tags are the Java broker.conf key names
// (BrokerConfig, MessageStoreConfig, NettyServerConfig).
type Options struct {
	BrokerClusterName          string `conf:"brokerClusterName"`
	BrokerName                 string `conf:"brokerName"`
	BrokerID                   int64  `conf:"brokerId"`
	NamesrvAddr                string `conf:"namesrvAddr"` // "host:port;host:port"
	ListenPort                 int    `conf:"listenPort"`  // VIP port: ListenPort-2; 0: both from the system at New (Addr, VIPAddr)
	BrokerIP1                  string `conf:"brokerIP1"`
	BrokerIP2                  string `conf:"brokerIP2"` // advertised in haServerAddr; brokerIP1 when empty
	StorePathRootDir           string `conf:"storePathRootDir"`
	FlushDiskType              string `conf:"flushDiskType"` // ASYNC_FLUSH | SYNC_FLUSH
	MappedFileSizeCommitLog    int64  `conf:"mappedFileSizeCommitLog"`
	MappedFileSizeConsumeQueue int64  `conf:"mappedFileSizeConsumeQueue"`
	FlushIntervalCommitLog     int    `conf:"flushIntervalCommitLog"` // ms
	SyncFlushTimeout           int    `conf:"syncFlushTimeout"`       // ms
	MaxMessageSize             int    `conf:"maxMessageSize"`
	// Multi-dispatch and light message queues (lmq.go, store/lmq.go),
	// read at start.
	EnableLmq                   bool   `conf:"enableLmq"`
	EnableMultiDispatch         bool   `conf:"enableMultiDispatch"`
	MaxLmqConsumeQueueNum       int    `conf:"maxLmqConsumeQueueNum"`
	AutoCreateTopicEnable       bool   `conf:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup bool   `conf:"autoCreateSubscriptionGroup"`
	DefaultTopicQueueNums       int32  `conf:"defaultTopicQueueNums"`
	RegisterNameServerPeriod    int    `conf:"registerNameServerPeriod"` // ms, clamped to 10–60 s
	LongPollingEnable           bool   `conf:"longPollingEnable"`
	ShortPollingTimeMills       int    `conf:"shortPollingTimeMills"`
	BrokerPermission            int32  `conf:"brokerPermission"`
	RegionID                    string `conf:"regionId"`
	TraceOn                     bool   `conf:"traceOn"`
	// TraceTopicEnable creates MsgTraceTopicName (one queue, a system topic)
	// at start; without it the trace topic is auto-created from TBW102 on
	// the first trace send.
	TraceTopicEnable  bool   `conf:"traceTopicEnable"`
	MsgTraceTopicName string `conf:"msgTraceTopicName"`
	// StoreReplyMessageEnable also stores request-reply replies on the reply
	// topic after pushing them to the requester.
	StoreReplyMessageEnable           bool `conf:"storeReplyMessageEnable"`
	MaxTransferCountOnMessageInMemory int  `conf:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInMemory int  `conf:"maxTransferBytesOnMessageInMemory"`
	// AccessMessageInMemoryMaxRatio is the share (percent) of physical memory
	// within which the newest commitlog bytes count as "in memory".
	AccessMessageInMemoryMaxRatio int `conf:"accessMessageInMemoryMaxRatio"`
	// MessageDelayLevel lists the 4.x delay levels ("1s 5s ... 2h"; units s, m, h, d).
	MessageDelayLevel string `conf:"messageDelayLevel"`
	// FlushDelayOffsetInterval is how often delayOffset.json is written (ms).
	FlushDelayOffsetInterval int `conf:"flushDelayOffsetInterval"`
	// Transactions: first check after TransactionTimeOut ms, then every
	// TransactionCheckInterval ms, at most TransactionCheckMax times. Zero
	// takes the stock default (6000, 60000, 15).
	TransactionTimeOut       int64 `conf:"transactionTimeOut"`
	TransactionCheckMax      int   `conf:"transactionCheckMax"`
	TransactionCheckInterval int64 `conf:"transactionCheckInterval"`
	// 5.x timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS).
	// With TimerWheelEnable false no timer store runs and timer sends are
	// refused as the 5.x broker refuses them (SYSTEM_ERROR).
	TimerWheelEnable       bool  `conf:"timerWheelEnable"`
	TimerPrecisionMs       int64 `conf:"timerPrecisionMs"`
	TimerMaxDelaySec       int64 `conf:"timerMaxDelaySec"`
	TimerRollWindowSlot    int64 `conf:"timerRollWindowSlot"` // 0: half the wheel
	TimerFlushIntervalMs   int   `conf:"timerFlushIntervalMs"`
	MappedFileSizeTimerLog int64 `conf:"mappedFileSizeTimerLog"`
	RecallMessageEnable    bool  `conf:"recallMessageEnable"`
	// DeliverCoalesceMs (rmq) paces the delivery rounds of delay levels and
	// timers (clock.Rounds): after a round that delivered, messages due
	// within this many ms wait for its end and go out together, so that a
	// stream of due messages wakes each consumer's held pull once per round
	// rather than once per message. A message due after a quiet spell goes
	// out at its due millisecond; none goes out early. 0: every due
	// millisecond is a round.
	DeliverCoalesceMs int64 `conf:"deliverCoalesceMs"`
	// SQL92 property filters (MessageSelector.bySql): with
	// EnablePropertyFilter false, non-tag pulls and CHECK_CLIENT_CONFIG are
	// refused as on the stock broker. FilterSupportRetry filters a group's
	// retry messages by its filter of their original topic.
	EnablePropertyFilter bool `conf:"enablePropertyFilter"`
	FilterSupportRetry   bool `conf:"filterSupportRetry"`
	// Key index for QUERY_MESSAGE (IndexFile).
	MessageIndexEnable bool `conf:"messageIndexEnable"`
	MaxHashSlotNum     int  `conf:"maxHashSlotNum"`
	MaxIndexNum        int  `conf:"maxIndexNum"`
	// AclEnable turns on the plain ACL (broker/broker.go, package acl); AclFile
	// is its plain_acl.yml (default: $ROCKETMQ_HOME/conf/plain_acl.yml, else
	// <storePathRootDir>/config/plain_acl.yml).
	AclEnable bool   `conf:"aclEnable"`
	AclFile   string `conf:"aclFile"`
	// AclConfigRequiresAdmin (rmq's own, off as in 4.9.8) makes the ACL
	// requests (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
	// GET_BROKER_CLUSTER_ACL_INFO, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG) need a
	// signed admin account: in stock any account may make itself admin.
	AclConfigRequiresAdmin bool `conf:"aclConfigRequiresAdmin"`
	// ACL 2.0 (5.3.3 AuthConfig; broker/auth.go, package auth): the two
	// checks switch on separately; the metadata providers must be set for
	// users and ACLs to be kept (<storePathRootDir>/config/auth.json);
	// whitelists are comma lists of request codes; the init user and the
	// inner client credential are JSON, created as super users.
	AuthenticationEnabled                bool   `conf:"authenticationEnabled"`
	AuthorizationEnabled                 bool   `conf:"authorizationEnabled"`
	AuthenticationProvider               string `conf:"authenticationProvider"`
	AuthorizationProvider                string `conf:"authorizationProvider"`
	AuthenticationMetadataProvider       string `conf:"authenticationMetadataProvider"`
	AuthorizationMetadataProvider        string `conf:"authorizationMetadataProvider"`
	AuthenticationWhitelist              string `conf:"authenticationWhitelist"`
	AuthorizationWhitelist               string `conf:"authorizationWhitelist"`
	InitAuthenticationUser               string `conf:"initAuthenticationUser"`
	InnerClientAuthenticationCredentials string `conf:"innerClientAuthenticationCredentials"`
	MigrateAuthFromV1Enabled             bool   `conf:"migrateAuthFromV1Enabled"`
	// The 5.x topic attribute message.type: EnableMixedMessageType lets a
	// topic be MIXED (BrokerConfig); EnableTopicMessageTypeCheck refuses a
	// send whose kind (normal, FIFO, delay, transactional) the topic's type
	// does not take, on every front end. The stock proxy checks by default
	// (ProxyConfig enableTopicMessageTypeCheck=true) and the stock broker's
	// own remoting port never does; so does rmq: the key also binds
	// grpcapi.Options (default true, the gRPC front end), and here it is
	// off by default, so that 4.x clients on untyped topics work as stock.
	EnableMixedMessageType      bool `conf:"enableMixedMessageType"`
	EnableTopicMessageTypeCheck bool `conf:"enableTopicMessageTypeCheck"`

	// RetentionConfig holds the retention and disk-protection keys
	// (store/cleanup.go); UPDATE_BROKER_CONFIG changes them live.
	RetentionConfig

	// BrokerRole is ASYNC_MASTER, SYNC_MASTER or SLAVE (role.go). A SLAVE
	// (brokerId > 0) refuses writes, serves pulls as 4.9.8 does, copies
	// its master's metadata (SlaveSynchronize) and runs no delay-level,
	// timer, transaction-check or POP revive service.
	BrokerRole string `conf:"brokerRole"`
	// SlaveReadEnable: a slave serves pulls and is suggested to consumers
	// (suggestWhichBrokerId); without it every pull answer suggests the
	// master (4.9.8 PullMessageProcessor). Changed live, as stock.
	SlaveReadEnable bool `conf:"slaveReadEnable"`
	// OffsetCheckInSlave: a slave answers PULL_OFFSET_MOVED with the
	// corrected offset instead of PULL_RETRY_IMMEDIATELY at the requested
	// one (its queues may just be behind the master's). Changed live.
	OffsetCheckInSlave bool `conf:"offsetCheckInSlave"`
	// HaMasterAddress, on a SLAVE, pins the master's HA address when it has
	// at least 6 characters: the address the name server answers at
	// registration is then not used (4.9.8 BrokerController.initialize).
	HaMasterAddress string `conf:"haMasterAddress"`
	// HAConfig holds the replication keys (broker/ha.go, store/ha).
	HAConfig
	// ActingMasterConfig holds the slave-acting-master keys (acting_master.go).
	ActingMasterConfig
	// Keys are the controller-mode keys (5.3.3 enableControllerMode;
	// broker/replicas): the role comes from the controller, not brokerRole.
	replicas.Keys
	// StorePathCommitLog is the commitlog directory (stock
	// MessageStoreConfig; empty: <storePathRootDir>/commitlog). A store
	// moved from a Java broker with a separate commitlog directory opens
	// with its records; stock's ","-separated multi-path form is refused.
	StorePathCommitLog string `conf:"storePathCommitLog"`
	// RejectTransactionMessage refuses half (transactional) messages with
	// NO_PERMISSION, as stock SendMessageProcessor does.
	RejectTransactionMessage bool `conf:"rejectTransactionMessage"`
	// ClusterTopicEnable / BrokerTopicEnable: the <cluster> and
	// <brokerName> system topics are readable and writable when set, else
	// only inheritable (stock TopicConfigManager).
	ClusterTopicEnable bool `conf:"clusterTopicEnable"`
	BrokerTopicEnable  bool `conf:"brokerTopicEnable"`
	// FlushConsumerOffsetInterval is how often consumerOffset.json is
	// written (ms): the commits a kill -9 can lose.
	FlushConsumerOffsetInterval int `conf:"flushConsumerOffsetInterval"`
	// DefaultQueryMaxNum replaces maxNum of a QUERY_MESSAGE by unique key
	// (ext _UNIQUE_KEY_QUERY=true), as stock QueryMessageProcessor.
	DefaultQueryMaxNum int `conf:"defaultQueryMaxNum"`
	// ConfigBlackList: the keys (";"-separated) UPDATE_BROKER_CONFIG refuses
	// with NO_PERMISSION, besides brokerConfigPath, rocketmqHome and
	// configBlackList itself.
	ConfigBlackList string `conf:"configBlackList"`
	// MaxTransfer*OnMessageInDisk cap a pull whose messages lie beyond the
	// in-memory window (accessMessageInMemoryMaxRatio), as stock
	// DefaultMessageStore.isTheBatchFull.
	MaxTransferBytesOnMessageInDisk int `conf:"maxTransferBytesOnMessageInDisk"`
	MaxTransferCountOnMessageInDisk int `conf:"maxTransferCountOnMessageInDisk"`
	// NotifyConsumerIdsChangedEnable gates every NOTIFY_CONSUMER_IDS_CHANGED
	// the broker sends (stock DefaultConsumerIdsChangeListener); a group's
	// own flag is checked as well.
	NotifyConsumerIdsChangedEnable bool `conf:"notifyConsumerIdsChangedEnable"`
	// StockKeys are the stock keys rmq keeps without acting on them.
	StockKeys
	// FastFailConfig and LaneConfig: back-pressure as stock (fastfail.go).
	FastFailConfig
	LaneConfig
	// SmallStore (rmq) is a store for tests and development: commitlog
	// files of SmallStoreCommitLogSize unless mappedFileSizeCommitLog is set
	// otherwise, small consume-queue and index files, no fallocate. It
	// uses a few MiB of disk instead of two 1 GiB segments.
	SmallStore bool `conf:"smallStore"`
	// ClockControlEnable (rmq, off by default) lets CLOCK_FAST_FORWARD
	// (remoting.ClockFastForward, `rmq admin fastForward`, mqadmin
	// fastForward) move the message clock ahead, so that tests in any
	// language skip delay levels, timers, transaction checks and POP
	// invisible time (delivery.go, broker/clockctl). With it on and no MessageClock
	// given, the message clock is a clock.Offset over the wall clock; off,
	// the request is refused and nothing else changes. Never on a broker
	// that serves real traffic: a jump cannot be undone.
	ClockControlEnable bool `conf:"clockControlEnable"`
	// TestPutStallMillis (rmq, 0 = off) is a test hook for clients' overload
	// paths in another process: the commitlog write of a message whose body
	// contains PutStallMarker waits this long, holding the put lock, so a
	// test saturates the broker on purpose (fastfail.go). SYNC_FLUSH only.
	TestPutStallMillis int `conf:"testPutStallMillis"`
	// CommitLogPageCacheKeep (rmq) is how many bytes of the commitlog
	// behind the flushed and dispatched positions stay in the page cache;
	// older pages are dropped from it once flushed, so that new records
	// reuse them (store.Options.PageCacheKeep). 0 leaves it to the kernel,
	// as the Java broker does. Default 2 GiB.
	CommitLogPageCacheKeep int64 `conf:"commitLogPageCacheKeep"`

	// ListenHost is the bind address of both broker ports (5.x
	// NettyServerConfig bindAddress; "0.0.0.0" by default).
	ListenHost string `conf:"bindAddress"`
	// ServerConfig holds the connection limits: idle timeout, connection
	// cap, in-flight budget.
	remoting.ServerConfig
	// MetricsConfig holds the HTTP endpoint's keys (broker.go).
	MetricsConfig
	// Logger is the process's logger, without a "component" field: the
	// broker adds "broker" and its store, timer, schedule and transaction
	// services their own names.
	Logger zerolog.Logger `conf:"-"`
	// StartOnlyKeys are the keys of the broker's process that Options does
	// not bind (the gRPC endpoint's, logging, the process's own): an
	// UPDATE_BROKER_CONFIG naming one is told to set it in the config file
	// instead of being told the key is unknown.
	StartOnlyKeys []string `conf:"-"`
	// ConfigFile is the config file the broker was started with (-c):
	// UPDATE_BROKER_CONFIG writes the keys it changes there (persistConfig).
	ConfigFile string `conf:"-"`
	// Clock drives every time-dependent decision (nil: the wall clock).
	Clock clock.Clock `conf:"-"`
	// MessageClock, when set, replaces Clock for the message timeline: store
	// timestamps, delay levels, timer messages and transaction check-backs.
	// Client liveness (heartbeats, locks), long polling, registration and
	// the runtime statistics stay on Clock. Package rmqtest runs it ahead of
	// the wall clock to fast-forward deliveries.
	MessageClock clock.Clock `conf:"-"`
	// VIPListenPort, when set with a non-zero ListenPort, replaces the stock
	// VIP port ListenPort-2. It is no broker.conf key: it lets a broker whose
	// ports the system chose (ListenPort 0) be restarted on the same two
	// ports (rmqtest's Restart), where ListenPort-2 may be another's.
	VIPListenPort int `conf:"-"`
	// FS carries every file operation of the store, timer and schedule
	// services and of the broker's config files (store/vfs.go); nil is the
	// real file system. Tests pass a store.ErrorFS to inject faults.
	FS store.FS `conf:"-"`

	// storeOptions, set by this package's tests only, adjusts the message
	// store's options before New opens it (e.g. a failpoint hook).
	storeOptions func(*store.Options)
	// ControllerHA builds the HA service of controller mode on the opened
	// store; the service calls onSyncStateSetChange with each sync state
	// set it proposes. nil is the AutoSwitch service (store/ha/autoswitch).
	// Tests put a fake here.
	ControllerHA func(st *store.Store, o *Options, onSyncStateSetChange func([]int64)) (replicas.Service, error) `conf:"-"`
	// haReconnectDelay (tests only) replaces the HA client's 5 s pause
	// between connections.
	haReconnectDelay time.Duration
}

// DefaultStoreDir is the default storePathRootDir, Java's
// System.getProperty("user.home") + File.separator + "store": the store
// never lands in the working directory, which from a source checkout would
// be the store package's folder. Without a home directory ($HOME, or the
// user database) it falls back to rmq-store in the temporary directory.
func DefaultStoreDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		if u, uerr := user.Current(); uerr == nil {
			home = u.HomeDir
		}
	}
	if home == "" {
		return filepath.Join(os.TempDir(), "rmq-store")
	}
	return filepath.Join(home, "store")
}

// DefaultOptions returns the stock defaults.
func DefaultOptions() Options {
	return Options{
		BrokerClusterName:                 "DefaultCluster",
		BrokerName:                        "broker-a",
		ListenPort:                        10911,
		BrokerIP1:                         "127.0.0.1",
		StorePathRootDir:                  DefaultStoreDir(),
		FlushDiskType:                     "ASYNC_FLUSH",
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * 20,
		FlushIntervalCommitLog:            500,
		SyncFlushTimeout:                  5000,
		MaxMessageSize:                    4 << 20,
		MaxLmqConsumeQueueNum:             store.DefaultMaxLmqConsumeQueueNum,
		AutoCreateTopicEnable:             true,
		AutoCreateSubscriptionGroup:       true,
		DefaultTopicQueueNums:             8,
		RegisterNameServerPeriod:          30000,
		LongPollingEnable:                 true,
		ShortPollingTimeMills:             1000,
		BrokerPermission:                  6,
		RegionID:                          "DefaultRegion",
		TraceOn:                           true,
		MsgTraceTopicName:                 message.TopicTrace,
		StoreReplyMessageEnable:           true,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInMemory: 256 << 10,
		AccessMessageInMemoryMaxRatio:     40,
		MessageDelayLevel:                 schedule.DefaultLevels,
		FlushDelayOffsetInterval:          10000,
		TransactionTimeOut:                transaction.DefaultTimeout.Milliseconds(),
		TransactionCheckMax:               transaction.DefaultCheckMax,
		TransactionCheckInterval:          transaction.DefaultCheckInterval.Milliseconds(),
		TimerWheelEnable:                  true,
		TimerPrecisionMs:                  timer.DefaultPrecisionMs,
		DeliverCoalesceMs:                 DefaultDeliverCoalesceMs,
		TimerMaxDelaySec:                  timer.DefaultMaxDelaySec,
		TimerFlushIntervalMs:              1000,
		MappedFileSizeTimerLog:            100 << 20,
		RecallMessageEnable:               true,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    store.DefaultIndexHashSlotNum,
		MaxIndexNum:                       store.DefaultIndexMaxNum,
		RetentionConfig: RetentionConfig{
			FileReservedTime:                 72,
			DeleteWhen:                       store.DefaultDeleteWhen,
			DiskMaxUsedSpaceRatio:            store.DefaultDiskMaxUsedSpaceRatio,
			DiskSpaceWarningLevelRatio:       90,
			DiskSpaceCleanForciblyRatio:      85,
			CleanFileForciblyEnable:          true,
			CleanResourceInterval:            10000,
			DeleteCommitLogFilesInterval:     100,
			DeleteConsumeQueueFilesInterval:  100,
			DestroyMapedFileIntervalForcibly: 120000,
			RedeleteHangedFileInterval:       120000,
		},
		BrokerRole:                      "ASYNC_MASTER",
		HAConfig:                        defaultHAConfig(),
		ActingMasterConfig:              defaultActingMasterConfig(),
		Keys:                            replicas.DefaultKeys(),
		ClusterTopicEnable:              true,
		BrokerTopicEnable:               true,
		FlushConsumerOffsetInterval:     5000,
		DefaultQueryMaxNum:              32,
		ConfigBlackList:                 DefaultConfigBlackList,
		MaxTransferBytesOnMessageInDisk: 64 << 10,
		MaxTransferCountOnMessageInDisk: 8,
		NotifyConsumerIdsChangedEnable:  true,
		StockKeys:                       defaultStockKeys(),
		FastFailConfig:                  defaultFastFail(),
		LaneConfig:                      defaultLanes(),
		CommitLogPageCacheKeep:          DefaultCommitLogPageCacheKeep,
		ListenHost:                      "0.0.0.0",
		ServerConfig:                    remoting.DefaultServerConfig(),
		MetricsConfig:                   defaultMetricsConfig(),
		Logger:                          zerolog.Nop(),
	}
}

// DefaultConfigBlackList is configBlackList's stock default.
const DefaultConfigBlackList = "configBlackList;brokerConfigPath"

// DefaultDeliverCoalesceMs is DeliverCoalesceMs's default.
const DefaultDeliverCoalesceMs = 5

// DefaultCommitLogPageCacheKeep is CommitLogPageCacheKeep's default: a
// consumer up to a million 1 KiB messages behind reads from memory. Stored
// with their headers and a producer's properties such messages take about
// 1.1 GiB of commitlog (TestDefaultPageCacheKeepHoldsAMillionMessages),
// more than the 1 GiB this was before: the oldest part of such a backlog
// was read from the disk.
const DefaultCommitLogPageCacheKeep = 2 << 30

// Small-store geometry (SmallStore).
const (
	SmallStoreCommitLogSize    = 4 << 20
	SmallStoreConsumeQueueSize = 30000 * 20
	SmallStoreMaxHashSlotNum   = 4096
	SmallStoreMaxIndexNum      = 16384
	// SmallStoreTimerLogSize is the timer log's file size in a small store.
	SmallStoreTimerLogSize = 4 << 20
)

// applySmallStore shrinks the store geometry that is still at its stock
// default.
func (o *Options) applySmallStore() {
	d := DefaultOptions()
	if o.MappedFileSizeCommitLog == d.MappedFileSizeCommitLog {
		o.MappedFileSizeCommitLog = SmallStoreCommitLogSize
	}
	if o.MappedFileSizeConsumeQueue == d.MappedFileSizeConsumeQueue {
		o.MappedFileSizeConsumeQueue = SmallStoreConsumeQueueSize
	}
	if o.MaxHashSlotNum == d.MaxHashSlotNum {
		o.MaxHashSlotNum = SmallStoreMaxHashSlotNum
	}
	if o.MaxIndexNum == d.MaxIndexNum {
		o.MaxIndexNum = SmallStoreMaxIndexNum
	}
	if o.MappedFileSizeTimerLog == d.MappedFileSizeTimerLog {
		o.MappedFileSizeTimerLog = SmallStoreTimerLogSize
	}
	if o.MaxMessageSize > int(o.MappedFileSizeCommitLog) {
		o.MaxMessageSize = int(o.MappedFileSizeCommitLog)
	}
}

// RetentionConfig is the stock retention and disk-protection keys with their
// defaults (Java MessageStoreConfig). FileReservedTimeMinutes (rmq), when
// positive, replaces fileReservedTime (hours) so that tests and development
// stores see files age out in minutes. The two disk ratios are percents, as
// the 5.x config fields (4.9.8 reads them from JVM properties).
type RetentionConfig struct {
	FileReservedTime                 int    `conf:"fileReservedTime"` // hours
	FileReservedTimeMinutes          int    `conf:"fileReservedTimeMinutes"`
	DeleteWhen                       string `conf:"deleteWhen"`
	DiskMaxUsedSpaceRatio            int    `conf:"diskMaxUsedSpaceRatio"`
	DiskSpaceWarningLevelRatio       int    `conf:"diskSpaceWarningLevelRatio"`
	DiskSpaceCleanForciblyRatio      int    `conf:"diskSpaceCleanForciblyRatio"`
	CleanFileForciblyEnable          bool   `conf:"cleanFileForciblyEnable"`
	CleanResourceInterval            int    `conf:"cleanResourceInterval"`            // ms
	DeleteCommitLogFilesInterval     int    `conf:"deleteCommitLogFilesInterval"`     // ms
	DeleteConsumeQueueFilesInterval  int    `conf:"deleteConsumeQueueFilesInterval"`  // ms
	DestroyMapedFileIntervalForcibly int    `conf:"destroyMapedFileIntervalForcibly"` // ms
	RedeleteHangedFileInterval       int    `conf:"redeleteHangedFileInterval"`       // ms
	// RetainUnconsumedOnForcedClean (rmq, false): a forced deletion (disk
	// over diskSpaceCleanForciblyRatio) keeps the files inside the reserved
	// time that some consumer group has not consumed, and the broker
	// refuses sends rather than lose them. Off, as in stock, the groups'
	// offsets hold nothing back (broker/delivery.go).
	RetainUnconsumedOnForcedClean bool `conf:"retainUnconsumedOnForcedClean"`
}

// validate refuses values the store cannot run with. Like Java's getter,
// diskMaxUsedSpaceRatio is clamped to 10..95 where it is used, not refused.
func (o *RetentionConfig) validate() error {
	var errs []error
	if o.FileReservedTime <= 0 && o.FileReservedTimeMinutes <= 0 {
		errs = append(errs, fmt.Errorf("fileReservedTime %d must be positive (or set fileReservedTimeMinutes)", o.FileReservedTime))
	}
	if o.DiskSpaceWarningLevelRatio <= 0 || o.DiskSpaceWarningLevelRatio > 100 || o.DiskSpaceCleanForciblyRatio <= 0 || o.DiskSpaceCleanForciblyRatio > 100 {
		errs = append(errs, fmt.Errorf("diskSpaceWarningLevelRatio %d and diskSpaceCleanForciblyRatio %d must be percents in 1..100",
			o.DiskSpaceWarningLevelRatio, o.DiskSpaceCleanForciblyRatio))
	}
	if _, err := store.ParseDeleteWhen(o.DeleteWhen); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// retentionOptions maps the retention keys to the store's.
func (o *RetentionConfig) retentionOptions() store.RetentionOptions {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	reserved := time.Duration(o.FileReservedTime) * time.Hour
	if o.FileReservedTimeMinutes > 0 {
		reserved = time.Duration(o.FileReservedTimeMinutes) * time.Minute
	}
	pause := func(v int) time.Duration {
		if v <= 0 {
			return -1 // no pause (the store's zero means the default)
		}
		return ms(v)
	}
	return store.RetentionOptions{
		FileReservedTime:                 reserved,
		DeleteWhen:                       o.DeleteWhen,
		DiskMaxUsedSpaceRatio:            o.DiskMaxUsedSpaceRatio,
		DiskSpaceWarningLevelRatio:       float64(o.DiskSpaceWarningLevelRatio) / 100,
		DiskSpaceCleanForciblyRatio:      float64(o.DiskSpaceCleanForciblyRatio) / 100,
		CleanFileForciblyDisable:         !o.CleanFileForciblyEnable,
		CleanResourceInterval:            ms(o.CleanResourceInterval),
		DeleteCommitLogFilesInterval:     pause(o.DeleteCommitLogFilesInterval),
		DeleteConsumeQueueFilesInterval:  pause(o.DeleteConsumeQueueFilesInterval),
		DestroyMapedFileIntervalForcibly: ms(o.DestroyMapedFileIntervalForcibly),
		RedeleteHangedFileInterval:       ms(o.RedeleteHangedFileInterval),
	}
}

// Validate checks the options and normalises derived values.
func (o *Options) Validate() error {
	var errs []error
	if o.SmallStore {
		o.applySmallStore()
	}
	if err := o.RetentionConfig.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.LaneConfig.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.TestPutStallMillis != 0 && (o.TestPutStallMillis < 0 || o.FlushDiskType != "SYNC_FLUSH") {
		errs = append(errs, fmt.Errorf("testPutStallMillis %d needs a positive value and flushDiskType=SYNC_FLUSH", o.TestPutStallMillis))
	}
	if _, err := schedule.ParseLevels(o.MessageDelayLevel); err != nil {
		errs = append(errs, fmt.Errorf("messageDelayLevel: %w", err))
	}
	if o.FlushDelayOffsetInterval <= 0 {
		o.FlushDelayOffsetInterval = 10000
	}
	// Unset (zero) transaction settings take the stock defaults; only
	// explicitly negative ones are refused.
	if o.TransactionTimeOut == 0 {
		o.TransactionTimeOut = transaction.DefaultTimeout.Milliseconds()
	}
	if o.TransactionCheckInterval == 0 {
		o.TransactionCheckInterval = transaction.DefaultCheckInterval.Milliseconds()
	}
	if o.TransactionCheckMax == 0 {
		o.TransactionCheckMax = transaction.DefaultCheckMax
	}
	if o.TransactionTimeOut < 0 || o.TransactionCheckInterval < 0 || o.TransactionCheckMax < 0 {
		errs = append(errs, fmt.Errorf("transactionTimeOut %d, transactionCheckInterval %d and transactionCheckMax %d must not be negative (0: the default)",
			o.TransactionTimeOut, o.TransactionCheckInterval, o.TransactionCheckMax))
	}
	if o.DeliverCoalesceMs < 0 || o.DeliverCoalesceMs > 1000 {
		errs = append(errs, fmt.Errorf("deliverCoalesceMs %d must be in 0..1000", o.DeliverCoalesceMs))
	}
	if o.TimerPrecisionMs <= 0 || o.TimerPrecisionMs > 60000 {
		errs = append(errs, fmt.Errorf("timerPrecisionMs %d must be in 1..60000", o.TimerPrecisionMs))
	}
	if o.TimerMaxDelaySec <= 0 {
		errs = append(errs, fmt.Errorf("timerMaxDelaySec %d must be positive", o.TimerMaxDelaySec))
	}
	if o.TimerFlushIntervalMs <= 0 {
		o.TimerFlushIntervalMs = 1000
	}
	if o.MappedFileSizeTimerLog < 4096 {
		errs = append(errs, fmt.Errorf("mappedFileSizeTimerLog %d too small", o.MappedFileSizeTimerLog))
	}
	if o.BrokerName == "" {
		errs = append(errs, errors.New("brokerName is empty"))
	}
	if o.BrokerClusterName == "" {
		errs = append(errs, errors.New("brokerClusterName is empty"))
	}
	if o.ListenPort != 0 && (o.ListenPort <= 2 || o.ListenPort > 65535) {
		errs = append(errs, fmt.Errorf("listenPort %d out of range (0: free ports from the system)", o.ListenPort))
	}
	switch o.FlushDiskType {
	case "ASYNC_FLUSH", "SYNC_FLUSH":
	default:
		errs = append(errs, fmt.Errorf("flushDiskType %q is neither ASYNC_FLUSH nor SYNC_FLUSH", o.FlushDiskType))
	}
	if o.MappedFileSizeCommitLog < 4096 {
		errs = append(errs, fmt.Errorf("mappedFileSizeCommitLog %d too small", o.MappedFileSizeCommitLog))
	}
	if o.MappedFileSizeConsumeQueue <= 0 {
		errs = append(errs, fmt.Errorf("mappedFileSizeConsumeQueue %d must be positive", o.MappedFileSizeConsumeQueue))
	} else if r := o.MappedFileSizeConsumeQueue % 20; r != 0 {
		// As stock's getter: rounded up to whole 20-byte entries (Warnings).
		o.MappedFileSizeConsumeQueue += 20 - r
	}
	if o.MaxMessageSize <= 0 || int64(o.MaxMessageSize) > o.MappedFileSizeCommitLog {
		errs = append(errs, fmt.Errorf("maxMessageSize %d must be in (0, mappedFileSizeCommitLog]", o.MaxMessageSize))
	}
	if o.CommitLogPageCacheKeep < 0 {
		errs = append(errs, fmt.Errorf("commitLogPageCacheKeep %d is negative (0 leaves the page cache to the kernel)", o.CommitLogPageCacheKeep))
	}
	switch o.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster:
	case RoleSlave:
		// BrokerStartup exits (-3) on a slave id that is not positive; a
		// master's id is forced to 0 before Validate (cmd/rmq check). In
		// controller mode the controller gives the id (samples say -1).
		if o.BrokerID <= 0 && !o.EnableControllerMode {
			errs = append(errs, fmt.Errorf("brokerId %d: a SLAVE's brokerId must be > 0", o.BrokerID))
		}
	default:
		errs = append(errs, fmt.Errorf("brokerRole %q is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE", o.BrokerRole))
	}
	errs = append(errs, o.HAConfig.validate()...)
	errs = append(errs, o.ActingMasterConfig.validate()...)
	if o.EnableControllerMode && o.BrokerHeartbeatInterval <= 0 {
		// The replicas manager heartbeats the controllers at this period:
		// zero or less would send them back to back.
		errs = append(errs, fmt.Errorf("brokerHeartbeatInterval %d must be > 0 with enableControllerMode", o.BrokerHeartbeatInterval))
	}
	errs = append(errs, o.Keys.Validate(o.EnableDLegerCommitLog)...)
	if strings.Contains(o.StorePathCommitLog, ",") {
		errs = append(errs, fmt.Errorf("storePathCommitLog %q: rmq's store has one commitlog directory (stock's multi-path form is not supported)", o.StorePathCommitLog))
	}
	if o.BrokerPermission&^(topicgroup.PermRead|topicgroup.PermWrite|topicgroup.PermInherit) != 0 {
		errs = append(errs, fmt.Errorf("brokerPermission %d is not a combination of 1 (inherit), 2 (write) and 4 (read)", o.BrokerPermission))
	}
	if o.ShortPollingTimeMills <= 0 {
		errs = append(errs, fmt.Errorf("shortPollingTimeMills %d must be positive", o.ShortPollingTimeMills))
	}
	if o.FlushConsumerOffsetInterval <= 0 {
		errs = append(errs, fmt.Errorf("flushConsumerOffsetInterval %d must be positive", o.FlushConsumerOffsetInterval))
	}
	if o.MaxTransferCountOnMessageInMemory <= 0 || o.MaxTransferBytesOnMessageInMemory <= 0 ||
		o.MaxTransferCountOnMessageInDisk <= 0 || o.MaxTransferBytesOnMessageInDisk <= 0 {
		errs = append(errs, fmt.Errorf("maxTransferCount/BytesOnMessageInMemory (%d, %d) and ...InDisk (%d, %d) must be positive",
			o.MaxTransferCountOnMessageInMemory, o.MaxTransferBytesOnMessageInMemory, o.MaxTransferCountOnMessageInDisk, o.MaxTransferBytesOnMessageInDisk))
	}
	if o.DefaultTopicQueueNums <= 0 {
		errs = append(errs, fmt.Errorf("defaultTopicQueueNums %d must be positive", o.DefaultTopicQueueNums))
	}
	if o.BrokerIP1 == "" {
		o.BrokerIP1 = "127.0.0.1"
	}
	if o.BrokerIP2 == "" {
		o.BrokerIP2 = o.BrokerIP1
	}
	if err := o.ServerConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.RegisterNameServerPeriod < 10000 {
		o.RegisterNameServerPeriod = 10000
	}
	if o.RegisterNameServerPeriod > 60000 {
		o.RegisterNameServerPeriod = 60000
	}
	return errors.Join(errs...)
}

// Warnings lists the values a start (and UPDATE_BROKER_CONFIG) accepts, as
// stock does, although they are surely not what was meant: stock applies
// them without a word, rmq logs each one loudly.
func (o *Options) Warnings() []string {
	var out []string
	if n := o.MappedFileSizeConsumeQueue; n > 0 && n%20 != 0 {
		out = append(out, fmt.Sprintf("mappedFileSizeConsumeQueue %d is not a multiple of 20: used as %d (stock's getter rounds it up the same way)", n, n+20-n%20))
	}
	if r := o.DiskMaxUsedSpaceRatio; r < 10 || r > 95 {
		out = append(out, fmt.Sprintf("diskMaxUsedSpaceRatio %d is outside 10..95: used as %d (stock's getter clamps it the same way)", r, min(max(r, 10), 95)))
	}
	return out
}

// NamesrvAddrs splits NamesrvAddr on ';'.
func (o *Options) NamesrvAddrs() []string {
	var out []string
	for _, a := range strings.Split(o.NamesrvAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
