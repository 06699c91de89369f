package rmqtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// This file reads the broker's state in process, without a client: what a
// queue holds, where a group stands, and the messages of a topic. Each call
// is a snapshot: the broker goes on serving clients meanwhile. A stored
// message reaches its consume queue asynchronously (the dispatch, as in the
// stock store), so each read first waits, up to the settle timeout, until
// everything stored before the call is dispatched: a message whose send
// was answered before the call is counted.

// dispatchPoll is how often waitDispatched looks at the store.
const dispatchPoll = 100 * time.Microsecond

// waitDispatched waits until every commitlog byte stored before the call is
// in its consume queue, or the settle timeout passes (false).
func (s *Server) waitDispatched() bool {
	st := s.b.Store()
	target := st.MaxPhyOffset()
	deadline := time.Now().Add(s.settle)
	// MaxPhyOffset-DispatchBehind reads the end again, so it never
	// overstates how far dispatch has come.
	for st.MaxPhyOffset()-st.DispatchBehind() < target {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(dispatchPoll)
	}
	return true
}

// Message is a message as the broker stores it (Messages), or one to store
// (Send).
type Message struct {
	Topic string
	// QueueID is the queue; QueueOffset the message's place in it (the
	// consume-queue offset consumers commit past).
	QueueID     int
	QueueOffset int64
	Body        []byte
	// Tags and Keys are the TAGS and KEYS properties (keys split at the
	// stock separator, a blank).
	Tags string
	Keys []string
	// Properties are every property stored with the message: the
	// producer's (TAGS and KEYS included) and the broker's own (CLUSTER,
	// and for a delivered delay or timer message REAL_TOPIC, DELAY and the
	// like). Send adds Tags and Keys to them.
	Properties map[string]string
	// MsgID is the broker's offset message id (store host and commitlog
	// offset), not the client's UNIQ_KEY (in Properties when a client set
	// it).
	MsgID string
	// BornTime is the producer's clock at the send (Send: the virtual
	// clock), StoreTime the broker's virtual clock when it stored the
	// message (for a delivered delay or timer message: the delivery).
	BornTime       time.Time
	StoreTime      time.Time
	ReconsumeTimes int
}

// Send stores m as a producer's SEND_MESSAGE would, without a client: the
// topic must exist (CreateTopic; as through the 5.x proxy, this send does
// not auto-create it), the size limits and the topic's message type are
// checked, and the put hooks run, so a DELAY property makes it a delay-level
// message and TIMER_DELIVER_MS / TIMER_DELAY_SEC a timer message, both on
// the virtual clock. m's Topic, QueueID (negative: a queue at random),
// Body, Tags, Keys and Properties are sent. It returns m with QueueID,
// QueueOffset and MsgID as the broker answered (for a delay or timer
// message, those of the system queue holding it until it is due) and
// BornTime set. A refused send's error is a *remoting.Refusal with the
// stock response code.
func (s *Server) Send(m Message) (Message, error) {
	props := make(map[string]string, len(m.Properties)+2)
	for k, v := range m.Properties {
		props[k] = v
	}
	if m.Tags != "" {
		props[message.PropTags] = m.Tags
	}
	if len(m.Keys) > 0 {
		props[message.PropKeys] = strings.Join(m.Keys, message.KeySeparator)
	}
	born := s.clk.Now()
	r, err := s.b.Put(broker.PutRequest{
		Topic: m.Topic, QueueID: int32(m.QueueID), Body: m.Body, Properties: props,
		BornTimestamp: born.UnixMilli(), From: "rmqtest.Send",
	})
	if err != nil {
		return m, err
	}
	m.QueueID, m.QueueOffset, m.MsgID, m.BornTime = int(r.QueueID), r.QueueOffset, r.MsgID, born
	return m, nil
}

// MinOffset is the queue's smallest offset still stored (stock
// GET_MIN_OFFSET): 0 until retention deletes the queue's first messages.
func (s *Server) MinOffset(topic string, queue int) int64 {
	s.waitDispatched()
	return s.b.Store().MinOffsetInQueue(topic, int32(queue))
}

// MaxOffset is the queue's next offset, the number of messages it has held
// (stock GET_MAX_OFFSET); 0 for a queue that does not exist.
func (s *Server) MaxOffset(topic string, queue int) int64 {
	s.waitDispatched()
	return s.b.Store().MaxOffsetInQueue(topic, int32(queue))
}

// CommittedOffset is group's committed offset in the queue (stock
// QUERY_CONSUMER_OFFSET): the next offset it will consume there, false if it
// has committed none. Stock clients commit asynchronously (the Go and Java
// push consumers every 5 s of real time), so poll it with a deadline.
func (s *Server) CommittedOffset(group, topic string, queue int) (int64, bool) {
	return s.b.Clients().Offsets.Query(group, topic, int32(queue))
}

// Lag is how many messages of topic group has not consumed: over the
// topic's read queues, the queue's max offset less the group's committed
// offset (none committed counts as 0), as GET_CONSUME_STATS computes the
// diff mqadmin consumerProgress shows. 0 for a topic that does not exist.
func (s *Server) Lag(group, topic string) int64 {
	tc := s.b.Topics().Get(topic)
	if tc == nil {
		return 0
	}
	s.waitDispatched()
	var lag int64
	for q := int32(0); q < tc.ReadQueueNums; q++ {
		end := max(s.b.Store().MaxOffsetInQueue(topic, q), 0)
		committed, _ := s.b.Clients().Offsets.Query(group, topic, q)
		lag += end - max(committed, 0)
	}
	return lag
}

// readBatch is how many messages Messages reads from a queue at a time.
const readBatch = 64

// Messages reads back every message stored on topic that consumers can read
// now, queue by queue and in offset order within a queue: a delay or timer
// message appears once it has been delivered (before, it waits on a system
// topic), a half transaction message once committed. Reads do not count in
// the broker's consume statistics. Retry and dead-letter topics
// (%RETRY%group, %DLQ%group) are read the same way.
func (s *Server) Messages(topic string) ([]Message, error) {
	st := s.b.Store()
	if !s.waitDispatched() {
		return nil, fmt.Errorf("rmqtest: messages stored on the broker not dispatched to their queues after %v: %s", s.settle, s.b.DueReport())
	}
	var out []Message
	for _, q := range st.QueueIDs(topic) {
		for off := st.MinOffsetInQueue(topic, q); off < st.MaxOffsetInQueue(topic, q); {
			r := st.ReadQueue(topic, q, off, readBatch, 16<<20)
			switch r.Status {
			case store.Found, store.MessageWasRemoving, store.NoMatchedMessage:
			case store.OffsetTooSmall: // retention deleted them meanwhile
				off = r.MinOffset
				continue
			default:
				return out, fmt.Errorf("rmqtest: read %s queue %d at %d: %v", topic, q, off, r.Status)
			}
			for _, raw := range r.Messages {
				m, err := message.DecodeRecord(raw)
				if err != nil {
					return out, fmt.Errorf("rmqtest: decode %s queue %d: %w", topic, q, err)
				}
				out = append(out, fromRecord(m))
			}
			if r.NextBeginOffset <= off {
				return out, fmt.Errorf("rmqtest: read %s queue %d at %d made no progress (%v)", topic, q, off, r.Status)
			}
			off = r.NextBeginOffset
		}
	}
	return out, nil
}

// fromRecord is a stored record as a Message.
func fromRecord(m *message.MessageExt) Message {
	var keys []string
	if k := m.Properties[message.PropKeys]; k != "" {
		keys = strings.Fields(k)
	}
	return Message{
		Topic: m.Topic, QueueID: int(m.QueueID), QueueOffset: m.QueueOffset, Body: m.Body,
		Tags: m.Properties[message.PropTags], Keys: keys, Properties: m.Properties, MsgID: m.MsgID,
		BornTime: time.UnixMilli(m.BornTimestamp), StoreTime: time.UnixMilli(m.StoreTimestamp),
		ReconsumeTimes: int(m.ReconsumeTimes),
	}
}
