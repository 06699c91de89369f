package grpcapi

import (
	"errors"
	"fmt"
	"testing"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/remoting"
)

// A broker refusal reaches the gRPC client with the code the proxy's
// ResponseBuilder.buildCode gives its response code, and its remark, also
// when wrapped; a code buildCode does not name, and any error that is not
// a refusal, is INTERNAL_SERVER_ERROR.
func TestToStatusMapsBrokerRefusals(t *testing.T) {
	for code, want := range map[int32]v2.Code{
		remoting.SystemBusy:                v2.Code_TOO_MANY_REQUESTS,
		remoting.RequestCodeNotSupported:   v2.Code_NOT_IMPLEMENTED,
		remoting.SubscriptionGroupNotExist: v2.Code_CONSUMER_GROUP_NOT_FOUND,
		remoting.TopicNotExist:             v2.Code_TOPIC_NOT_FOUND,
		remoting.NoPermission:              v2.Code_FORBIDDEN,
		remoting.MessageIllegal:            v2.Code_BAD_REQUEST,
		remoting.FlushDiskTimeout:          v2.Code_MASTER_PERSISTENCE_TIMEOUT,
		remoting.SystemError:               v2.Code_INTERNAL_SERVER_ERROR,
		remoting.ServiceNotAvailable:       v2.Code_INTERNAL_SERVER_ERROR,
		remoting.SubscriptionParseFailed:   v2.Code_INTERNAL_SERVER_ERROR,
	} {
		err := fmt.Errorf("wrapped: %w", remoting.Refuse(code, "why"))
		if s := toStatus(err); s.Code != want || s.Message != "why" {
			t.Errorf("code %d: status %v %q, want %v \"why\"", code, s.Code, s.Message, want)
		}
	}
	typed := &remoting.Refusal{Code: remoting.MessageIllegal, Remark: "type", Cause: broker.ErrTopicMessageType}
	if s := toStatus(typed); s.Code != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Errorf("message type refusal: %v, want MESSAGE_PROPERTY_CONFLICT_WITH_TYPE", s.Code)
	}
	if s := toStatus(errors.New("disk")); s.Code != v2.Code_INTERNAL_SERVER_ERROR || s.Message != "disk" {
		t.Errorf("plain error: %v %q", s.Code, s.Message)
	}
	if _, _, ok := broker.Refused(errors.New("disk")); ok {
		t.Error("broker.Refused took a plain error for a refusal")
	}
}
