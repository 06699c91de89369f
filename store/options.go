package store

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/rmqio/rmq/internal/clock"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
)

// FlushDiskType selects how puts are made durable (Java flushDiskType).
type FlushDiskType int

const (
	// AsyncFlush acknowledges puts at once and fsyncs every FlushInterval.
	AsyncFlush FlushDiskType = iota
	// SyncFlush acknowledges a put only after its bytes are fsynced; concurrent
	// puts share one fsync (group commit).
	SyncFlush
)

// String returns the Java name.
func (t FlushDiskType) String() string {
	if t == SyncFlush {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

// ParseFlushDiskType accepts the Java names ASYNC_FLUSH and SYNC_FLUSH.
func ParseFlushDiskType(s string) (FlushDiskType, error) {
	switch s {
	case "ASYNC_FLUSH":
		return AsyncFlush, nil
	case "SYNC_FLUSH":
		return SyncFlush, nil
	}
	return 0, fmt.Errorf("store: unknown flushDiskType %q", s)
}

// Defaults applied by Open to zero-valued options.
const (
	DefaultMappedFileSizeCommitLog    = 1 << 30
	DefaultMappedFileSizeConsumeQueue = 300000 * cqUnitSize
	DefaultFlushInterval              = 500 * time.Millisecond
	DefaultFlushConsumeQueueInterval  = time.Second
	DefaultSyncFlushTimeout           = 5 * time.Second
	DefaultMaxMessageSize             = 4 << 20
)

// minCommitLogFileSize keeps room for at least a few records per file.
const minCommitLogFileSize = 4096

// Options configures a Store. Zero values take the defaults above.
type Options struct {
	// Dir is storePathRootDir: commitlog/, consumequeue/, checkpoint, abort,
	// lock and config/ live under it.
	Dir string
	// CommitLogDir is storePathCommitLog: where the commitlog files live
	// (empty: <Dir>/commitlog), e.g. a store moved from a Java broker
	// that kept its commitlog on another disk.
	CommitLogDir               string
	MappedFileSizeCommitLog    int64 // bytes per commitlog file
	MappedFileSizeConsumeQueue int64 // bytes per consume-queue file, rounded up to a multiple of 20
	FlushDiskType              FlushDiskType
	FlushInterval              time.Duration // ASYNC_FLUSH commitlog fsync period
	// FlushConsumeQueueInterval is the period of the consume-queue fsync, after
	// which the checkpoint is rewritten.
	FlushConsumeQueueInterval time.Duration
	// SyncFlushTimeout bounds how long a SYNC_FLUSH put waits for its fsync
	// before answering PutFlushDiskTimeout.
	SyncFlushTimeout time.Duration
	MaxMessageSize   int // largest body in bytes
	// Multi-dispatch and light message queues (lmq.go; 4.9.8
	// MessageStoreConfig enableMultiDispatch, enableLmq,
	// maxLmqConsumeQueueNum).
	EnableMultiDispatch   bool
	EnableLmq             bool
	MaxLmqConsumeQueueNum int
	// StoreHost is written as STOREHOST in every record and is part of every
	// message id: the broker's registered address. It must be IPv4 (or unset).
	StoreHost netip.AddrPort
	// TagsCode computes the consume-queue tagsCode of a message at dispatch,
	// including when queues are rebuilt at recovery. nil means
	// message.TagsHash(props.Get(message.PropTags)).
	TagsCode func(topic string, props message.Props, storeTimestamp int64) int64
	// OnDispatch is called by the dispatcher for every stored message, after
	// its consume-queue unit (if it gets one) is written: on the dispatch
	// goroutine, or on the goroutine of a put that dispatches its own
	// records (dispatch_own.go), which may be a network event loop; calls
	// never overlap. During recovery it is called on the Open goroutine for
	// each re-dispatched record. Records near the end of the log may be
	// dispatched again after a crash. It must not block: dispatch of later
	// messages, and the put, wait for it.
	OnDispatch func(d DispatchRequest)
	// OnDispatchBatch, if set, is called on the same goroutine after each run
	// of OnDispatch calls: every record the dispatcher found published at
	// once (at most a few hundred), or the records of a recovery scan. When
	// it runs, the consume queues hold every record OnDispatch saw, so
	// OnDispatch can just note who is to be woken and OnDispatchBatch wake
	// each of them once, with the whole batch readable.
	OnDispatchBatch func()
	// Index configures the key index behind QueryMessage (index_service.go).
	Index IndexOptions
	// Clock is read for store timestamps and checkpoint times and drives
	// the flush periods and the SYNC_FLUSH timeouts (clock.Real{} when nil).
	// The group-commit pacing alone stays on the wall clock: it measures
	// the cost of syncs, not a period anyone waits for.
	Clock clock.Clock
	// OSPageCacheBusyTimeout is osPageCacheBusyTimeOutMills: a put that
	// finds the put lock held for longer is refused with
	// ErrOSPageCacheBusy (pagecache_busy.go). 0 never refuses.
	OSPageCacheBusyTimeout time.Duration
	// BeforeSegmentCreate, when set (a failpoint for tests), runs on the
	// allocator goroutine before it creates the commitlog file starting at
	// the given offset; while it blocks, that file stays unready.
	BeforeSegmentCreate func(start int64)
	Logger              zerolog.Logger // the zero Logger is silent
	// FS carries every file operation of the store (vfs.go): the commitlog,
	// consume queues, index, checkpoint, abort file, dead-letter logs and
	// the JSON files written with WriteFileAtomic. nil is the real file
	// system; tests pass an ErrorFS to inject faults, and the broker passes
	// the same FS to the timer and schedule services.
	FS FS

	// NoPreallocate leaves new commitlog files sparse instead of reserving
	// their blocks with fallocate (a small test or development store: the
	// disk holds what was written, not whole segments). A full disk then
	// shows when a write faults, which is refused as ErrDiskFull.
	NoPreallocate bool
	// PageCacheKeep is how many bytes of the commitlog behind the older of
	// the flushed and dispatched positions keep their page cache; older
	// pages are dropped from it, so that new records go into recycled pages
	// (commitlog_cache.go). 0 never drops any: the kernel decides, as for
	// the Java broker.
	PageCacheKeep int64
	// Retention is the cleanup of expired files and the disk guard
	// (cleanup.go, disk.go).
	Retention RetentionOptions

	// dispatchFault, when set (tests only), runs before a record's unit is
	// written; an error it returns is treated as that write's.
	dispatchFault func(d *DispatchRequest) error
	// noOwnDispatch (tests only) leaves every record to the dispatcher
	// goroutine (dispatch_own.go): for a dispatchFault that blocks.
	noOwnDispatch bool
	// maxDeferred (tests only; 0: defaultMaxDeferred) bounds the records
	// waiting for files (dispatch_defer.go).
	maxDeferred int
	// afterReplicaCopy, when set (tests only), runs in AppendReplicated
	// after the bytes are copied in, before any is published: a crash there.
	afterReplicaCopy func()
	// truncateFault, when set (tests only), is asked at each step of
	// TruncateTo (truncate.go) and stops the cut there when it says so,
	// as a crash would.
	truncateFault func(step string) bool
}

// normalized returns o with defaults applied, or an error for unusable values.
func (o Options) normalized() (Options, error) {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("store: Dir is empty"))
	}
	o.FS = OrOS(o.FS)
	if o.maxDeferred <= 0 {
		o.maxDeferred = defaultMaxDeferred
	}
	if o.MappedFileSizeCommitLog == 0 {
		o.MappedFileSizeCommitLog = DefaultMappedFileSizeCommitLog
	}
	if o.MappedFileSizeCommitLog < minCommitLogFileSize {
		errs = append(errs, fmt.Errorf("store: MappedFileSizeCommitLog %d is below %d", o.MappedFileSizeCommitLog, minCommitLogFileSize))
	}
	if o.MappedFileSizeConsumeQueue == 0 {
		o.MappedFileSizeConsumeQueue = DefaultMappedFileSizeConsumeQueue
	}
	if o.MappedFileSizeConsumeQueue < 0 {
		errs = append(errs, fmt.Errorf("store: MappedFileSizeConsumeQueue %d is negative", o.MappedFileSizeConsumeQueue))
	} else if r := o.MappedFileSizeConsumeQueue % cqUnitSize; r != 0 {
		o.MappedFileSizeConsumeQueue += cqUnitSize - r
	}
	if o.PageCacheKeep < 0 {
		errs = append(errs, fmt.Errorf("store: PageCacheKeep %d is negative", o.PageCacheKeep))
	}
	if o.FlushDiskType != AsyncFlush && o.FlushDiskType != SyncFlush {
		errs = append(errs, fmt.Errorf("store: unknown FlushDiskType %d", o.FlushDiskType))
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.FlushConsumeQueueInterval <= 0 {
		o.FlushConsumeQueueInterval = DefaultFlushConsumeQueueInterval
	}
	if o.SyncFlushTimeout <= 0 {
		o.SyncFlushTimeout = DefaultSyncFlushTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.MaxLmqConsumeQueueNum <= 0 {
		o.MaxLmqConsumeQueueNum = DefaultMaxLmqConsumeQueueNum
	}
	if o.StoreHost.IsValid() && message.HostIsV6(o.StoreHost) {
		errs = append(errs, fmt.Errorf("%w: StoreHost %s", ErrHostNotIPv4, o.StoreHost))
	}
	if a := o.StoreHost.Addr(); a.Is4In6() {
		o.StoreHost = netip.AddrPortFrom(a.Unmap(), o.StoreHost.Port())
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	var err error
	if o.Retention, err = o.Retention.normalized(o.MappedFileSizeConsumeQueue); err != nil {
		errs = append(errs, err)
	}
	return o, errors.Join(errs...)
}

// commitLogPath is the commitlog directory of o.
func (o *Options) commitLogPath() string {
	if o.CommitLogDir != "" {
		return o.CommitLogDir
	}
	return filepath.Join(o.Dir, commitLogDir)
}
