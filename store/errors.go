package store

import "errors"

// Sentinel errors. Callers test them with errors.Is; most are returned wrapped
// with the offending value.
var (
	// ErrMessageTooLarge: the body exceeds Options.MaxMessageSize, or the record
	// (or batch) does not fit in one commitlog file.
	ErrMessageTooLarge = errors.New("store: message too large")
	// ErrPropertiesTooLarge: the encoded properties exceed 32767 bytes (int16 length).
	ErrPropertiesTooLarge = errors.New("store: properties too large")
	// ErrTopicTooLong: the topic exceeds 127 bytes (int8 length of the v1 record).
	ErrTopicTooLong = errors.New("store: topic too long")
	// ErrInvalidTopic: the topic is empty or cannot be used as a directory name.
	ErrInvalidTopic = errors.New("store: invalid topic name")
	// ErrInvalidBatch: a batch is empty, mixes topics or queues, or carries a
	// prepared/rollback transaction flag.
	ErrInvalidBatch = errors.New("store: invalid batch")
	// ErrHostNotIPv4: the store only writes IPv4 born and store hosts.
	ErrHostNotIPv4 = errors.New("store: host is not IPv4")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt: bytes that should hold a record, unit or checkpoint do not.
	// For a commitlog record whose framing is bad the error wraps
	// message.ErrCorrupt too.
	ErrCorrupt = errors.New("store: corrupt data")
	// ErrNotFound: no record, unit or queue at the requested position.
	ErrNotFound = errors.New("store: not found")
	// ErrDiskFull: a new segment file could not be allocated (ENOSPC).
	ErrDiskFull = errors.New("store: disk full")
	// ErrNotWritable: puts are refused because a record already stored
	// cannot be put in its consume queue or key index (a file of theirs
	// could not be created or written); they are accepted again once it
	// is (Java RunningFlags makeLogicsQueueError / makeIndexFileError,
	// answered SERVICE_NOT_AVAILABLE). A full disk is ErrDiskFull instead.
	ErrNotWritable = errors.New("store: not writable")
	// ErrWouldBlock: PutMessageInline refused a put that would have had to
	// wait for the disk (the next commitlog file not created yet, or the
	// warm-up zeroing the range); nothing was stored. PutMessage would wait.
	ErrWouldBlock = errors.New("store: put would wait for the disk")
	// ErrOSPageCacheBusy: the put holding the put lock has held it past
	// the page-cache-busy timeout, so this put was refused before waiting
	// for it (Java PutMessageStatus.OS_PAGECACHE_BUSY; pagecache_busy.go).
	ErrOSPageCacheBusy = errors.New("store: page cache busy")
	// ErrLocked: another process holds the store directory's lock file.
	ErrLocked = errors.New("store: directory is locked by another process")
)

// IsPermanent reports whether err is a refusal that storing the same message
// again can never overcome (its size, topic, properties, batch shape or
// hosts), as opposed to a transient failure (disk full, store closed, a
// flush timeout) worth retrying. A delivery service that meets a permanent
// refusal moves the message aside (Diverter) instead of retrying it forever.
func IsPermanent(err error) bool {
	for _, e := range []error{ErrMessageTooLarge, ErrPropertiesTooLarge, ErrTopicTooLong,
		ErrInvalidTopic, ErrInvalidBatch, ErrHostNotIPv4} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
