package broker

import (
	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

// A front end that does not answer in remoting response codes (grpcapi)
// still has to tell the broker's refusals apart: the 5.x proxy answers a
// missing topic, a missing group, a forbidden or malformed request each
// with its own code (ResponseBuilder.buildCode). Rather than reading the
// wire package's code table, it asks the broker what kind of refusal an
// error is. Every refusal stays the one *remoting.Refusal; this is only
// its reading for the other front ends.

// RefusalKind is what a broker refusal means to a front end that is not
// remoting.
type RefusalKind uint8

// The refusal kinds; every other response code is RefusedOther, an
// internal failure to such a front end.
const (
	RefusedOther        RefusalKind = iota
	RefusedBusy                     // SYSTEM_BUSY
	RefusedUnsupported              // REQUEST_CODE_NOT_SUPPORTED
	RefusedNoGroup                  // SUBSCRIPTION_GROUP_NOT_EXIST
	RefusedNoTopic                  // TOPIC_NOT_EXIST
	RefusedForbidden                // NO_PERMISSION
	RefusedIllegal                  // MESSAGE_ILLEGAL
	RefusedFlushTimeout             // FLUSH_DISK_TIMEOUT
)

// refusalKinds reads the response codes that are not RefusedOther.
var refusalKinds = map[int32]RefusalKind{
	remoting.SystemBusy:                RefusedBusy,
	remoting.RequestCodeNotSupported:   RefusedUnsupported,
	remoting.SubscriptionGroupNotExist: RefusedNoGroup,
	remoting.TopicNotExist:             RefusedNoTopic,
	remoting.NoPermission:              RefusedForbidden,
	remoting.MessageIllegal:            RefusedIllegal,
	remoting.FlushDiskTimeout:          RefusedFlushTimeout,
}

// Refused reports whether err's chain holds a broker refusal, and if so
// its kind and remark.
func Refused(err error) (kind RefusalKind, remark string, ok bool) {
	r := remoting.AsRefusal(err)
	if r == nil {
		return RefusedOther, "", false
	}
	return refusalKinds[r.Code], r.Remark, true
}

// WarnInternal counts and rate-limits, with the broker's refusals, an
// internal failure a front end logs without answering a request with it
// (reason names it; it is counted as SYSTEM_ERROR, as the broker's own
// such failures are).
func (b *Broker) WarnInternal(log *zerolog.Logger, reason string) *zerolog.Event {
	return b.refusals.Warn(log, reason, remoting.SystemError)
}
