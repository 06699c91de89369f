package clients

import (
	"sort"
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// BrokerConsumeStats builds the GET_BROKER_CONSUME_STATS body (J4
// AdminBrokerProcessor.fetchAllConsumeStatsInBroker, a ConsumeStatsList):
// for every subscription group, one ConsumeStats per topic it has offsets
// for, over the topic's write queues, with consumeTps from tps (J4
// tpsGroupGetNums). isOrder keeps only ordered topics. A topic the online
// group does not subscribe to is skipped, as by the stock broker.
//
//	{"brokerAddr":"..","consumeStatsList":[{"g":[{"consumeTps":0.0,"offsetTable":{...}}]}],"totalDiff":3}
func (s *Service) BrokerConsumeStats(brokerAddr string, isOrder bool, tps func(topic, group string) float64) []byte {
	buf := []byte(`{"brokerAddr":`)
	buf = fastjson.AppendString(buf, brokerAddr)
	buf = append(buf, `,"consumeStatsList":[`...)
	var totalDiff int64
	for gi, group := range s.SubGroups.Groups() {
		if gi > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		buf = fastjson.AppendString(buf, group)
		buf = append(buf, ":["...)
		n := 0
		for _, topic := range s.Offsets.TopicsByGroup(group) {
			tc := s.topics.Get(topic)
			if tc == nil || (isOrder && !tc.Order) {
				continue
			}
			if s.Consumers.FindSubscription(group, topic) == nil && s.Consumers.SubscriptionCount(group) > 0 {
				continue
			}
			entries := s.consumeStatsEntries(group, topic, tc.WriteQueueNums)
			for _, e := range entries {
				totalDiff += e.off.BrokerOffset - e.off.ConsumerOffset
			}
			if n > 0 {
				buf = append(buf, ',')
			}
			n++
			buf = append(buf, encodeConsumeStats(entries, tps(topic, group))...)
		}
		buf = append(buf, "]}"...)
	}
	buf = append(buf, `],"totalDiff":`...)
	buf = strconv.AppendInt(buf, totalDiff, 10)
	return append(buf, '}')
}

// consumeStatsEntries reads the offsets of group on queues [0, queues) of
// topic: the per-queue entries of getConsumeStats (over the read queues) and
// of BrokerConsumeStats (over the write queues).
func (s *Service) consumeStatsEntries(group, topic string, queues int32) []consumeStatsEntry {
	entries := make([]consumeStatsEntry, 0, max(queues, 0))
	for q := int32(0); q < queues; q++ {
		e := consumeStatsEntry{mq: remoting.MessageQueue{BrokerName: s.brokerName, QueueID: q, Topic: topic}}
		e.off.BrokerOffset = max(s.store.MaxOffsetInQueue(topic, q), 0)
		if off, ok := s.Offsets.Query(group, topic, q); ok {
			e.off.ConsumerOffset = max(off, 0)
		}
		if last := e.off.ConsumerOffset - 1; last >= 0 {
			if ts, err := s.store.MessageStoreTimeStamp(topic, q, last); err == nil && ts > 0 {
				e.off.LastTimestamp = ts
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// ProducerInfo is one producer connection of GET_ALL_PRODUCER_INFO (J4
// ProducerInfo).
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// Table lists every producer group's connections (J4
// ProducerManager.getProducerTable as ProducerTableInfo.data), each group's
// sorted by client id. RemoteIP is Netty's remoteAddress().toString() as J4
// puts it there: "/ip:port".
func (m *ProducerManager) Table() map[string][]ProducerInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]ProducerInfo, len(m.groups))
	for g, chans := range m.groups {
		list := make([]ProducerInfo, 0, len(chans))
		for c, ch := range chans {
			list = append(list, ProducerInfo{
				ClientID: ch.ClientID, RemoteIP: "/" + c.RemoteAddr(), Language: ch.Language, Version: ch.Version,
				LastUpdateTimestamp: ch.LastUpdate.UnixMilli(),
			})
		}
		sort.Slice(list, func(i, j int) bool { return list[i].ClientID < list[j].ClientID })
		out[g] = list
	}
	return out
}
