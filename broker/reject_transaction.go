package broker

import (
	"strings"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// rejectTransactionHook refuses a producer's half message while
// rejectTransactionMessage is set (read on every send, so an update acts at
// once), as stock SendMessageProcessor does: NO_PERMISSION, which a
// producer retries on another broker. It acts on TRAN_MSG only (the key
// hookProperties already names) and not on the half topic, where the
// transaction service re-stores half messages it checks.
func (b *Broker) rejectTransactionHook(m *message.Message) error {
	if m.Topic == message.TopicTransHalf || !b.runtime().RejectTransactionMessage {
		return nil
	}
	if v, ok := m.Properties[message.PropTranMsg]; ok && strings.EqualFold(v, "true") {
		return remoting.Refusef(remoting.NoPermission, "the broker[%s] sending transaction message is forbidden", b.runtime().BrokerIP1)
	}
	return nil
}
