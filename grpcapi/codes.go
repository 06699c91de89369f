package grpcapi

import (
	"errors"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
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
// broker refusal maps its kind through refusalCodes (ResponseBuilder
// buildCode), anything else is INTERNAL_SERVER_ERROR.
func toStatus(err error) *v2.Status {
	if err == nil {
		return okStatus()
	}
	var se *statusError
	if errors.As(err, &se) {
		return &v2.Status{Code: se.code, Message: se.msg}
	}
	if kind, remark, ok := broker.Refused(err); ok {
		if errors.Is(err, broker.ErrTopicMessageType) {
			return &v2.Status{Code: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Message: remark}
		}
		return &v2.Status{Code: refusalCodes[kind], Message: remark}
	}
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}

// refusalCodes is the proxy's mapping of a broker refusal
// (ResponseBuilder.buildCode): a response code it does not name is
// INTERNAL_SERVER_ERROR.
var refusalCodes = [...]v2.Code{
	broker.RefusedOther:        v2.Code_INTERNAL_SERVER_ERROR,
	broker.RefusedBusy:         v2.Code_TOO_MANY_REQUESTS,
	broker.RefusedUnsupported:  v2.Code_NOT_IMPLEMENTED,
	broker.RefusedNoGroup:      v2.Code_CONSUMER_GROUP_NOT_FOUND,
	broker.RefusedNoTopic:      v2.Code_TOPIC_NOT_FOUND,
	broker.RefusedForbidden:    v2.Code_FORBIDDEN,
	broker.RefusedIllegal:      v2.Code_BAD_REQUEST,
	broker.RefusedFlushTimeout: v2.Code_MASTER_PERSISTENCE_TIMEOUT,
}

// sendStatusCodes is the proxy's code for a message stored, but not as the
// producer asked (SendMessageActivity.convertToSendMessageResponse reads
// the client SendStatus).
var sendStatusCodes = map[string]v2.Code{
	"FLUSH_DISK_TIMEOUT":  v2.Code_MASTER_PERSISTENCE_TIMEOUT,
	"FLUSH_SLAVE_TIMEOUT": v2.Code_SLAVE_PERSISTENCE_TIMEOUT,
	"SLAVE_NOT_AVAILABLE": v2.Code_HA_NOT_AVAILABLE,
}
