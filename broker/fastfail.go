package broker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Back-pressure as the stock broker answers it (4.9.8 BrokerFastFailure,
// NettyRemotingAbstract, SendMessageProcessor), so that a client's overload
// and retry paths see what they see in production.
//
// What "waited in a queue" means in rmq. Stock runs every request of a kind
// on that kind's executor and times how long it sat in the executor's
// queue. rmq serves the hottest requests (most sends and pulls) inline on
// the connection's event loop, as they are decoded, while their lane has a
// free worker (the stock executor would start them at once). Everything
// else runs on the worker pool; the four kinds stock times (send
// 10/310/320/36, pull 11, heartbeat 34, end-transaction 37) go through a
// lane each (remoting/lanes.go) of <kind>ThreadPoolNums workers and a FIFO
// of <kind>QueueCapacity, and so does a send or pull that would be served
// inline while its lane is full: it waits behind the others, and past the
// capacity is refused [OVERLOAD], as on the stock broker (integration/java
// SystemBusyTest compares the two). A request
// waits when the lane's workers are all busy, and its wait runs from the
// moment the event loop decoded it to the moment a lane worker starts it,
// on the broker clock. Every fastFailPeriod, with brokerFastFailureEnable,
// cleanExpiredRequests answers the lane heads that waited at least
// waitTimeMillsIn<Kind>Queue with SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE], and,
// while the store is page-cache busy, every waiting send with
// [PCBUSY_CLEAN_QUEUE]. The event loop only appends to a lane; the sweep
// runs on a background goroutine.
//
// Page cache busy (store/pagecache_busy.go: the put holding the put lock
// has held it past osPageCacheBusyTimeOutMills) also refuses a send before
// it is served or queued, SYSTEM_BUSY [REJECTREQUEST] (RejectRequest, on
// the event loop: one atomic load), and a put that gets past that check
// while the store is busy is answered SYSTEM_ERROR [PC_SYNCHRONIZED]
// (putFailureReason). A 4.9.8 producer retries 1 on another broker and
// throws on 2 at once (DefaultMQProducer.retryResponseCodes).

// fastFailPeriod is how often the queues are swept (stock: every 10 ms).
const fastFailPeriod = 10 * time.Millisecond

// The stock remarks (BrokerFastFailure, SendMessageProcessor).
const (
	timeoutCleanQueueRemark = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d"
	pcBusyCleanQueueRemark  = "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d"
	pcSynchronizedRemark    = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
)

// Lane names: the processor label of rocketmq_processor_watermark (5.3.3
// BrokerMetricsManager).
const (
	laneSend        = "send"
	lanePull        = "pull"
	laneHeartbeat   = "heartbeat"
	laneTransaction = "transaction"
)

// FastFailConfig is the stock BrokerFastFailure keys. Stock reads them on
// every sweep and put, so UPDATE_BROKER_CONFIG changes them live.
type FastFailConfig struct {
	// BrokerFastFailureEnable turns the queue sweep on.
	BrokerFastFailureEnable bool `conf:"brokerFastFailureEnable"`
	// WaitTimeMillsIn*Queue: a request that waited this long in its lane
	// is answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE].
	WaitTimeMillsInSendQueue        int64 `conf:"waitTimeMillsInSendQueue"`
	WaitTimeMillsInPullQueue        int64 `conf:"waitTimeMillsInPullQueue"`
	WaitTimeMillsInHeartbeatQueue   int64 `conf:"waitTimeMillsInHeartbeatQueue"`
	WaitTimeMillsInTransactionQueue int64 `conf:"waitTimeMillsInTransactionQueue"`
	// OsPageCacheBusyTimeOutMills: a put lock held longer makes the store
	// page-cache busy (store.Options.OSPageCacheBusyTimeout).
	OsPageCacheBusyTimeOutMills int64 `conf:"osPageCacheBusyTimeOutMills"`
}

// LaneConfig sizes the four lanes (stock: the executors' thread counts and
// queue capacities, read at start).
type LaneConfig struct {
	SendMessageThreadPoolNums        int `conf:"sendMessageThreadPoolNums"`
	PullMessageThreadPoolNums        int `conf:"pullMessageThreadPoolNums"`
	HeartbeatThreadPoolNums          int `conf:"heartbeatThreadPoolNums"`
	EndTransactionThreadPoolNums     int `conf:"endTransactionThreadPoolNums"`
	SendThreadPoolQueueCapacity      int `conf:"sendThreadPoolQueueCapacity"`
	PullThreadPoolQueueCapacity      int `conf:"pullThreadPoolQueueCapacity"`
	HeartbeatThreadPoolQueueCapacity int `conf:"heartbeatThreadPoolQueueCapacity"`
	EndTransactionPoolQueueCapacity  int `conf:"endTransactionPoolQueueCapacity"`
}

// defaultFastFail is stock 4.9.8's BrokerConfig and MessageStoreConfig.
func defaultFastFail() FastFailConfig {
	return FastFailConfig{
		BrokerFastFailureEnable:         true,
		WaitTimeMillsInSendQueue:        200,
		WaitTimeMillsInPullQueue:        5 * 1000,
		WaitTimeMillsInHeartbeatQueue:   31 * 1000,
		WaitTimeMillsInTransactionQueue: 3 * 1000,
		OsPageCacheBusyTimeOutMills:     1000,
	}
}

// defaultLanes is stock 4.9.8's BrokerConfig, from the CPU count.
func defaultLanes() LaneConfig {
	cpu := runtime.NumCPU()
	send := min(cpu, 4)
	return LaneConfig{
		SendMessageThreadPoolNums:        send,
		PullMessageThreadPoolNums:        16 + 2*cpu,
		HeartbeatThreadPoolNums:          min(32, cpu),
		EndTransactionThreadPoolNums:     max(8+2*cpu, 4*send),
		SendThreadPoolQueueCapacity:      10000,
		PullThreadPoolQueueCapacity:      100000,
		HeartbeatThreadPoolQueueCapacity: 50000,
		EndTransactionPoolQueueCapacity:  100000,
	}
}

// validate refuses what stock's executors refuse at start (a thread count
// or queue capacity below 1 throws IllegalArgumentException).
func (c *LaneConfig) validate() error {
	var errs []error
	for _, v := range []struct {
		key string
		n   int
	}{
		{"sendMessageThreadPoolNums", c.SendMessageThreadPoolNums}, {"pullMessageThreadPoolNums", c.PullMessageThreadPoolNums},
		{"heartbeatThreadPoolNums", c.HeartbeatThreadPoolNums}, {"endTransactionThreadPoolNums", c.EndTransactionThreadPoolNums},
		{"sendThreadPoolQueueCapacity", c.SendThreadPoolQueueCapacity}, {"pullThreadPoolQueueCapacity", c.PullThreadPoolQueueCapacity},
		{"heartbeatThreadPoolQueueCapacity", c.HeartbeatThreadPoolQueueCapacity}, {"endTransactionPoolQueueCapacity", c.EndTransactionPoolQueueCapacity},
	} {
		if v.n < 1 {
			errs = append(errs, fmt.Errorf("%s %d must be at least 1", v.key, v.n))
		}
	}
	return errors.Join(errs...)
}

// pageCacheBusyTimeout is osPageCacheBusyTimeOutMills as the store's
// threshold. Stock calls the store busy when the put lock has been held
// more than that many milliseconds, so 0 (or less) is busy whenever a put
// holds the lock at all, never "off" as a zero threshold is to the store.
func pageCacheBusyTimeout(ms int64) time.Duration {
	if ms <= 0 {
		return time.Nanosecond
	}
	return time.Duration(ms) * time.Millisecond
}

// remotingLanes are the lanes of the broker's remoting server.
func (c *LaneConfig) remotingLanes() []remoting.Lane {
	return []remoting.Lane{
		{Name: laneSend, Codes: sendLaneCodes, Workers: c.SendMessageThreadPoolNums, Capacity: c.SendThreadPoolQueueCapacity},
		{Name: lanePull, Codes: []int32{remoting.PullMessage}, Workers: c.PullMessageThreadPoolNums, Capacity: c.PullThreadPoolQueueCapacity},
		{Name: laneHeartbeat, Codes: []int32{remoting.HeartBeat}, Workers: c.HeartbeatThreadPoolNums, Capacity: c.HeartbeatThreadPoolQueueCapacity},
		{Name: laneTransaction, Codes: []int32{remoting.EndTransaction}, Workers: c.EndTransactionThreadPoolNums, Capacity: c.EndTransactionPoolQueueCapacity},
	}
}

// sendLaneCodes are the codes of stock's sendMessageExecutor, whose
// processor rejects requests while the page cache is busy.
var sendLaneCodes = []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage, remoting.ConsumerSendMsgBack}

// RejectRequest implements remoting.Rejecter: stock SendMessageProcessor
// rejects every request of the send executor while the page cache is busy.
// A refusal is counted (rmq_refusals_total) and its log line rate-limited.
func (b *Broker) RejectRequest(req *remoting.Command) bool {
	if !slices.Contains(sendLaneCodes, req.Code) || !b.store.IsOSPageCacheBusy() {
		return false
	}
	b.refusals.Warn(&b.log, "send_rejected_page_cache_busy", remoting.SystemBusy).Int32("code", req.Code).
		Msg("send refused: the page cache is busy (osPageCacheBusyTimeOutMills)")
	return true
}

func (g *startGate) RejectRequest(req *remoting.Command) bool {
	if b := g.b.Load(); b != nil {
		return b.RejectRequest(req)
	}
	return false
}

// cleanExpiredRequests is one run of stock BrokerFastFailure.
func (b *Broker) cleanExpiredRequests() {
	ff := b.runtime().FastFailConfig
	srv := b.server
	if !ff.BrokerFastFailureEnable || srv == nil {
		return
	}
	now := b.clock.Now()
	if b.store.IsOSPageCacheBusy() {
		srv.DrainWaiting(laneSend, now, b.queueRemark(pcBusyCleanQueueRemark, "queue_page_cache_busy"))
	}
	for _, q := range []struct {
		lane string
		ms   int64
	}{
		{laneSend, ff.WaitTimeMillsInSendQueue},
		{lanePull, ff.WaitTimeMillsInPullQueue},
		{laneHeartbeat, ff.WaitTimeMillsInHeartbeatQueue},
		{laneTransaction, ff.WaitTimeMillsInTransactionQueue},
	} {
		srv.ExpireWaiting(q.lane, time.Duration(q.ms)*time.Millisecond, now, b.queueRemark(timeoutCleanQueueRemark, "queue_timeout_"+q.lane))
	}
}

// queueRemark formats one of the stock clean-queue remarks for each request
// answered, and counts it as a refusal of reason.
func (b *Broker) queueRemark(format, reason string) func(waited time.Duration, left int) string {
	return func(waited time.Duration, left int) string {
		remark := fmt.Sprintf(format, waited.Milliseconds(), left)
		b.refusals.Warn(&b.log, reason, remoting.SystemBusy).Msg(remark)
		return remark
	}
}

// ProcessorWatermarks returns, per stock 5.3.3 processor label, how many
// requests wait in its queue: the four lanes, and 0 for the executors rmq
// does not have (their requests never wait in a queue).
func (b *Broker) ProcessorWatermarks() []ProcessorWatermark {
	out := make([]ProcessorWatermark, 0, len(watermarkProcessors))
	waiting := map[string]int{}
	if srv := b.server; srv != nil {
		for _, st := range srv.LaneStats(b.clock.Now()) {
			waiting[st.Name] = st.Waiting
		}
	}
	for _, p := range watermarkProcessors {
		out = append(out, ProcessorWatermark{Processor: p, Waiting: waiting[p]})
	}
	return out
}

// laneRuntimeInfo fills GET_BROKER_RUNTIME_INFO's queue figures as stock
// AdminBrokerProcessor.prepareRuntimeInfo: each lane's length, capacity and
// how long its head has waited (ms), and how long the current put has held
// the put lock (pageCacheLockTimeMills). The query executor has no lane in
// rmq: its figures stay 0.
func (b *Broker) laneRuntimeInfo(t map[string]string) {
	lc := b.opts.LaneConfig
	t["sendThreadPoolQueueCapacity"] = strconv.Itoa(lc.SendThreadPoolQueueCapacity)
	t["pullThreadPoolQueueCapacity"] = strconv.Itoa(lc.PullThreadPoolQueueCapacity)
	t["EndTransactionThreadPoolQueueCapacity"] = strconv.Itoa(lc.EndTransactionPoolQueueCapacity)
	t["pageCacheLockTimeMills"] = strconv.FormatInt(b.store.LockHeld().Milliseconds(), 10)
	if b.server == nil {
		return
	}
	for _, st := range b.server.LaneStats(b.clock.Now()) {
		size, head := strconv.Itoa(st.Waiting), strconv.FormatInt(st.Oldest.Milliseconds(), 10)
		switch st.Name {
		case laneSend:
			t["sendThreadPoolQueueSize"], t["sendThreadPoolQueueHeadWaitTimeMills"] = size, head
		case lanePull:
			t["pullThreadPoolQueueSize"], t["pullThreadPoolQueueHeadWaitTimeMills"] = size, head
		case laneTransaction:
			t["EndTransactionQueueSize"] = size
		}
	}
}

// ProcessorWatermark is one processor's queue length.
type ProcessorWatermark struct {
	Processor string
	Waiting   int
}

// watermarkProcessors are 5.3.3's processor labels, in its order.
var watermarkProcessors = []string{laneSend, "async_put", lanePull, "ack", "query_message", "client_manager",
	laneHeartbeat, "lite_pull", laneTransaction, "consumer_manager", "admin", "reply"}

// PutStallMarker in a message body makes its commitlog write wait
// testPutStallMillis (a test hook: putStallFS).
const PutStallMarker = "RMQ-TEST-STALL-PUT"

// putStallFS is o.FS, wrapped with the testPutStallMillis hook when the key
// is set. Under SYNC_FLUSH (Validate insists) a record reaches the
// commitlog through a pwrite under the put lock, so the stalled put holds
// the lock, and its send-lane worker, as a put stalled on a slow disk
// would: the clients' SYSTEM_BUSY paths can be tested from another process
// (integration/java FastFailureTest).
func (o *Options) putStallFS() store.FS {
	if o.TestPutStallMillis <= 0 {
		return o.FS
	}
	return stallFS{FS: store.OrOS(o.FS), clock: o.Clock, d: time.Duration(o.TestPutStallMillis) * time.Millisecond}
}

type stallFS struct {
	store.FS
	clock clock.Clock
	d     time.Duration
}

func (f stallFS) WriteAt(file *os.File, b []byte, off int64) (int, error) {
	if bytes.Contains(b, []byte(PutStallMarker)) && strings.Contains(file.Name(), "commitlog") {
		<-f.clock.NewTimer(f.d).C()
	}
	return f.FS.WriteAt(file, b, off)
}
