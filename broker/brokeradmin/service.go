package brokeradmin

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Topics is the part of the broker's topic table the admin requests use.
type Topics interface {
	Get(topic string) *topicgroup.TopicConfig
	IsSystemTopic(topic string) bool
	// Update creates or replaces a topic and announces it to the name servers.
	Update(tc *topicgroup.TopicConfig)
	// Delete removes a topic's config; false if there was none.
	Delete(topic string) bool
	Snapshot() remoting.TopicConfigSerializeWrapper
}

// Offsets forgets the consumer offsets of a deleted topic.
type Offsets interface {
	RemoveTopic(topic string)
}

// Stats are the counters behind GET_BROKER_RUNTIME_INFO. The broker core
// counts stored and pulled messages into them and calls Sample every second.
type Stats struct {
	BootTime time.Time    // set by the broker's Start before the listeners open
	PutMsgs  atomic.Int64 // messages stored by sends
	GetMsgs  atomic.Int64 // messages transferred by pulls
	rates    rateSampler
}

// Sample records the counters at now for the put/get rates.
func (st *Stats) Sample(now time.Time) {
	st.rates.sample(now, st.PutMsgs.Load(), st.GetMsgs.Load())
}

// RuntimeExtras adds what GET_BROKER_RUNTIME_INFO reports beyond the store
// and the topic table (the timer store's keys, the request lanes, the get
// rates, replication) to the table t.
type RuntimeExtras interface {
	AddRuntimeInfo(t map[string]string)
}

// LiveSettings are the broker settings the admin requests read as they
// stand now (UPDATE_BROKER_CONFIG may change them while the broker runs).
type LiveSettings interface {
	// DefaultQueryMaxNum is MessageStoreConfig.defaultQueryMaxNum: the
	// result size of a unique-key query, whatever maxNum the client sent.
	DefaultQueryMaxNum() int
}

// Options wires a Service to the store and to the broker's tables.
type Options struct {
	Store   *store.Store
	Topics  Topics
	Offsets Offsets
	Stats   *Stats
	// Extras adds the broker's other keys to a runtime-info table (nil:
	// none).
	Extras RuntimeExtras
	// BrokerName is written into the message queues of GET_TOPIC_STATS_INFO.
	BrokerName string
	// StoreDir is storePathRootDir, whose disk the runtime info reports.
	StoreDir string
	// EnableMixedMessageType lets UPDATE_AND_CREATE_TOPIC set
	// message.type=MIXED (BrokerConfig enableMixedMessageType).
	EnableMixedMessageType bool
	// Settings are the broker settings read per request (LiveSettings);
	// nil: the stock defaults.
	Settings LiveSettings
	Clock    clock.Clock // nil: the wall clock
	Logger   zerolog.Logger
}

// Service serves the admin requests about topics, the broker's runtime and
// stored messages.
type Service struct {
	store      *store.Store
	topics     Topics
	offsets    Offsets
	stats      *Stats
	extras     func(map[string]string)
	brokerName string
	storeDir   string
	allowMixed bool
	// defaultQueryMaxNum: Options.Settings' (the stock 32 without).
	defaultQueryMaxNum func() int
	clock              clock.Clock
	log                zerolog.Logger
}

// New returns the admin service over o.
func New(o Options) *Service {
	s := &Service{
		store: o.Store, topics: o.Topics, offsets: o.Offsets, stats: o.Stats,
		brokerName: o.BrokerName, storeDir: o.StoreDir, clock: o.Clock, log: o.Logger,
		allowMixed: o.EnableMixedMessageType,
	}
	s.defaultQueryMaxNum = func() int { return 32 }
	if o.Settings != nil {
		s.defaultQueryMaxNum = o.Settings.DefaultQueryMaxNum
	}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.stats == nil {
		s.stats = &Stats{}
	}
	s.extras = func(map[string]string) {}
	if o.Extras != nil {
		s.extras = o.Extras.AddRuntimeInfo
	}
	return s
}

// Processors maps the request codes the service serves.
func (s *Service) Processors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.UpdateAndCreateTopic:     s.processUpdateAndCreateTopic,
		remoting.UpdateAndCreateTopicList: s.processUpdateAndCreateTopicList,
		remoting.DeleteTopicInBroker:      s.processDeleteTopic,
		remoting.GetAllTopicConfig:        s.processGetAllTopicConfig,
		remoting.GetTopicConfig:           s.processGetTopicConfig,
		remoting.GetBrokerRuntimeInfo:     s.processGetBrokerRuntimeInfo,
		remoting.GetTopicStatsInfo:        s.processGetTopicStatsInfo,
		remoting.QueryMessage:             s.processQueryMessage,
	}
}
