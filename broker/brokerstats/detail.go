package brokerstats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/internal/histo"
)

// Detail holds the figures only the metrics endpoint reads: request
// latencies, message sizes, the pull position of each group on each queue
// and messages sent to a DLQ. The broker records into it only when metrics
// are on (Manager.EnableDetail before Start); every record is a lock-free
// map lookup and atomic adds.
type Detail struct {
	// MessageSize is the size of each stored message (bytes; a batch
	// counts as its messages of average size).
	MessageSize *histo.Histogram
	rpc         cowMap[rpcKey, *histo.Histogram]
	// Pulled is the next offset each group pulls on each queue (Key with
	// QueueID): pulled but uncommitted messages are in flight, messages past
	// it are ready.
	Pulled *Set
	// SendToDLQ counts messages a consumer sent back into its DLQ, by
	// original topic and group.
	SendToDLQ *Set
}

// Stock 5.x bucket bounds: rocketmq_message_size (bytes) and
// rocketmq_rpc_latency (ms).
var (
	MessageSizeBounds  = []int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}
	RPCLatencyBoundsMs = []int64{1, 3, 5, 7, 10, 100, 1000, 2000, 3000}
)

type rpcKey struct{ code, resp int32 }

// RPCLatency is one request code's latency histogram for one response code.
type RPCLatency struct {
	Code, Response int32
	Hist           *histo.Histogram
}

func newDetail() *Detail {
	return &Detail{
		MessageSize: histo.New(MessageSizeBounds...),
		Pulled:      newSet("PULLED_OFFSET", formQueueTopicGroup),
		SendToDLQ:   newSet("SEND_TO_DLQ", formTopicGroup),
	}
}

// EnableDetail turns on the Detail records (once; later calls keep the
// first). Detail is nil until then.
func (m *Manager) EnableDetail() { m.detail.CompareAndSwap(nil, newDetail()) }

// Detail is nil unless EnableDetail was called.
func (m *Manager) Detail() *Detail { return m.detail.Load() }

// RecordRPC counts one request of code answered with resp after d.
func (d *Detail) RecordRPC(code, resp int32, dur time.Duration) {
	k := rpcKey{code, resp}
	h := d.rpc.get(k)
	if h == nil {
		h = d.rpc.getOrAdd(k, func() *histo.Histogram { return histo.New(RPCLatencyBoundsMs...) })
	}
	h.Observe(dur.Milliseconds())
}

// RPC lists the request latency histograms.
func (d *Detail) RPC() []RPCLatency {
	var out []RPCLatency
	for k, h := range d.rpc.snapshot() {
		out = append(out, RPCLatency{Code: k.code, Response: k.resp, Hist: h})
	}
	return out
}

// RecordPulled notes that group's next pull on topic/queueID starts at next.
func (d *Detail) RecordPulled(topic, group string, queueID int32, next int64) {
	d.Pulled.Item(Key{Topic: topic, Group: group, QueueID: queueID}).value.Store(next)
}

// cowMap is a copy-on-write map: lock-free reads, copied under mu on add.
type cowMap[K comparable, V any] struct {
	mu sync.Mutex
	p  atomic.Pointer[map[K]V]
}

func (c *cowMap[K, V]) get(k K) V {
	var zero V
	if m := c.p.Load(); m != nil {
		return (*m)[k]
	}
	return zero
}

func (c *cowMap[K, V]) getOrAdd(k K, mk func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[K]V
	if p := c.p.Load(); p != nil {
		old = *p
		if v, ok := old[k]; ok {
			return v
		}
	}
	m := make(map[K]V, len(old)+1)
	for k2, v2 := range old {
		m[k2] = v2
	}
	v := mk()
	m[k] = v
	c.p.Store(&m)
	return v
}

func (c *cowMap[K, V]) snapshot() map[K]V {
	if p := c.p.Load(); p != nil {
		return *p
	}
	return nil
}
