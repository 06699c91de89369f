package grpcapi

import (
	"errors"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
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
// broker refusal (*remoting.Refusal) maps its remoting response code
// through remotingCodes (ResponseBuilder.buildCode), anything else is
// INTERNAL_SERVER_ERROR.
func toStatus(err error) *v2.Status {
	if err == nil {
		return okStatus()
	}
	var se *statusError
	if errors.As(err, &se) {
		return &v2.Status{Code: se.code, Message: se.msg}
	}
	if r := remoting.AsRefusal(err); r != nil {
		if errors.Is(r.Cause, broker.ErrTopicMessageType) {
			return &v2.Status{Code: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Message: r.Remark}
		}
		return &v2.Status{Code: remotingCode(r.Code), Message: r.Remark}
	}
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}

// remotingCodes is the proxy's mapping of a broker response code
// (ResponseBuilder.buildCode); a code it does not name is
// INTERNAL_SERVER_ERROR. The three "stored, but" codes of a send are the
// proxy's mapping of the client SendStatus they give
// (SendMessageActivity.convertToSendMessageResponse).
var remotingCodes = map[int32]v2.Code{
	remoting.Success:                   v2.Code_OK,
	remoting.SystemBusy:                v2.Code_TOO_MANY_REQUESTS,
	remoting.RequestCodeNotSupported:   v2.Code_NOT_IMPLEMENTED,
	remoting.SubscriptionGroupNotExist: v2.Code_CONSUMER_GROUP_NOT_FOUND,
	remoting.TopicNotExist:             v2.Code_TOPIC_NOT_FOUND,
	remoting.NoPermission:              v2.Code_FORBIDDEN,
	remoting.MessageIllegal:            v2.Code_BAD_REQUEST,
	remoting.FlushDiskTimeout:          v2.Code_MASTER_PERSISTENCE_TIMEOUT,
	remoting.FlushSlaveTimeout:         v2.Code_SLAVE_PERSISTENCE_TIMEOUT,
	remoting.SlaveNotAvailable:         v2.Code_HA_NOT_AVAILABLE,
}

// remotingCode is the gRPC code of a broker response code.
func remotingCode(code int32) v2.Code {
	if c, ok := remotingCodes[code]; ok {
		return c
	}
	return v2.Code_INTERNAL_SERVER_ERROR
}
