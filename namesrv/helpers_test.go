package namesrv

import (
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// newFakeClock is a manual clock for expiry tests, at a fixed start.
func newFakeClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// topics builds a topic table at the given data version counter.
func topics(counter int64, tcs ...*topicgroup.TopicConfig) *remoting.TopicConfigSerializeWrapper {
	w := &remoting.TopicConfigSerializeWrapper{
		DataVersion:      remoting.DataVersion{Counter: counter, Timestamp: 1700000000000 + counter},
		TopicConfigTable: map[string]*topicgroup.TopicConfig{},
	}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc
	}
	return w
}

func tc(name string, queues, perm int32) *topicgroup.TopicConfig {
	return &topicgroup.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}

func qd(broker string, queues, perm int32) *remoting.QueueData {
	return &remoting.QueueData{BrokerName: broker, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm}
}
