package transaction

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Stock defaults of the check settings (BrokerConfig).
const (
	DefaultTimeout       = 6 * time.Second  // transactionTimeOut
	DefaultCheckInterval = 60 * time.Second // transactionCheckInterval
	DefaultCheckMax      = 15               // transactionCheckMax
)

// Topics is the part of the broker's topic table the service uses: it
// creates the half topic and TRANS_CHECK_MAX_TIME_TOPIC on first use.
type Topics interface {
	CreateSystemTopic(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool)
}

// Offsets keeps the walk's progress as consumer offsets of CID_RMQ_SYS_TRANS.
type Offsets interface {
	Query(group, topic string, queueID int32) (int64, bool)
	Commit(group, topic string, queueID int32, offset int64)
}

// Producers picks the producer connection a state check goes to.
type Producers interface {
	AvailableConn(group string) *remoting.Conn
}

// Putter stores a committed message through the broker's put hooks, as a
// send would, so a DELAY or TIMER_* it carries applies now
// (*store.Store, without hooks, does for tests).
type Putter interface {
	PutMessage(m *message.Message) (*store.PutResult, error)
}

// CommitAnswerer answers a two-way END_TRANSACTION whose commit put m as
// res: resp now, or nil when the broker writes resp on c later, once the
// commit is flushed and replicated as 4.9.8's synchronous putMessage waits
// (the answer stays SUCCESS whatever the waits end with).
type CommitAnswerer interface {
	AnswerCommitted(c *remoting.Conn, req, resp *remoting.Command, m *message.Message, res *store.PutResult) *remoting.Command
}

// Options wires a Service to the store and to the broker's tables.
type Options struct {
	Store *store.Store
	// Put stores a committed message (Putter).
	Put       Putter
	Topics    Topics
	Offsets   Offsets
	Producers Producers
	// StoreHost is the broker's address, the born host of op records and
	// the store host of check copies.
	StoreHost netip.AddrPort
	// MaxMessageSize is quoted in the remark of a commit the store refuses
	// as too large.
	MaxMessageSize int
	// Timeout (transactionTimeOut), CheckInterval (transactionCheckInterval)
	// and CheckMax (transactionCheckMax): zero takes the stock default.
	Timeout       time.Duration
	CheckInterval time.Duration
	CheckMax      int
	Clock         clock.Clock // nil: the wall clock
	Logger        zerolog.Logger
	// Slave: the broker's role is SLAVE. END_TRANSACTION is refused with
	// SLAVE_NOT_AVAILABLE (4.9.8 EndTransactionProcessor); the broker
	// holds the check loop on a slave (SetActive) unless it acts as master.
	Slave bool
	// SlaveNow, when set, is asked instead of Slave on each END_TRANSACTION:
	// in controller mode the role is the controller's, changed at run time
	// (5.3.3 changeToSlave sets the store's brokerRole the processor reads).
	SlaveNow func() bool
	// Refusals rate-limits the warnings a producer's END_TRANSACTION
	// requests can repeat; nil makes one.
	Refusals *ratelog.Limiter
	// AnswerCommitted answers a committed END_TRANSACTION (CommitAnswerer);
	// nil answers at once.
	AnswerCommitted CommitAnswerer

	// Escape sends an undecided half message away while the broker acts
	// as master from a SLAVE's store (slave-acting-master; the broker's
	// escape bridge: to another group's master with enableRemoteEscape,
	// refused otherwise). nil: the walk on a slave store stops at once.
	Escape Putter

	// failpoint, when set (tests), is called at each named durability
	// step; an error simulates the death of the process there: the pass
	// commits nothing more.
	failpoint func(name string) error
}

// withDefaults fills zero settings with the stock defaults and refuses
// negative ones and missing dependencies.
func (o Options) withDefaults() (Options, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CheckInterval == 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.CheckMax == 0 {
		o.CheckMax = DefaultCheckMax
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	var errs []error
	if o.Timeout < 0 || o.CheckInterval < 0 || o.CheckMax < 0 {
		errs = append(errs, fmt.Errorf("timeout %v, check interval %v and check max %d must not be negative", o.Timeout, o.CheckInterval, o.CheckMax))
	}
	if o.Store == nil || o.Put == nil || o.Topics == nil || o.Offsets == nil || o.Producers == nil {
		errs = append(errs, errors.New("Store, Put, Topics, Offsets and Producers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("%w: %w", ErrTransactionService, err)
	}
	return o, nil
}
