package clients

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Admin calls the broker forwards to one consumer client and whose reply it
// relays (J4 AdminBrokerProcessor.callConsumer).

const (
	// codeConsumeMsgTimeout is ResponseCode.CONSUME_MSG_TIMEOUT.
	codeConsumeMsgTimeout int32 = 207
	// minCallableClientVersion is MQVersion V3_1_8_SNAPSHOT: older clients do
	// not serve broker-forwarded calls.
	minCallableClientVersion int32 = 62
)

// defaultClientCallTimeout bounds a forwarded call (Broker2Client.callClient).
const defaultClientCallTimeout = 10 * time.Second

func (s *Service) getConsumerRunningInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetConsumerRunningInfoRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, clientID := hd.ConsumerGroup, hd.ClientID
	return s.callConsumer(req, req.Body, group, clientID)
}

// consumeMessageDirectly asks a consumer to consume one stored message: the
// message named by msgId (an offsetMsgId) travels as the request body.
func (s *Service) consumeMessageDirectly(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ConsumeMessageDirectlyResultRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, clientID, msgID := hd.ConsumerGroup, hd.ClientID, hd.MsgID
	req.SetExt("brokerName", s.brokerName)
	body := req.Body
	if _, phyOffset, err := message.DecodeMessageID(msgID); err == nil {
		rec, err := s.store.LookMessageByOffset(phyOffset)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("message %s not found: %v", msgID, err))
		}
		body = rec
	}
	return s.callConsumer(req, body, group, clientID)
}

// callConsumer forwards req's code, header and the given body to clientID of
// group and returns the client's reply as the reply to req.
func (s *Service) callConsumer(req *remoting.Command, body []byte, group, clientID string) *remoting.Command {
	ch, ok := s.Consumers.FindChannel(group, clientID)
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
	}
	if ch.Version < minCallableClientVersion {
		return remoting.NewResponse(req, remoting.SystemError,
			fmt.Sprintf("The Consumer <%s> Version <%d> too low to finish, please upgrade it to V3_1_8_SNAPSHOT", clientID, ch.Version))
	}
	ext := make(map[string]string, len(req.Ext()))
	for k, v := range req.Ext() {
		ext[k] = v
	}
	call := remoting.NewRequest(req.Code, ext, body)
	timeout := time.Duration(s.callTimeout.Load())
	if timeout <= 0 {
		timeout = defaultClientCallTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := ch.Conn.Invoke(ctx, call)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return remoting.NewResponse(req, codeConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err))
	case err != nil:
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	}
	resp.Opaque = req.Opaque
	resp.SerializeType = req.SerializeType
	resp.Flag = remoting.FlagResponse
	return resp
}
