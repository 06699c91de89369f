package grpcapi

import (
	"errors"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/remoting"
)

// statusError is a request refused with an apache.rocketmq.v2 Code, as the
// proxy refuses it (GrpcProxyException).
type statusError struct {
	code v2.Code
	msg  string
}

func (e *statusError) Error() string { return e.code.String() + ": " + e.msg }

func fail(code v2.Code, msg string) error { return &statusError{code: code, msg: msg} }

func okStatus() *v2.Status { return &v2.Status{Code: v2.Code_OK, Message: v2.Code_OK.String()} }

// toStatus maps every error this package answers with to the Status the
// stock proxy puts in its response: its own refusals keep their code, a
// broker refusal maps its remoting response code (ResponseBuilder.buildCode),
// anything else is INTERNAL_SERVER_ERROR.
func toStatus(err error) *v2.Status {
	if err == nil {
		return okStatus()
	}
	var se *statusError
	if errors.As(err, &se) {
		return &v2.Status{Code: se.code, Message: se.msg}
	}
	var be *broker.SendError
	if errors.As(err, &be) {
		if errors.Is(be.Cause, broker.ErrTopicMessageType) {
			return &v2.Status{Code: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Message: be.Remark}
		}
		return &v2.Status{Code: remotingCode(be.Code), Message: be.Remark}
	}
	var pe *pop.Error
	if errors.As(err, &pe) {
		return &v2.Status{Code: remotingCode(pe.Code), Message: pe.Remark}
	}
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}

// remotingCode is the proxy's mapping of a broker response code.
func remotingCode(code int32) v2.Code {
	switch code {
	case remoting.Success:
		return v2.Code_OK
	case remoting.SystemBusy:
		return v2.Code_TOO_MANY_REQUESTS
	case remoting.RequestCodeNotSupported:
		return v2.Code_NOT_IMPLEMENTED
	case remoting.SubscriptionGroupNotExist:
		return v2.Code_CONSUMER_GROUP_NOT_FOUND
	case remoting.TopicNotExist:
		return v2.Code_TOPIC_NOT_FOUND
	case remoting.NoPermission:
		return v2.Code_FORBIDDEN
	case remoting.MessageIllegal:
		return v2.Code_BAD_REQUEST
	case remoting.FlushDiskTimeout:
		return v2.Code_MASTER_PERSISTENCE_TIMEOUT
	default:
		return v2.Code_INTERNAL_SERVER_ERROR
	}
}
