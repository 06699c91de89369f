package conf

import (
	"errors"
	"fmt"
)

var (
	// ErrSyntax marks a line that cannot be read (a malformed \u escape).
	ErrSyntax = errors.New("conf: syntax error")
	// ErrBadValue marks a value that does not parse as its field's type; the
	// concrete error is a *ValueError.
	ErrBadValue = errors.New("conf: bad value")
	// ErrTarget marks a destination that is not a non-nil pointer to a struct,
	// or a tagged field that cannot be set or has an unsupported type.
	ErrTarget = errors.New("conf: bad destination")
)

// ValueError reports a value that does not parse as the type of the field its
// key is bound to.
type ValueError struct {
	File  string
	Line  int
	Key   string
	Value string
	Type  string // "int32", "time.Duration", ...
	Cause error  // strconv's error, or nil
}

func (e *ValueError) Error() string {
	why := "invalid"
	if errors.Is(e.Cause, errRange) {
		why = "out of range for"
	}
	return fmt.Sprintf("%s:%d: %s: %s %s %q", e.File, e.Line, e.Key, why, e.Type, e.Value)
}

// Unwrap lets errors.Is(err, ErrBadValue) match.
func (e *ValueError) Unwrap() []error { return []error{ErrBadValue, e.Cause} }
