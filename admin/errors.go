package admin

import (
	"errors"
	"fmt"
)

// Sentinel errors; the concrete errors below wrap or accompany them.
var (
	ErrNoNamesrv       = errors.New("admin: no name server address (set -n or NAMESRV_ADDR)")
	ErrBadBody         = errors.New("admin: unreadable response body")
	ErrBadMsgID        = errors.New("admin: malformed message id")
	ErrBadRecallHandle = errors.New("admin: malformed recall handle")
	ErrNoRoute         = errors.New("admin: no route")
	ErrNotFound        = errors.New("admin: not found")
	ErrNoTimerStats    = errors.New("admin: no timer statistics")
	ErrUsage           = errors.New("admin: bad arguments")
)

// ResponseError is a non-SUCCESS answer: it names the peer, the request and
// the response code with its remark, as mqadmin's MQBrokerException does.
type ResponseError struct {
	Role    string // "broker" or "name server"
	Addr    string
	Request int32
	Code    int32
	Remark  string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s %s answered %s with CODE %d (%s) DESC: %s",
		e.Role, e.Addr, RequestName(e.Request), e.Code, ResponseName(e.Code), e.Remark)
}

// TransportError is a request that got no answer: refused, broken or timed out.
type TransportError struct {
	Role    string
	Addr    string
	Request int32
	Err     error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s %s: %s: %v", e.Role, e.Addr, RequestName(e.Request), e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// CodeOf returns the response code carried by err, or -1 when err is not a
// ResponseError.
func CodeOf(err error) int32 {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.Code
	}
	return -1
}
