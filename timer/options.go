package timer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Store is what the timer store needs of the message store (*store.Store
// implements it).
type Store interface {
	PutMessage(m *message.Message) (*store.PutResult, error)
	// ReadQueue reads the timer queue; it does not count as a consumer's
	// get (store.Store.ReadQueue).
	ReadQueue(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) *store.GetResult
	LookMessageByOffset(phyOffset int64) ([]byte, error)
	MinOffsetInQueue(topic string, queueID int32) int64
	MaxOffsetInQueue(topic string, queueID int32) int64
	MaxPhyOffset() int64
}

// DLQTopics registers a group's DLQ topic (a send-back would create it)
// before the timer store moves a retry message the store refuses there.
type DLQTopics interface {
	EnsureDLQ(topic string) bool
}

// Defaults applied by Open to zero-valued options.
const (
	// DefaultPrecisionMs is the slot width. Delivery does not wait for the end
	// of a slot (each message waits for its own exact time), so the precision
	// only trades wheel span against slot length.
	DefaultPrecisionMs int64 = 100
	// DefaultWheelSlots is the stock ring size (2 × 7 days of 1-s slots,
	// a 38 707 200-byte file). At 100 ms it spans 33.6 hours.
	DefaultWheelSlots int64 = 2 * 7 * 86400
	// DefaultMappedFileSizeTimerLog is mappedFileSizeTimerLog.
	DefaultMappedFileSizeTimerLog int64 = 100 << 20
	DefaultFlushInterval                = time.Second
	DefaultRetryInterval                = 100 * time.Millisecond
	DefaultCleanInterval                = 30 * time.Second
	DefaultBatchSize                    = 256
	DefaultCommitWindow                 = 8
)

// Options configures a TimerStore.
type Options struct {
	// Dir is the store root (storePathRootDir): timerlog/, timerwheel and
	// config/timercheck, config/timerdelete.json live under it.
	Dir string
	// PrecisionMs is timerPrecisionMs: the width of a wheel slot (1..60000).
	PrecisionMs int64
	// MaxDelaySec is timerMaxDelaySec, the longest accepted delay (Admit) and
	// the furthest recall timestamp.
	MaxDelaySec int64
	// RollWindow: a message due further than this from now is parked in the
	// wheel at now+RollWindow and re-put (rolled) when that time comes. It is
	// rounded down to the precision and must leave at least 60 slots of the
	// ring free; zero means half the ring.
	RollWindow time.Duration
	// WheelSlots is the ring size; the ring spans WheelSlots × PrecisionMs,
	// which must not exceed 2^31-1 ms.
	WheelSlots int64
	// MappedFileSizeTimerLog is the size of each TimerLog segment.
	MappedFileSizeTimerLog int64
	// FlushInterval is timerFlushIntervalMs: how often the TimerLog, wheel and
	// checkpoint are made durable.
	FlushInterval time.Duration
	// RetryInterval is the pause before retrying a delivery the store refused
	// for a transient reason.
	RetryInterval time.Duration
	// CleanInterval is how often TimerLog segments no longer referenced are
	// deleted.
	CleanInterval time.Duration
	// BatchSize bounds the deliveries done between two yields, so a flood of
	// messages due together does not starve new sends.
	BatchSize int
	// CommitWindow bounds, in batches, the deliveries not yet committed: the
	// flush goroutine commits them once a batch is uncommitted while the
	// dequeue goes on, and the dequeue waits for that commit only when
	// CommitWindow batches are uncommitted. A kill -9 redoes at most
	// BatchSize × CommitWindow deliveries of the dequeue.
	CommitWindow int
	// Coalesce paces the dequeue's delivery rounds (clock.Rounds): after a
	// round that delivered, timers due within Coalesce wait for its end and
	// go out together. Zero: each due millisecond is a round.
	Coalesce time.Duration
	// Store is the message store (required).
	Store Store
	// BrokerName is checked against recall handles.
	BrokerName string
	// DeadLetterPath is the log of messages the store refuses for good and
	// that have no DLQ (store.Diverter); empty means
	// <Dir>/deadletter/timer.log.
	DeadLetterPath string
	// DLQTopics, when set, registers a DLQ topic before a refused retry
	// message is moved there (the broker's topic table).
	DLQTopics DLQTopics
	Clock     clock.Clock    // nil means the wall clock
	Logger    zerolog.Logger // the zero Logger is silent
	// FS carries every file operation of the timer log, wheel, checkpoint,
	// timerdelete.json and dead-letter log (store/vfs.go); nil is the real
	// file system. The broker passes the store's Options.FS.
	FS store.FS

	// failpoint, when set (tests), is called at each named durability step;
	// an error simulates the death of the process at that point.
	failpoint func(name string) error
	// verifyTailBytes (tests; 0: defaultVerifyTailBytes) is how much of the
	// TimerLog below the checkpoint open checks unit by unit (recover.go).
	verifyTailBytes int64
}

// blankSlots is the free part of the ring kept between the read cursor and
// the furthest slot in use (stock TIMER_BLANK_SLOTS).
const blankSlots = 60

func (o Options) normalized() (Options, error) {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("timer: Dir is empty"))
	}
	o.FS = store.OrOS(o.FS)
	if o.verifyTailBytes <= 0 {
		o.verifyTailBytes = defaultVerifyTailBytes
	}
	if o.Store == nil {
		errs = append(errs, errors.New("timer: Store is nil"))
	}
	if o.DeadLetterPath == "" && o.Dir != "" {
		o.DeadLetterPath = filepath.Join(o.Dir, "deadletter", "timer.log")
	}
	if o.PrecisionMs == 0 {
		o.PrecisionMs = DefaultPrecisionMs
	}
	if o.PrecisionMs < 1 || o.PrecisionMs > 60000 {
		errs = append(errs, fmt.Errorf("timer: PrecisionMs %d is outside 1..60000", o.PrecisionMs))
	}
	if o.MaxDelaySec == 0 {
		o.MaxDelaySec = DefaultMaxDelaySec
	}
	if o.MaxDelaySec < 0 {
		errs = append(errs, fmt.Errorf("timer: MaxDelaySec %d is negative", o.MaxDelaySec))
	}
	if o.WheelSlots == 0 {
		o.WheelSlots = DefaultWheelSlots
	}
	if o.WheelSlots < 2*blankSlots+2 {
		errs = append(errs, fmt.Errorf("timer: WheelSlots %d is below %d", o.WheelSlots, 2*blankSlots+2))
	} else if o.PrecisionMs >= 1 && o.WheelSlots > math.MaxInt32/o.PrecisionMs {
		errs = append(errs, fmt.Errorf("timer: WheelSlots %d × PrecisionMs %d spans more than 2^31-1 ms", o.WheelSlots, o.PrecisionMs))
	}
	if o.MappedFileSizeTimerLog == 0 {
		o.MappedFileSizeTimerLog = DefaultMappedFileSizeTimerLog
	}
	if o.MappedFileSizeTimerLog < unitSize+blankSize {
		errs = append(errs, fmt.Errorf("timer: MappedFileSizeTimerLog %d is below %d", o.MappedFileSizeTimerLog, unitSize+blankSize))
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.CleanInterval <= 0 {
		o.CleanInterval = DefaultCleanInterval
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.CommitWindow <= 0 {
		o.CommitWindow = DefaultCommitWindow
	}
	if o.Coalesce < 0 {
		errs = append(errs, fmt.Errorf("timer: Coalesce %v is negative", o.Coalesce))
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if len(errs) == 0 {
		p, span := o.PrecisionMs, o.WheelSlots*o.PrecisionMs
		if o.RollWindow == 0 {
			o.RollWindow = time.Duration(span/2) * time.Millisecond
		}
		rw := o.RollWindow.Milliseconds() / p * p
		if rw < p || rw > span-blankSlots*p {
			errs = append(errs, fmt.Errorf("timer: RollWindow %v must be between %d ms and %d ms (ring of %d slots of %d ms less %d slots)",
				o.RollWindow, p, span-blankSlots*p, o.WheelSlots, p, blankSlots))
		}
		o.RollWindow = time.Duration(rw) * time.Millisecond
	}
	return o, errors.Join(errs...)
}
