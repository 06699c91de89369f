package clients

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// offsetWrapper is one queue's entry of a ConsumeStats body.
type offsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

type consumeStatsEntry struct {
	mq  remoting.MessageQueue
	off offsetWrapper
}

// getConsumeStats reports, per read queue of each topic the group consumes,
// the broker's max offset, the group's committed offset and the store time of
// the last consumed message (mqadmin consumerProgress). Without a topic it
// covers every topic the group has offsets for; a topic the online group does
// not subscribe to is skipped, as by the stock broker.
func (s *Service) getConsumeStats(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetConsumeStatsRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic := hd.ConsumerGroup, hd.Topic
	topics := []string{topic}
	if strings.TrimSpace(topic) == "" {
		topics = s.Offsets.TopicsByGroup(group)
	}
	var entries []consumeStatsEntry
	for _, t := range topics {
		tc := s.topics.Get(t)
		if tc == nil {
			continue
		}
		if s.Consumers.FindSubscription(group, t) == nil && s.Consumers.SubscriptionCount(group) > 0 {
			continue
		}
		entries = append(entries, s.consumeStatsEntries(group, t, tc.ReadQueueNums)...)
	}
	return successResponse(req, encodeConsumeStats(entries, 0))
}

// encodeConsumeStats writes a ConsumeStats body in fastjson's form for maps
// keyed by an object, the only form Java's parser is known to read back:
//
//	{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":1700000000000}}}
//
// Entries are sorted by topic, then queue id.
func encodeConsumeStats(entries []consumeStatsEntry, tps float64) []byte {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].mq.Topic != entries[j].mq.Topic {
			return entries[i].mq.Topic < entries[j].mq.Topic
		}
		return entries[i].mq.QueueID < entries[j].mq.QueueID
	})
	buf := make([]byte, 0, 64+len(entries)*160)
	buf = append(buf, `{"consumeTps":`...)
	buf = fastjson.AppendDouble(buf, tps)
	buf = append(buf, `,"offsetTable":{`...)
	for i := range entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		mq := &entries[i].mq
		buf = fastjson.AppendMessageQueue(buf, mq.BrokerName, mq.QueueID, mq.Topic)
		buf = append(buf, ':')
		v, err := json.Marshal(&entries[i].off)
		if err != nil {
			panic("broker: marshal offset wrapper: " + err.Error()) // three int64 fields always marshal
		}
		buf = append(buf, v...)
	}
	return append(buf, "}}"...)
}
