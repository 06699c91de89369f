package remoting

import (
	"errors"
	"fmt"
)

// A refusal is the one way a processor says "no" with a stock response
// code: the broker's send checks and put hooks, POP, recall and the Go API
// the gRPC endpoint calls all return a *Refusal, and every front end turns
// it back into its answer in one place (RefusalResponse for remoting, the
// code table in grpcapi for gRPC). Anything that is not a *Refusal is an
// internal failure (SYSTEM_ERROR, INTERNAL_SERVER_ERROR).
//
// Cause, when set, says why beyond the code: a front end with a finer
// vocabulary than remoting's codes (gRPC's
// MESSAGE_PROPERTY_CONFLICT_WITH_TYPE) matches it with errors.Is.

// Refusal is a request refused with a response code and its remark.
type Refusal struct {
	Code   int32
	Remark string
	Cause  error
}

// Refuse is a refusal with code and remark.
func Refuse(code int32, remark string) *Refusal { return &Refusal{Code: code, Remark: remark} }

// Refusef is Refuse with a formatted remark.
func Refusef(code int32, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Remark: fmt.Sprintf(format, args...)}
}

func (e *Refusal) Error() string { return e.Remark }

func (e *Refusal) Unwrap() error { return e.Cause }

// AsRefusal returns the refusal in err's chain, or nil.
func AsRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// RefusalResponse answers req with err's code and remark when err is a
// refusal, and with SYSTEM_ERROR and err's text otherwise.
func RefusalResponse(req *Command, err error) *Command {
	if r := AsRefusal(err); r != nil {
		return NewResponse(req, r.Code, r.Remark)
	}
	return NewResponse(req, SystemError, err.Error())
}
