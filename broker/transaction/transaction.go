package transaction

// Transactional messages (4.9.8 TransactionalMessageBridge,
// TransactionalMessageServiceImpl, EndTransactionProcessor).
//
// A send whose TRAN_MSG property is "true" is stored as a half message: the
// real destination moves into properties and the record lands on the half
// topic, where no consumer subscribes. The producer ends it with
// END_TRANSACTION, or the broker asks a producer of the group with
// CHECK_TRANSACTION_STATE until one answers or the check budget runs out.
//
//	producer ── send T/q, TRAN_MSG=true ──▶ Hook: REAL_TOPIC=T, REAL_QID=q,
//	                                          tran bits NOT_TYPE, topic/queue below
//	RMQ_SYS_TRANS_HALF_TOPIC queue 0:
//	    +------+------+------+-------+------+
//	    |  h0  |  h1  |  h2  |  h1'  |  h3  | …   ordinary queue offsets 0, 1, 2, …
//	    +------+------+------+-------+------+
//	       │      │              ▲
//	       │      └── check ─────┘ h1 copied to the end: TRANSACTION_CHECK_TIMES+1,
//	       │                       TRAN_PREPARED_QUEUE_OFFSET=1; CHECK_TRANSACTION_STATE
//	       │                       about h1' (body: record with topic T, queue q) goes
//	       │                       oneway to one live producer connection of PGROUP
//	       │
//	  END_TRANSACTION(commitLogOffset, tranStateTableOffset) of h0, or of h1' when
//	  answering a check: commit re-stores the message on T/q (COMMIT type,
//	  preparedTransactionOffset = the half record's offset); rollback stores nothing
//	       ▼
//	RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0:
//	    +-------+-------+
//	    |  "0"  |  "3"  | …   tag "d", body = the decided half offset in decimal
//	    +-------+-------+
//
// Progress of the check walk is kept as consumer offsets of the system group
// CID_RMQ_SYS_TRANS on both topics (consumerOffset.json), as in stock:
//
//	half queue: [ passed ........ | halfOffset → not yet walked ... | max ]
//	op queue:   [ released ...... | opOffset → still needed ...... | max ]
//
// Every copy of a half message carries its chain's origin offset (the first
// half offset) in TRAN_PREPARED_QUEUE_OFFSET; a message without it is its own
// origin. A decision is applied at most once per chain: the origins decided by
// the op entries at or after opOffset, plus those decided since, form the
// decided set, so a duplicate or late END_TRANSACTION, or an answer to a check
// of another copy, is acknowledged without storing anything. An op entry stays
// needed (opOffset does not pass it) until the walk has passed every copy its
// chain could still have and transactionTimeOut + transactionCheckInterval have
// gone by; after a restart the decided set is rebuilt from the op queue.
//
// A chain that is not in the decided set is still pending only while the
// walk has not passed the named record or the chain's latest copy (copies:
// origin → latest copy, noted when a copy is put back, rebuilt at load from
// the half records not walked yet). Otherwise it was decided and released,
// or discarded, and an END_TRANSACTION naming it, however late, is
// acknowledged without storing anything.
//
// Deviations from 4.9.8, all kept compatible on the wire and on disk:
//   - decisions are applied once per chain (stock re-commits on a duplicate
//     END_TRANSACTION or an answer to a second check);
//   - every check copy, not only immunity copies, carries
//     TRAN_PREPARED_QUEUE_OFFSET;
//   - a half message's age is measured from its born timestamp, or from its
//     store timestamp when the producer's clock is ahead (stock checks a message
//     born "in the future" at once);
//   - a half message whose SEND answer still waits for the flush or a slave
//     (SYNC_FLUSH, SYNC_MASTER) is not checked, nor within
//     transactionTimeOut of its answer (Hold): stock may check it first, and
//     a producer that rolls back what it has not begun then loses the
//     commit it sends after SEND_OK (decisions apply once per chain);
//   - immunity copies (CHECK_IMMUNITY_TIME_IN_SECONDS) do not count as checks;
//   - check copies keep the flag and reconsumeTimes (stock's renewHalfMessageInner
//     drops both, so a message committed from a check loses its flag);
//   - END_TRANSACTION naming a record that is not on the half topic is refused
//     (stock would "commit" any record carrying the producer group);
//   - END_TRANSACTION for a chain discarded after its check budget stores
//     nothing (stock commits it); RESUME_CHECK_HALF_MESSAGE makes it pending
//     again;
//   - delay levels and timer properties: stock lets CommitLog delay the half
//     message itself, which overwrites REAL_TOPIC with the half topic, so the
//     message never reaches its topic; here DELAY (or TIMER_*) rides along on
//     the half message and applies when the commit re-stores the message
//     through the put hooks: DELAY moves it to SCHEDULE_TOPIC_XXXX, a
//     TIMER_* time not yet due to the timer wheel (4.9.8 has no timer
//     messages). The Java client drops DELAY from transactional sends; the
//     Go client keeps it.
//
// A chain checked transactionCheckMax times without an answer is discarded:
// moved to TRANS_CHECK_MAX_TIME_TOPIC with an error log line, as stock, from
// where RESUME_CHECK_HALF_MESSAGE puts it back with its check count reset.

import (
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Topics, groups and property keys of the transaction path (TopicValidator,
// MixAll, MessageConst, TransactionalMessageUtil).
const (
	txSysGroup       = message.GroupTransCheck
	txOpRemoveTag    = "d"
	txHalfQueueID    = 0
	txCheckMaxQueues = 1

	// txResumeCheckHalfMessage is RESUME_CHECK_HALF_MESSAGE (RequestCode 323),
	// which remoting/codes.go does not name.
	txResumeCheckHalfMessage int32 = 323

	// txMaxHalfAge is the stock fileReservedTime (72 h): a half message older
	// than this is discarded rather than checked (needSkip).
	txMaxHalfAge = 72 * time.Hour
	// txReadBatch is how many records one store read of the walk returns.
	txReadBatch = 32
)

// ErrTransactionService is returned when the transaction state cannot be
// rebuilt from the op queue.
var ErrTransactionService = errors.New("broker: transaction service")

// permReadWrite is the perm of the system topics the service creates.
const permReadWrite = topicgroup.PermRead | topicgroup.PermWrite

// Service holds the decided set and runs the check loop.
type Service struct {
	store          *store.Store
	put            Putter
	topics         Topics
	offsets        Offsets
	producers      Producers
	storeHost      netip.AddrPort
	maxMessageSize int
	clock          clock.Clock
	log            zerolog.Logger
	refusals       *ratelog.Limiter
	slave          bool // Options.Slave
	slaveNow       func() bool
	answer         CommitAnswerer
	escape         Putter // Options.Escape

	timeout  time.Duration // transactionTimeOut
	interval time.Duration // transactionCheckInterval
	checkMax int           // transactionCheckMax

	// mu orders decisions: looking a chain up in decided, storing the commit
	// and the op entry, and recording the chain happen under it, so one chain
	// is decided once. The check walk takes it only to read decided.
	mu      sync.Mutex
	decided map[int64]*txDecision // chain origin → decision
	// copies maps the origin of an undecided chain the walk put back to the
	// queue offset of its latest copy. With the walk's progress it tells a
	// half message still waiting for its decision from one already finished
	// (see pending).
	copies map[int64]int64
	ops    []txOpEntry // op entries from opOffset up to opRead, in order
	// unanswered holds the half messages whose SEND answer waits for the
	// flush or a slave (Hold): commitlog offset → 0 while it waits, then
	// the time (unix ms) the answer went out (Answered). See heldBack.
	unanswered map[int64]int64
	opRead     int64 // next op queue offset not yet read into ops

	// walkMu serialises check passes and lets stop wait for one in flight.
	walkMu sync.Mutex
	passes atomic.Int64 // completed passes
	// held: the passes are held (SetActive(false), takeover.go).
	held    atomic.Bool
	escaped atomic.Int64 // half messages sent to the escape bridge
	checks  atomic.Int64 // CHECK_TRANSACTION_STATE requests sent
	ends    ends         // END_TRANSACTION outcomes by topic (Ends)
	// checker takes checks for groups with no remoting producer connected
	// (SetChecker).
	checker atomic.Pointer[Checker]
	// nextPass is the time (unix ns) of the pass the loop waits for or is
	// running; 0 before Start.
	nextPass atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once

	failpoint func(name string) error // Options.failpoint
	dead      atomic.Bool             // a failpoint fired: nothing more is committed
}

// fp runs the failpoint name; true means the service is now dead (tests).
func (s *Service) fp(name string) bool {
	if s.failpoint != nil && s.failpoint(name) != nil {
		s.dead.Store(true)
	}
	return s.dead.Load()
}

// txDecision is one decided chain.
type txDecision struct {
	atMs int64 // when it was decided (op record store time after a restart)
	// fence is the half queue end after the first pass that started with the
	// chain decided: no copy of the chain can sit at or beyond it. -1 until
	// that pass ends.
	fence int64
}

// txOpEntry is one op record the walk still has to account for.
type txOpEntry struct {
	offset int64 // in the op queue
	origin int64 // chain origin of the half message it decided
}

// New builds the transaction state from the op queue. The broker calls it
// in New, after the store, topics and offsets are loaded.
func New(o Options) (*Service, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Service{
		store: o.Store, put: o.Put, answer: o.AnswerCommitted, topics: o.Topics, offsets: o.Offsets, producers: o.Producers,
		storeHost: o.StoreHost, maxMessageSize: o.MaxMessageSize, clock: o.Clock, log: o.Logger,
		refusals: o.Refusals, slave: o.Slave, slaveNow: o.SlaveNow, escape: o.Escape,
		timeout:    o.Timeout,
		interval:   o.CheckInterval,
		checkMax:   o.CheckMax,
		ends:       newEnds(),
		decided:    make(map[int64]*txDecision),
		copies:     make(map[int64]int64),
		unanswered: make(map[int64]int64),
		stop:       make(chan struct{}),
		failpoint:  o.failpoint,
	}
	if s.refusals == nil {
		s.refusals = ratelog.New(o.Logger, o.Clock, 0)
	}
	// A slave's store is written by its master, who checks: held until
	// the broker acts as master (SetActive, takeover.go).
	s.held.Store(o.Store.IsSlave())
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the check loop: a pass every transactionCheckInterval of the
// service clock, counted from now.
func (s *Service) Start() {
	first := s.clock.Now().Add(s.interval)
	go s.loop(first)
}

// Stop ends the check loop and waits for a running pass; it must run before
// the store closes. Calling it again, or without a Start, is harmless.
func (s *Service) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.walkMu.Lock() // a pass in flight finishes first; later ones see stop
	s.walkMu.Unlock()
}

// Processors maps END_TRANSACTION and RESUME_CHECK_HALF_MESSAGE.
func (s *Service) Processors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.EndTransaction:  s.processEndTransaction,
		txResumeCheckHalfMessage: s.processResumeCheckHalfMessage,
	}
}

// Stats are the service's counters and the size of its state.
type Stats struct {
	Passes        int64 // check passes completed
	Checks        int64 // CHECK_TRANSACTION_STATE requests sent
	DecidedChains int   // chains whose decision is still kept
	OpEntries     int   // op records the walk still accounts for
	Escaped       int64 // half messages an acting master sent to the escape bridge
}

// Stats returns the current counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	decided, ops := len(s.decided), len(s.ops)
	s.mu.Unlock()
	return Stats{Passes: s.passes.Load(), Checks: s.checks.Load(), DecidedChains: decided, OpEntries: ops, Escaped: s.escaped.Load()}
}

// loop runs a pass at first, first+interval, ... on the broker clock. The
// next slot is chosen when a pass starts (slots already gone are skipped), so
// a pass that overruns its interval is followed at once by the next one.
func (s *Service) loop(next time.Time) {
	clk := s.clock
	for {
		s.nextPass.Store(next.UnixNano())
		// Not NewTimer(next.Sub(Now())): a clock moved between the two (a
		// test driver's FastForward) would arm the timer that much past
		// next, while NextCheck already names next as due.
		t := clock.TimerAt(clk, next)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
		}
		for now := clk.Now(); !next.After(now); {
			next = next.Add(s.interval)
		}
		s.checkNow()
	}
}

// NextCheck tells a driver of the service clock (package rmqtest) when the
// next check pass runs; a time at or before the clock's now means a pass is
// due or running. ok is false while the loop is not running or held, or no
// half message is left to walk (a pass would have nothing to check).
func (s *Service) NextCheck() (next time.Time, ok bool) {
	ns := s.nextPass.Load()
	if ns == 0 || s.held.Load() {
		return time.Time{}, false
	}
	select {
	case <-s.stop:
		return time.Time{}, false
	default:
	}
	next = time.Unix(0, ns)
	if !next.After(s.clock.Now()) {
		return next, true // running: it may be walking the last half message
	}
	end := s.store.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID)
	return next, s.committedOffset(message.TopicTransHalf) < end
}

// Hook is the first put hook: a send carrying TRAN_MSG=true
// (Boolean.parseBoolean, as SendMessageProcessor reads it) becomes a half
// message on RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its destination in
// REAL_TOPIC/REAL_QID and its transaction bits reset to NOT_TYPE, so the store
// gives it an ordinary queue offset (TransactionalMessageBridge
// .parseHalfMessageInner). Stock keys on the property, not on the sysFlag: a
// PREPARED or ROLLBACK sysFlag without TRAN_MSG is stored as such (queue
// offset 0, no consume-queue unit). Hooks must not see batches with TRAN_MSG.
func Hook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf || !remoting.JavaBool(m.Properties[message.PropTranMsg]) {
		return nil
	}
	m.Properties[message.PropRealTopic] = m.Topic
	m.Properties[message.PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.SysFlag = m.SysFlag&^message.TransactionRollbackType | message.TransactionNotType
	m.Topic = message.TopicTransHalf
	m.QueueID = txHalfQueueID
	return nil
}

// IDFor is the send response's transactionId: the UNIQ_KEY of a
// message the hook turned into a half message, "" otherwise (4.9.8 leaves the
// field null; 5.x sets UNIQ_KEY on every send). Clients copy it into
// END_TRANSACTION and the local __transactionId__ property only.
func IDFor(m *message.Message, res *store.PutResult) string {
	if res == nil || m.Topic != message.TopicTransHalf {
		return ""
	}
	return m.Properties[message.PropUniqKey]
}

// HookProperty is the property Hook acts on: a send whose properties do not
// name it passes the hook unchanged.
const HookProperty = message.PropTranMsg

// isSlave is the role END_TRANSACTION checks: SlaveNow when set, else Slave.
func (s *Service) isSlave() bool {
	if s.slaveNow != nil {
		return s.slaveNow()
	}
	return s.slave
}
