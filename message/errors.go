package message

import "errors"

// Sentinel errors. Callers test them with errors.Is; they are returned wrapped
// with the offending value.
var (
	// ErrCorrupt: bytes that should hold a message record do not (magic,
	// lengths or TOTALSIZE inconsistent, or cut short).
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrBadBatchBody: a SEND_BATCH_MESSAGE body is empty, truncated or has
	// inconsistent lengths.
	ErrBadBatchBody = errors.New("message: malformed batch body")
	// ErrBadMessageID: a string is not an offset message id (32 or 56 hex
	// characters holding a valid port).
	ErrBadMessageID = errors.New("message: malformed message id")
)
