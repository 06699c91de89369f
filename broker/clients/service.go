package clients

import (
	"path/filepath"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Topics is the part of the broker's topic table the client requests use.
type Topics interface {
	// Get returns a copy of topic's config, nil if there is none.
	Get(topic string) *topicgroup.TopicConfig
	// CreateRetryTopic creates %RETRY%<group> unless it exists, and announces
	// a new topic to the name servers.
	CreateRetryTopic(group string, queueNums, perm int32) (*topicgroup.TopicConfig, bool)
}

// Advertiser is the broker as it advertises itself: Addr is the ip:port it
// registers now (UPDATE_BROKER_CONFIG may change it while it runs).
type Advertiser interface {
	Addr() string
}

// LiveSettings are the broker settings the client requests read as they
// stand now (UPDATE_BROKER_CONFIG may change them while the broker runs).
type LiveSettings interface {
	// PropertyFilterEnabled is enablePropertyFilter.
	PropertyFilterEnabled() bool
	// NotifyConsumerIdsChanged is notifyConsumerIdsChangedEnable: off, no
	// NOTIFY_CONSUMER_IDS_CHANGED is sent for any group (stock
	// DefaultConsumerIdsChangeListener).
	NotifyConsumerIdsChanged() bool
}

// Options configures a Service.
type Options struct {
	// ConfigDir holds consumerOffset.json and subscriptionGroup.json; empty
	// keeps offsets and groups in memory only.
	ConfigDir string
	// AutoCreateSubscriptionGroup is the broker option of that name.
	AutoCreateSubscriptionGroup bool
	// BrokerName is written into the message queues of GET_CONSUME_STATS and
	// into CONSUME_MESSAGE_DIRECTLY calls.
	BrokerName string
	Topics     Topics
	// Store answers consume stats and CONSUME_MESSAGE_DIRECTLY lookups; nil
	// serves neither (tests of the managers alone).
	Store *store.Store
	// Settings are the broker settings read per request (LiveSettings);
	// nil: the property filter off, notifications on.
	Settings LiveSettings
	Clock    clock.Clock // nil: the wall clock
	Logger   zerolog.Logger
	// Refusals rate-limits the warnings a client's requests can repeat
	// (a filter that does not compile, a group whose retry topic cannot
	// exist); nil makes one.
	Refusals *ratelog.Limiter
	// Broker tells the address the broker registers, which
	// QUERY_TOPICS_BY_CONSUMER reports; nil: "".
	Broker Advertiser
	// FS carries the writes of consumerOffset.json, subscriptionGroup.json
	// and consumerFilter.json (store/vfs.go); nil is the real file system.
	FS store.FS
}

// Service holds the client managers and serves the client requests.
type Service struct {
	Consumers *ConsumerManager
	Producers *ProducerManager
	Offsets   *ConsumerOffsetManager
	SubGroups *SubscriptionGroupManager
	Locks     *RebalanceLockManager
	// Filters holds the consumers' compiled SQL92 filters.
	Filters *ConsumerFilterManager

	propertyFilter func() bool
	notifyEnabled  func() bool
	brokerAddr     func() string

	topics     Topics
	store      *store.Store
	brokerName string
	clock      clock.Clock
	log        zerolog.Logger
	refusals   *ratelog.Limiter
	// callTimeout overrides defaultClientCallTimeout when positive (tests);
	// atomic because handlers read it concurrently.
	callTimeout atomic.Int64
}

// Offset and group file names under Options.ConfigDir.
const (
	OffsetFileName = "consumerOffset.json"
	GroupFileName  = "subscriptionGroup.json"
)

// New loads the offsets and subscription groups from o.ConfigDir and returns
// the service; nothing runs until Housekeep.
func New(o Options) (*Service, error) {
	s := &Service{
		topics: o.Topics, store: o.Store, brokerName: o.BrokerName, clock: orReal(o.Clock), log: o.Logger,
		refusals: o.Refusals,
	}
	s.brokerAddr = func() string { return "" }
	if o.Broker != nil {
		s.brokerAddr = o.Broker.Addr
	}
	s.notifyEnabled = func() bool { return true }
	s.propertyFilter = func() bool { return false }
	if o.Settings != nil {
		s.notifyEnabled = o.Settings.NotifyConsumerIdsChanged
		s.propertyFilter = o.Settings.PropertyFilterEnabled
	}
	if s.refusals == nil {
		s.refusals = ratelog.New(o.Logger, s.clock, 0)
	}
	s.Consumers = NewConsumerManager(s.log, s.clock)
	s.Producers = NewProducerManager(s.clock)
	s.Locks = NewRebalanceLockManager(s.clock)
	var offsetPath, groupPath, filterPath string
	if o.ConfigDir != "" {
		offsetPath, groupPath = filepath.Join(o.ConfigDir, OffsetFileName), filepath.Join(o.ConfigDir, GroupFileName)
		filterPath = filepath.Join(o.ConfigDir, FilterFileName)
	}
	var err error
	if s.Filters, err = NewConsumerFilterManager(filterPath, s.log, s.clock); err != nil {
		return nil, err
	}
	s.Consumers.groupGone = s.Filters.Unregister
	if s.Offsets, err = NewConsumerOffsetManager(offsetPath, s.log); err != nil {
		return nil, err
	}
	if s.SubGroups, err = NewSubscriptionGroupManager(groupPath, o.AutoCreateSubscriptionGroup, s.log, s.clock); err != nil {
		return nil, err
	}
	s.Filters.fs, s.Offsets.fs, s.SubGroups.fs = o.FS, o.FS, o.FS
	return s, nil
}

func successResponse(req *remoting.Command, body []byte) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}
