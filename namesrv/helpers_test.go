package namesrv

import (
	"sync"
	"time"

	"rmq/remoting"
)

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// topics builds a topic table at the given data version counter.
func topics(counter int64, tcs ...*remoting.TopicConfig) *remoting.TopicConfigSerializeWrapper {
	w := &remoting.TopicConfigSerializeWrapper{
		DataVersion:      remoting.DataVersion{Counter: counter, Timestamp: 1700000000000 + counter},
		TopicConfigTable: map[string]*remoting.TopicConfig{},
	}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc
	}
	return w
}

func tc(name string, queues, perm int32) *remoting.TopicConfig {
	return &remoting.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}

func qd(broker string, queues, perm int32) *remoting.QueueData {
	return &remoting.QueueData{BrokerName: broker, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm}
}
