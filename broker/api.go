package broker

import (
	"errors"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// This file is the broker's Go API for front ends served in the same
// process that are not remoting connections (package grpcapi, the 5.x gRPC
// endpoint). A send runs the send pipeline of the remoting requests
// (pipeline.go: admitSend, putMessage); END_TRANSACTION the transaction
// service.

// PutRequest is one message to store, as a front end hands it over.
type PutRequest struct {
	Topic string
	// QueueID < 0 lets the broker pick a write queue at random.
	QueueID       int32
	Flag          int32
	Body          []byte
	Properties    map[string]string
	SysFlag       int32
	BornTimestamp int64
	BornHost      netip.AddrPort
	// From names the producer in logs and remarks.
	From string
	// CheckMessageType runs the topic message type check whatever the
	// broker's enableTopicMessageTypeCheck (the gRPC front end checks by
	// default, as the stock proxy).
	CheckMessageType bool
}

// PutReply is what a successful Put stored.
type PutReply struct {
	// MsgID is the offset message id (store host + commitlog offset).
	MsgID string
	// QueueID is the queue the producer addressed (a put hook may have moved
	// the record to a system queue).
	QueueID        int32
	QueueOffset    int64
	PhysicalOffset int64
	// TransactionID is set for a half message, RecallHandle for a timer
	// message that can be recalled.
	TransactionID string
	RecallHandle  string
	// FlushTimeout reports SYNC_FLUSH not done within syncFlushTimeout (the
	// message is stored).
	FlushTimeout bool
	// code is the send's outcome as a remoting response code: Success, or,
	// the message being stored, FlushDiskTimeout, SlaveNotAvailable or
	// FlushSlaveTimeout (a SYNC_MASTER's wait for its slave; ha.go).
	// Front ends read it as SendStatus.
	code int32
}

// SendStatus is how the message was stored, as the client's SendStatus
// names it (MQClientAPIImpl.processSendResponse): ok when SEND_OK, and
// otherwise FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE,
// the message being stored all the same. A front end that is not remoting
// (the 5.x proxy's SendMessageActivity) answers from it.
func (r *PutReply) SendStatus() (status string, ok bool) {
	code := r.code
	if code == remoting.Success && r.FlushTimeout {
		code = remoting.FlushDiskTimeout
	}
	status, _ = remoting.SendStatus(code)
	return status, code == remoting.Success
}

// ErrTopicMessageType is the Cause of a send refused by the topic message
// type check (enableTopicMessageTypeCheck), which the 5.x proxy answers
// with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE.
var ErrTopicMessageType = errors.New("broker: message type not taken by the topic's message.type")

// Put stores one message as SEND_MESSAGE would: topic checks and
// auto-creation, the size limits, the put hooks (transactions, delay levels,
// timer messages) and, under SYNC_FLUSH, the wait for the flush.
func (b *Broker) Put(req PutRequest) (*PutReply, error) {
	if !b.enter() {
		return nil, remoting.Refuse(remoting.ServiceNotAvailable, "the broker is shutting down")
	}
	defer b.inflight.Done()
	// No default topic: as through the 5.x proxy, whose route lookup fails
	// first, a topic that does not exist is not created by a send.
	sh := &remoting.SendMessageRequestHeader{Topic: req.Topic, QueueID: req.QueueID, SysFlag: req.SysFlag}
	props := make(map[string]string, len(req.Properties)+1)
	for k, v := range req.Properties {
		props[k] = v
	}
	wait := !noWait(props)
	delete(props, message.PropWait)
	a, refusal := b.admitSend(&sendIn{
		client: fromAddr(req.From), from: req.From, sh: sh,
		bodyLen: len(req.Body), propsLen: len(message.MarshalProperties(props)),
		typeCheck: true, forceTypeCheck: req.CheckMessageType, props: props,
	})
	if refusal != nil {
		return nil, refusal
	}
	queueID, sysFlag := a.queueID, a.sysFlag
	props[message.PropCluster] = b.opts.BrokerClusterName
	syncFlush := b.opts.FlushDiskType == "SYNC_FLUSH"
	m := &message.Message{
		Topic: req.Topic, QueueID: queueID, Flag: req.Flag, Body: req.Body, Properties: props,
		SysFlag: sysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, SkipFlushWait: syncFlush,
	}
	res, err := b.putMessage(m)
	if err != nil {
		return nil, remoting.Refuse(b.putFailureCode(err))
	}
	reply := &PutReply{
		MsgID: res.MsgID(0), QueueID: queueID, QueueOffset: res.QueueOffset, PhysicalOffset: res.PhysicalOffset,
		TransactionID: transaction.IDFor(m, res), RecallHandle: b.recallHandle(m),
		FlushTimeout: res.Status == store.PutFlushDiskTimeout,
	}
	if reply.FlushTimeout {
		reply.code = remoting.FlushDiskTimeout
	}
	flush, replica := syncFlush, b.isSyncMaster() && wait
	if flush || replica {
		// This goroutine is the gRPC handler's: it may wait. A half
		// message is held from the checks meanwhile (send_processor.go).
		if reply.TransactionID != "" && b.tx != nil {
			b.tx.Hold(res.PhysicalOffset)
			defer b.tx.Answered(res.PhysicalOffset)
		}
		done := make(chan int32, 1)
		b.afterPut(res.PhysicalOffset+int64(res.WroteBytes), flush, replica, func(code int32) { done <- code })
		if code := <-done; code != remoting.Success {
			reply.code = code
			reply.FlushTimeout = reply.FlushTimeout || code == remoting.FlushDiskTimeout
		}
	}
	return reply, nil
}

// fromAddr logs a front end's producer as a client address.
type fromAddr string

func (a fromAddr) MarshalZerologObject(e *zerolog.Event) { e.Str("addr", string(a)) }
