package admin

import (
	"fmt"

	"github.com/rmqio/rmq/remoting"
)

// GetTimerCheckPoint and GetTimerMetrics are the 5.x timer admin codes.
const (
	GetTimerCheckPoint = remoting.GetTimerCheckPoint
	GetTimerMetrics    = remoting.GetTimerMetrics
)

var responseNames = map[int32]string{
	remoting.Success:                   "SUCCESS",
	remoting.SystemError:               "SYSTEM_ERROR",
	remoting.SystemBusy:                "SYSTEM_BUSY",
	remoting.RequestCodeNotSupported:   "REQUEST_CODE_NOT_SUPPORTED",
	remoting.TransactionFailed:         "TRANSACTION_FAILED",
	remoting.FlushDiskTimeout:          "FLUSH_DISK_TIMEOUT",
	remoting.SlaveNotAvailable:         "SLAVE_NOT_AVAILABLE",
	remoting.FlushSlaveTimeout:         "FLUSH_SLAVE_TIMEOUT",
	remoting.MessageIllegal:            "MESSAGE_ILLEGAL",
	remoting.ServiceNotAvailable:       "SERVICE_NOT_AVAILABLE",
	remoting.VersionNotSupported:       "VERSION_NOT_SUPPORTED",
	remoting.NoPermission:              "NO_PERMISSION",
	remoting.TopicNotExist:             "TOPIC_NOT_EXIST",
	remoting.TopicExistAlready:         "TOPIC_EXIST_ALREADY",
	remoting.PullNotFound:              "PULL_NOT_FOUND",
	remoting.PullRetryImmediately:      "PULL_RETRY_IMMEDIATELY",
	remoting.PullOffsetMoved:           "PULL_OFFSET_MOVED",
	remoting.QueryNotFound:             "QUERY_NOT_FOUND",
	remoting.SubscriptionParseFailed:   "SUBSCRIPTION_PARSE_FAILED",
	remoting.SubscriptionNotExist:      "SUBSCRIPTION_NOT_EXIST",
	remoting.SubscriptionNotLatest:     "SUBSCRIPTION_NOT_LATEST",
	remoting.SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST",
	remoting.InvalidParameter:          "INVALID_PARAMETER",
	remoting.ConsumerNotOnline:         "CONSUMER_NOT_ONLINE",
	207:                                "CONSUME_MSG_TIMEOUT",
	208:                                "NO_MESSAGE",
	215:                                "FLOW_CONTROL",
	remoting.IllegalOperation:          "ILLEGAL_OPERATION",
}

// RequestName renders a request code as "NAME(code)".
func RequestName(code int32) string {
	if n, ok := remoting.RequestCodeName(code); ok {
		return fmt.Sprintf("%s(%d)", n, code)
	}
	return fmt.Sprintf("request(%d)", code)
}

// ResponseName is the stock name of a response code, "UNKNOWN" if it has none.
func ResponseName(code int32) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return "UNKNOWN"
}
