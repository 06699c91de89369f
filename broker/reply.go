package broker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Request-reply (J4 ReplyMessageProcessor): a responder sends the reply with
// SEND_REPLY_MESSAGE(_V2); the broker pushes it to the requester's
// connection, named by the REPLY_TO_CLIENT property and found among the
// producer connections of this broker (or, before the requester's first
// heartbeat, as the connection the request came on: requesterTable), with PUSH_REPLY_MESSAGE_TO_CLIENT, and
// with storeReplyMessageEnable also stores it on its topic.
//
//	SEND_REPLY_MESSAGE ─► msgCheck ─► push to REPLY_TO_CLIENT ─► SUCCESS msgId "0"
//	                                          │ no client / failed ─► SYSTEM_ERROR
//	                                          └─► store (storeReplyMessageEnable): msgId, queueOffset

// requesterTable remembers, per client id, the connection that last sent a
// request (a message with REPLY_TO_CLIENT). The stock broker finds the
// requester only among producer heartbeats, so a reply that comes before the
// requester's first heartbeat fails; the Go client's Request heartbeats at
// once only for a topic the name server does not know yet. rmq falls back on
// the connection the request came on.
type requesterTable struct {
	mu       sync.Mutex
	byClient map[string]*remoting.Conn
}

// noteRequest records c as the connection of the client a request names in
// its properties text; anything else is a no-op costing one substring search.
func (t *requesterTable) noteRequest(props string, c *remoting.Conn) {
	if c == nil || !strings.Contains(props, message.PropReplyToClient) {
		return
	}
	id, ok := message.Props(props).Lookup(message.PropReplyToClient)
	if !ok || id == "" {
		return
	}
	t.mu.Lock()
	if t.byClient == nil {
		t.byClient = make(map[string]*remoting.Conn)
	}
	t.byClient[id] = c
	t.mu.Unlock()
}

func (t *requesterTable) find(clientID string) *remoting.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.byClient[clientID]; c != nil && !c.Closed() {
		return c
	}
	return nil
}

// dropConn forgets a closed connection.
func (t *requesterTable) dropConn(c *remoting.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, conn := range t.byClient {
		if conn == c {
			delete(t.byClient, id)
		}
	}
}

// replyPushTimeout bounds the push (Broker2Client.callClient's 10 s).
const replyPushTimeout = 10 * time.Second

// processReply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2.
func (b *Broker) processReply(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := b.sendResponse(req)
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}
	sh, err := parseSendHeader(req)
	if err != nil {
		return fail(remoting.SystemError, err.Error())
	}
	// Stock checks a reply as a send (msgCheck), not its size or type: the
	// push carries it as it came.
	a, refusal := b.admitSend(&sendIn{client: c, from: c.RemoteAddr(), sh: sh, skipSize: true})
	if refusal != nil {
		return fail(refusal.Code, refusal.Remark)
	}
	queueID := a.queueID
	bornHost := connHost(c)

	if remark, ok := b.pushReply(c, sh, req.Body); ok {
		resp.Code, resp.Remark = remoting.Success, ""
		resp.SetExt("msgId", "0")
		resp.SetExt("queueId", strconv.FormatInt(int64(queueID), 10))
		resp.SetExt("queueOffset", "0")
	} else {
		resp.Code, resp.Remark = remoting.SystemError, remark
	}

	if b.opts.StoreReplyMessageEnable {
		// Stored with the responder's properties as they came; a failed put
		// is only logged and leaves the push's answer (as stock).
		m := &message.Message{
			Topic: sh.Topic, QueueID: queueID, Flag: sh.Flag, Body: req.Body,
			RawProperties: sh.Properties, SysFlag: sh.SysFlag &^ msgSysFlagHostV6Mask,
			BornTimestamp: sh.BornTimestamp, BornHost: bornHost, ReconsumeTimes: sh.ReconsumeTimes,
		}
		// The answer waits for the flush and the slave as a send's does
		// (4.9.8 stores the reply with a synchronous putMessage), from
		// their callbacks; their outcome does not change it.
		flush, replica := b.storedPutWaits(req, !noWaitText(sh.Properties))
		m.SkipFlushWait = true
		res, err := b.putText(m, false)
		if err != nil {
			// Rate-limited like every refusal of a full disk, under the
			// code a send would have got (the push's answer stands).
			code, _, _ := b.putFailureReason(err)
			b.refusals.Warn(&b.log, "reply_not_stored", code).Err(err).Str("topic", sh.Topic).Msg("reply message not stored")
			return resp
		}
		code := resp.Code // the push's answer stands
		setSendReply(resp, res, queueID)
		resp.Code = code
		return b.answerWhenStored(c, resp, res.PhysicalOffset+int64(res.WroteBytes), flush, replica)
	}
	return resp
}

// pushReply sends the reply to the client named by REPLY_TO_CLIENT with
// PUSH_REPLY_MESSAGE_TO_CLIENT and waits for its answer. It returns the
// stock remark when the push did not succeed.
func (b *Broker) pushReply(c *remoting.Conn, sh *remoting.SendMessageRequestHeader, body []byte) (string, bool) {
	clientID, ok := message.Props(sh.Properties).Lookup(message.PropReplyToClient)
	if !ok {
		b.refusals.Warn(&b.log, "reply_no_client", remoting.SystemError).Msg(message.PropReplyToClient + " is null, can not reply message")
		return "reply message properties[" + message.PropReplyToClient + "] is null", false
	}
	conn := b.clients.Producers.FindConn(clientID)
	if conn == nil {
		conn = b.requesters.find(clientID)
	}
	if conn == nil {
		remark := "push reply message fail, channel of <" + clientID + "> not found."
		b.refusals.Warn(&b.log, "reply_channel_not_found", remoting.SystemError).Str("client", clientID).Msg("push reply message fail: channel not found")
		return remark, false
	}
	now := b.clock.Now().UnixMilli()
	ext := map[string]string{
		"producerGroup":         sh.ProducerGroup,
		"topic":                 sh.Topic,
		"defaultTopic":          sh.DefaultTopic,
		"defaultTopicQueueNums": strconv.FormatInt(int64(sh.DefaultTopicQueueNums), 10),
		"queueId":               strconv.FormatInt(int64(sh.QueueID), 10),
		"sysFlag":               strconv.FormatInt(int64(sh.SysFlag), 10),
		"bornTimestamp":         strconv.FormatInt(sh.BornTimestamp, 10),
		"flag":                  strconv.FormatInt(int64(sh.Flag), 10),
		"properties":            message.EditProperties(sh.Properties, []string{message.PropPushReplyTime}, [2]string{message.PropPushReplyTime, strconv.FormatInt(now, 10)}),
		"reconsumeTimes":        strconv.FormatInt(int64(sh.ReconsumeTimes), 10),
		"unitMode":              strconv.FormatBool(sh.UnitMode),
		"bornHost":              connHost(c).String(),
		"storeHost":             b.storeHost().String(),
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}
	push := remoting.NewRequest(remoting.PushReplyMessageToClient, ext, body)
	ctx, cancel := context.WithTimeout(context.Background(), replyPushTimeout)
	defer cancel()
	pushed, err := conn.Invoke(ctx, push)
	if err != nil {
		b.refusals.Warn(&b.log, "reply_push_failed", remoting.SystemError).Err(err).Str("client", clientID).Msg("push reply message failed")
		return "push reply message to " + clientID + "fail.", false
	}
	if pushed.Code != remoting.Success {
		b.refusals.Warn(&b.log, "reply_push_refused", remoting.SystemError).Str("client", clientID).Str("remark", pushed.Remark).Msg("push reply message refused")
		return "push reply message to " + clientID + "fail.", false
	}
	return "", true
}

// traceTopic is the topic created at start for message traces: the
// msgTraceTopicName when traceTopicEnable is set, else none.
func traceTopic(o *Options) string {
	if !o.TraceTopicEnable {
		return ""
	}
	if o.MsgTraceTopicName == "" {
		return message.TopicTrace
	}
	return o.MsgTraceTopicName
}
