package brokerstats

import (
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
	// MessageSize is the size of each stored message by topic (bytes; a
	// batch counts as its messages of average size), as 5.x records
	// rocketmq_message_size per topic.
	MessageSize *histo.ByKey[string]
	rpc         *histo.ByKey[rpcKey]
	// Pulled is the next offset each group pulls on each queue (Key with
	// QueueID): pulled but uncommitted messages are in flight, messages past
	// it are ready.
	Pulled *Set
	// SendToDLQ counts messages a consumer sent back into its DLQ, by
	// original topic and group.
	SendToDLQ *Set
	// PopOut counts popped messages and their bytes by requested topic,
	// group and whether they came from the POP retry topic: 5.x counts
	// pops in rocketmq_messages_out_total apart from pulls, with is_retry
	// (PopMessageProcessor).
	PopOut *histo.Family[PopKey, *PopCount]
	// TopicCreate and GroupCreate time UPDATE_AND_CREATE_TOPIC(_LIST) and
	// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP(_LIST) by outcome (and, for a
	// topic, whether it is a system topic), as AdminBrokerProcessor does.
	TopicCreate *histo.ByKey[CreateKey]
	GroupCreate *histo.ByKey[CreateKey]
}

// CreateKey labels a create's execution time: 5.x invocation_status
// ("success" or "failure") and, for topics, is_system.
type CreateKey struct{ Success, System bool }

// CreateTimeBoundsMs are 5.x createTimeBuckets (ms).
var CreateTimeBoundsMs = []int64{10, 100, 1000, 3000, 5000}

// PopKey is one series of popped messages.
type PopKey struct {
	Topic, Group string
	Retry        bool
}

// PopCount is the messages and bytes popped for one PopKey.
type PopCount struct{ Msgs, Bytes atomic.Int64 }

// RecordPop counts msgs messages of bytes popped by group from topic (its
// retry topic when retry).
func (d *Detail) RecordPop(topic, group string, retry bool, msgs, bytes int) {
	c := d.PopOut.Get(PopKey{topic, group, retry})
	c.Msgs.Add(int64(msgs))
	c.Bytes.Add(int64(bytes))
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
		MessageSize: histo.NewByKey[string](MessageSizeBounds...),
		rpc:         histo.NewByKey[rpcKey](RPCLatencyBoundsMs...),
		Pulled:      newSet("PULLED_OFFSET", formQueueTopicGroup),
		SendToDLQ:   newSet("SEND_TO_DLQ", formTopicGroup),
		PopOut:      histo.NewFamily[PopKey](func() *PopCount { return new(PopCount) }),
		TopicCreate: histo.NewByKey[CreateKey](CreateTimeBoundsMs...),
		GroupCreate: histo.NewByKey[CreateKey](CreateTimeBoundsMs...),
	}
}

// EnableDetail turns on the Detail records (once; later calls keep the
// first). Detail is nil until then.
func (m *Manager) EnableDetail() { m.detail.CompareAndSwap(nil, newDetail()) }

// Detail is nil unless EnableDetail was called.
func (m *Manager) Detail() *Detail { return m.detail.Load() }

// RecordRPC counts one request of code answered with resp after d.
func (d *Detail) RecordRPC(code, resp int32, dur time.Duration) {
	d.rpc.Observe(rpcKey{code, resp}, dur.Milliseconds())
}

// RPC lists the request latency histograms.
func (d *Detail) RPC() []RPCLatency {
	var out []RPCLatency
	d.rpc.Each(func(k rpcKey, h *histo.Histogram) {
		out = append(out, RPCLatency{Code: k.code, Response: k.resp, Hist: h})
	})
	return out
}

// RecordPulled notes that group's next pull on topic/queueID starts at next.
func (d *Detail) RecordPulled(topic, group string, queueID int32, next int64) {
	d.Pulled.Item(Key{Topic: topic, Group: group, QueueID: queueID}).value.Store(next)
}
