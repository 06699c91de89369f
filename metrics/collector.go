package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// TimerBounds are the due-time buckets of rocketmq_timer_message_snapshot
// and the console's pending-timer chart.
var TimerBounds = []time.Duration{
	time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour,
	6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// collector reads the broker's counters and tables at scrape time: nothing
// here runs on the send or pull path.
type collector struct {
	b        *broker.Broker
	now      func() time.Time
	descs    map[string]*prometheus.Desc
	popDescs map[string]*prometheus.Desc // popCollector's
}

type metricSpec struct {
	name, help string
	labels     []string
}

var (
	consumerLabels = []string{labelTopic, labelConsumerGroup, labelIsRetry, labelIsSystem}
	// Pulls are counted without is_retry (DefaultPullMessageResultHandler).
	pullLabels    = []string{labelTopic, labelConsumerGroup, labelIsSystem}
	topicLabels   = []string{labelTopic, labelMessageType, labelIsSystem}
	storageLabels = []string{labelStorageType, labelStorageMedium}
	// The timer's gauges and counters carry the store labels too
	// (DefaultStoreMetricsManager.newAttributesBuilder).
	timerTopicLabels = []string{labelStorageType, labelStorageMedium, labelTopic}
)

// The store labels' only values in 5.3.3 (DEFAULT_STORAGE_TYPE,
// DEFAULT_STORAGE_MEDIUM).
var storeLabelValues = []string{"local", "disk"}

// specs lists every metric the collector exports.
var specs = []metricSpec{
	{nameMessagesIn, "Messages stored by sends, by topic.", topicLabels},
	{nameMessagesOut, helpMessagesOut, pullLabels},
	{nameThroughputIn, "Commitlog bytes stored by sends, by topic.", topicLabels},
	{nameThroughputOut, helpThroughputOut, pullLabels},
	{nameMessageSize, "Size of stored messages (bytes), by topic.", topicLabels},
	{nameProducerConnections, "Producer connections.", []string{labelLanguage, labelVersion, labelProtocolType}},
	{nameConsumerConnections, "Consumer connections.", []string{labelConsumerGroup, labelLanguage, labelVersion, labelConsumeMode, labelProtocolType, labelIsSystem}},
	{nameConsumerLagMessages, "Messages stored but not yet committed by the group.", consumerLabels},
	{nameConsumerLagLatency, "Age of the oldest message not yet committed by the group (ms).", consumerLabels},
	{nameConsumerInflight, "Messages pulled but not yet committed.", consumerLabels},
	{nameConsumerQueueing, "Age of the oldest message not yet pulled (ms).", consumerLabels},
	{nameConsumerReady, "Messages stored but not yet pulled.", consumerLabels},
	{nameSendToDLQ, "Messages consumers sent back into their dead-letter queue.", []string{labelTopic, labelConsumerGroup, labelIsSystem}},
	{nameBrokerPermission, "Broker permission (brokerPermission).", nil},
	{nameTopicNumber, "Topics in the topic table.", nil},
	{nameGroupNumber, "Subscription groups in the subscription group table.", nil},
	{nameCommitMessages, "Transactions committed by END_TRANSACTION, by real topic.", []string{labelTopic}},
	{nameRollbackMessages, "Transactions rolled back by END_TRANSACTION, by real topic.", []string{labelTopic}},
	{nameFinishLatency, "Age of committed half messages at their commit (seconds, as 5.3.3 records it despite the unit).", []string{labelTopic}},
	{nameTopicCreateTime, "UPDATE_AND_CREATE_TOPIC handling time (ms).", []string{labelInvocation, labelIsSystem}},
	{nameGroupCreateTime, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP handling time (ms).", []string{labelInvocation}},
	{namePopReviveIn, "Checkpoint (CK) and ack (ACK) records written to the revive topic, by put status.", []string{labelConsumerGroup, labelTopic, labelReviveType, labelPutStatus}},
	{namePopReviveLatency, "How long the oldest due revive not yet done has been due (ms).", []string{labelQueueID}},
	{namePopOffsetBuffer, "Live pop checkpoints: pops whose messages hold the consumer offset back until acked or revived.", nil},
	{namePopBufferScanTime, "Time of each pass over the pop checkpoints: reading the revive log and reviving the due ones (ms).", nil},
	{nameProcessorWatermark, "Requests waiting in each processor's queue (send, pull, heartbeat and transaction lanes; 0 for executors rmq does not have).", []string{labelProcessor}},
	{nameStorageReserveTime, "Age of the commitlog's first message (ms).", storageLabels},
	{nameTimerEnqueueLatency, "Age of the timer-queue message last read into the wheel, if read in the last 2 s (ms).", storageLabels},
	{nameTimerDequeueLag, "Timer wheel entries not yet dequeued.", storageLabels},
	{nameDelayMessageLatency, "How far ahead of their birth timer messages are set to be delivered (s), by real topic.", timerTopicLabels},
	{nameHalfMessagesStock, "Half messages the transaction check has not passed yet (broker-wide: the topic label is the half topic).", []string{labelTopic}},
	{namePopCheckpointBuffer, "Popped messages neither acked nor revived (rmq keeps every checkpoint in memory).", nil},
	{namePopReviveLag, "Revive triggers read whose revive is still to be done (a count, as 5.3.3 records it despite the unit).", []string{labelQueueID}},
	{nameRPCLatency, "Request handling time (ms).", []string{labelProtocolType, labelIsLongPolling, labelRequestCode, labelResponseCode, labelResult}},
	{nameStorageSize, "Bytes used on the store's file system.", storageLabels},
	{nameStorageFlushBehind, "Commitlog bytes not yet flushed.", storageLabels},
	{nameStorageDispatchBehind, "Commitlog bytes not yet dispatched to consume queues.", storageLabels},
	{nameTimerEnqueueLag, "Timer-queue messages not yet read into the wheel.", storageLabels},
	{nameTimerDequeueLatency, "How long the oldest unprocessed due timer slot has been due (ms).", storageLabels},
	{nameTimingMessages, "Timer messages pending in the wheel (broker-wide: the topic label is the timer topic).", timerTopicLabels},
	{nameTimerEnqueueTotal, "Messages read into the timer wheel (broker-wide: the topic label is the timer topic).", timerTopicLabels},
	{nameTimerDequeueTotal, "Timer messages delivered to their topic (broker-wide: the topic label is the timer topic).", timerTopicLabels},
	{nameTimerMessageSnapshot, "Pending timer wheel entries by how far ahead they are due (upper bound in seconds).", []string{labelStorageType, labelStorageMedium, labelTimingBound}},
	{nameTargetInfo, "Target metadata (the 5.x exporter's empty OpenTelemetry resource).", nil},
	{nameScopeInfo, "Scope metadata.", []string{labelScope}},
	{nameDelayPending, "Delay-level messages not yet delivered, by level.", []string{labelLevel, labelDelay}},
	{nameDeliveryLateness, "How late delayed and timer messages were delivered (ms past due).", []string{labelKind}},
	{nameTimerRecalls, "Recall (delete) markers read by the timer wheel.", nil},
	{nameTimerRecallDropped, "Timer messages dropped because they were recalled.", nil},
	{nameHalfMessages, "Half messages the transaction check has not passed yet.", nil},
	{nameTxChecks, "CHECK_TRANSACTION_STATE requests sent to producers.", nil},
	{nameRefusals, "Requests refused, by reason and response code (their log lines are rate-limited).", []string{labelReason, labelResponseCode}},
	{nameHASlaves, "Master: slaves connected to the HA service.", nil},
	{nameHASlaveLag, "Master: commitlog bytes a slave has not acked yet, by slave address (all of them before its first ack).", []string{labelSlave}},
	{nameHAFallBehind, "Master: commitlog bytes past the highest slave ack (slaveFallBehindMuch; a SYNC_MASTER refuses sends past haSlaveFallbehindMax).", nil},
	{nameHAMasterConnected, "Slave: 1 while connected to its master's HA service.", nil},
	{nameHAReplicated, "Slave: the commitlog offset it last reported to its master (what it holds).", nil},
	{nameHAMaster, "Controller mode: 1 while the controller has made the broker its set's master, 0 on a slave.", nil},
	{nameHAMasterEpoch, "Controller mode: the epoch of the master the broker serves or follows.", nil},
	{nameHASyncStateSet, "Controller mode, master: members of the sync state set (the master included).", nil},
	{nameHASyncStateEpoch, "Controller mode, master: the sync state set's epoch.", nil},
	{nameHAConfirmOffset, "Controller mode: the confirm offset, the commitlog end every sync state set member holds (consumers see nothing past it).", nil},
}

// Pulls and pops share the two traffic-out series with different label
// sets (5.x counts pops with is_retry): the pop descriptors are served by
// popCollector, unchecked, since a registry refuses two descriptors of one
// name with different labels. Both carry the same help, as a family must.
const (
	helpMessagesOut   = "Messages transferred to consumers by pulls (without is_retry) and pops (with it), by topic and group."
	helpThroughputOut = "Message bytes transferred to consumers by pulls (without is_retry) and pops (with it), by topic and group."
)

// newCollector builds the descriptors: the rocketmq_* series carry the node
// labels and otel_scope_name as the 5.x exporter writes them, rmq's own the
// node labels, target_info and otel_scope_info none.
func newCollector(b *broker.Broker, constLabels prometheus.Labels, now func() time.Time) *collector {
	c := &collector{b: b, now: now, descs: make(map[string]*prometheus.Desc, len(specs))}
	stock := prometheus.Labels{labelScope: scopeName}
	for k, v := range constLabels {
		stock[k] = v
	}
	for _, s := range specs {
		labels := constLabels
		switch {
		case s.name == nameTargetInfo || s.name == nameScopeInfo:
			labels = nil
		case strings.HasPrefix(s.name, "rocketmq_"):
			labels = stock
		}
		c.descs[s.name] = prometheus.NewDesc(s.name, s.help, s.labels, labels)
	}
	c.popDescs = map[string]*prometheus.Desc{
		nameMessagesOut:   prometheus.NewDesc(nameMessagesOut, helpMessagesOut, consumerLabels, stock),
		nameThroughputOut: prometheus.NewDesc(nameThroughputOut, helpThroughputOut, consumerLabels, stock),
	}
	return c
}

// popCollector serves the pop series of rocketmq_messages_out_total and
// rocketmq_throughput_out_total (see helpMessagesOut). It describes
// nothing: an unchecked collector.
type popCollector struct{ c *collector }

func (popCollector) Describe(chan<- *prometheus.Desc) {}

func (p popCollector) Collect(ch chan<- prometheus.Metric) {
	d := p.c.b.BrokerStats().Detail()
	if d == nil {
		return
	}
	e := emitter{ch: ch, descs: p.c.popDescs}
	// The topic is the one the client popped (a retry topic's messages are
	// counted under it with is_retry true), as PopMessageProcessor labels them.
	d.PopOut.Each(func(k brokerstats.PopKey, n *brokerstats.PopCount) {
		labels := []string{k.Topic, k.Group, boolText(k.Retry), boolText(p.c.isSystemGroup(k.Topic, k.Group))}
		e.counter(nameMessagesOut, float64(n.Msgs.Load()), labels...)
		e.counter(nameThroughputOut, float64(n.Bytes.Load()), labels...)
	})
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch: ch, descs: c.descs}
	c.collectTraffic(&e)
	c.collectClients(&e)
	c.collectConsumers(&e)
	c.collectStore(&e)
	c.collectDelay(&e)
	c.collectTimer(&e)
	c.collectHA(&e)
	e.gauge(nameTargetInfo, 1)
	e.gauge(nameScopeInfo, 1, scopeName)
	e.gauge(nameBrokerPermission, float64(c.b.Permission()))
	e.gauge(nameTopicNumber, float64(c.b.TopicCount()))
	e.gauge(nameGroupNumber, float64(len(c.b.Clients().SubGroups.Groups())))
	if p := c.b.Pop(); p != nil {
		st := p.Stats()
		e.gauge(namePopCheckpointBuffer, float64(st.InFlight))
		e.gauge(namePopOffsetBuffer, float64(st.Checkpoints))
		e.gauge(namePopReviveLag, float64(st.Due), "0")
		e.gauge(namePopReviveLatency, float64(st.ReviveBehindMs), "0")
		for k, n := range p.ReviveIn() {
			e.counter(namePopReviveIn, float64(n), k.Group, k.Topic, k.Type, k.Status)
		}
		e.histogram(namePopBufferScanTime, p.ScanTimes())
	}
	for _, w := range c.b.ProcessorWatermarks() {
		e.gauge(nameProcessorWatermark, float64(w.Waiting), w.Processor)
	}
	tx := c.b.Transactions()
	tx.Ends(func(topic string, n *transaction.EndCounts) {
		e.counter(nameCommitMessages, float64(n.Commits.Load()), topic)
		e.counter(nameRollbackMessages, float64(n.Rollbacks.Load()), topic)
		e.histogram(nameFinishLatency, n.Latency.Snapshot(), topic)
	})
	e.gauge(nameHalfMessages, float64(tx.HalfBacklog()))
	e.gauge(nameHalfMessagesStock, float64(tx.HalfBacklog()), message.TopicTransHalf)
	e.counter(nameTxChecks, float64(tx.Stats().Checks))
	// Every front end's refusals, counted whether or not metrics are
	// enabled: rocketmq_rpc_latency has response codes too, but of remoting
	// requests only, and cannot tell a full disk from a closed store.
	c.b.Refusals().Each(func(reason string, code int32, n uint64) {
		e.counter(nameRefusals, float64(n), reason, remoting.ResponseCodeName(code))
	})
}

type emitter struct {
	ch    chan<- prometheus.Metric
	descs map[string]*prometheus.Desc
}

func (e *emitter) gauge(name string, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(e.descs[name], prometheus.GaugeValue, v, labels...)
}

func (e *emitter) counter(name string, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(e.descs[name], prometheus.CounterValue, v, labels...)
}

func (e *emitter) histogram(name string, s histo.Snapshot, labels ...string) {
	buckets := make(map[float64]uint64, len(s.Bounds))
	for i, b := range s.Bounds {
		buckets[float64(b)] = s.Cumulative[i]
	}
	e.ch <- prometheus.MustNewConstHistogram(e.descs[name], s.Count, float64(s.Sum), buckets, labels...)
}

func boolText(b bool) string { return strconv.FormatBool(b) }

// messageType is the 5.x TopicMessageType metrics value of a topic: delay
// and timer topics "delay", the half topic "transaction", ordered topics
// "fifo", the rest "normal".
func (c *collector) messageType(topic string) string {
	switch topic {
	case message.TopicSchedule, message.TopicWheelTimer:
		return "delay"
	case message.TopicTransHalf:
		return "transaction"
	}
	if tc := c.b.Topics().Get(topic); tc != nil && tc.Order {
		return "fifo"
	}
	return "normal"
}

func (c *collector) isSystem(topic string) bool { return c.b.Topics().IsSystemTopic(topic) }

func (c *collector) consumerLabels(topic, group string) []string {
	return []string{topic, group, boolText(strings.HasPrefix(topic, message.RetryTopicPrefix)), boolText(c.isSystem(topic))}
}

func (c *collector) collectTraffic(e *emitter) {
	st := c.b.BrokerStats()
	// The stock stats also count schedule deliveries (a put of the real
	// topic, a get by SCHEDULE_CONSUMER); the 5.x metrics count sends and
	// pulls only, so those parts are left out.
	st.TopicPut.Each(func(k brokerstats.Key, it *brokerstats.Item) {
		sched, _ := st.ScheduledPut(k.Topic)
		if sent := it.Value() - sched; sent > 0 || sched == 0 {
			e.counter(nameMessagesIn, float64(sent), k.Topic, c.messageType(k.Topic), boolText(c.isSystem(k.Topic)))
		}
	})
	st.TopicSize.Each(func(k brokerstats.Key, it *brokerstats.Item) {
		_, sched := st.ScheduledPut(k.Topic)
		if sent := it.Value() - sched; sent > 0 || sched == 0 {
			e.counter(nameThroughputIn, float64(sent), k.Topic, c.messageType(k.Topic), boolText(c.isSystem(k.Topic)))
		}
	})
	st.GroupGet.Each(func(k brokerstats.Key, it *brokerstats.Item) {
		if !brokerstats.IsScheduleGet(k) {
			e.counter(nameMessagesOut, float64(it.Value()), k.Topic, k.Group, boolText(c.isSystemGroup(k.Topic, k.Group)))
		}
	})
	st.GroupSize.Each(func(k brokerstats.Key, it *brokerstats.Item) {
		if !brokerstats.IsScheduleGet(k) {
			e.counter(nameThroughputOut, float64(it.Value()), k.Topic, k.Group, boolText(c.isSystemGroup(k.Topic, k.Group)))
		}
	})
	d := st.Detail()
	if d == nil {
		return
	}
	d.MessageSize.Each(func(topic string, h *histo.Histogram) {
		e.histogram(nameMessageSize, h.Snapshot(), topic, c.messageType(topic), boolText(c.isSystem(topic)))
	})
	// 5.x InvocationStatus names.
	status := func(ok bool) string {
		if ok {
			return "success"
		}
		return "failure"
	}
	d.TopicCreate.Each(func(k brokerstats.CreateKey, h *histo.Histogram) {
		e.histogram(nameTopicCreateTime, h.Snapshot(), status(k.Success), boolText(k.System))
	})
	d.GroupCreate.Each(func(k brokerstats.CreateKey, h *histo.Histogram) {
		e.histogram(nameGroupCreateTime, h.Snapshot(), status(k.Success))
	})
	d.SendToDLQ.Each(func(k brokerstats.Key, it *brokerstats.Item) {
		e.counter(nameSendToDLQ, float64(it.Value()), k.Topic, k.Group, boolText(c.isSystemGroup(k.Topic, k.Group)))
	})
	// A parked request is not recorded (broker.timedServe), so what is here
	// was answered at once: is_long_polling false. The labels are the stock
	// table's names (remoting.RequestCodeName), as RemotingHelper gives them.
	for _, r := range d.RPC() {
		e.histogram(nameRPCLatency, r.Hist.Snapshot(), "remoting", "false",
			remoting.RequestCodeName(r.Code), remoting.ResponseCodeName(r.Response), "success")
	}
}

// isSystemGroup is 5.x BrokerMetricsManager.isSystem: a system topic, or a
// group named CID_RMQ_SYS_* (in any case).
func (c *collector) isSystemGroup(topic, group string) bool {
	return c.isSystem(topic) || strings.HasPrefix(strings.ToLower(group), "cid_rmq_sys_")
}

func (c *collector) collectClients(e *emitter) {
	type pk struct{ lang, ver string }
	producers := map[pk]int{}
	for _, list := range c.b.Clients().Producers.Table() {
		for _, p := range list {
			producers[pk{p.Language, admin.VersionDesc(p.Version)}]++
		}
	}
	// Language and version in lower case, as 5.x records them.
	for k, n := range producers {
		e.gauge(nameProducerConnections, float64(n), strings.ToLower(k.lang), strings.ToLower(k.ver), "remoting")
	}
	cons := c.b.Clients().Consumers
	for _, g := range cons.Groups() {
		cc, ok := cons.Connection(g)
		if !ok {
			continue
		}
		// ConsumeType.getTypeCN in lower case.
		mode := "push"
		switch cc.ConsumeType {
		case "CONSUME_ACTIVELY":
			mode = "pull"
		case "CONSUME_POP":
			mode = "pop"
		}
		counts := map[pk]int{}
		for _, conn := range cc.ConnectionSet {
			counts[pk{conn.Language, admin.VersionDesc(conn.Version)}]++
		}
		for k, n := range counts {
			e.gauge(nameConsumerConnections, float64(n), g, strings.ToLower(k.lang), strings.ToLower(k.ver), mode, "remoting",
				boolText(strings.HasPrefix(strings.ToLower(g), "cid_rmq_sys_")))
		}
	}
}

// GroupLag is one group's backlog on one topic, summed over its queues.
type GroupLag struct {
	Topic, Group string
	Lag          int64 // stored - committed
	LagLatencyMs int64 // age of the oldest uncommitted message
	Inflight     int64 // pulled - committed
	Ready        int64 // stored - pulled
	QueueingMs   int64 // age of the oldest message not pulled
}

// Lags computes every subscription group's backlog on the topics it has
// offsets for (the console shows the same figures).
func Lags(b *broker.Broker, now time.Time) []GroupLag {
	cl, st := b.Clients(), b.Store()
	d := b.BrokerStats().Detail()
	var out []GroupLag
	age := func(topic string, q int32, off int64) int64 {
		ts, err := st.MessageStoreTimeStamp(topic, q, off)
		if err != nil || ts <= 0 {
			return 0
		}
		return max(now.UnixMilli()-ts, 0)
	}
	for _, g := range cl.SubGroups.Groups() {
		for _, topic := range cl.Offsets.TopicsByGroup(g) {
			tc := b.Topics().Get(topic)
			if tc == nil {
				continue
			}
			l := GroupLag{Topic: topic, Group: g}
			for q := int32(0); q < tc.ReadQueueNums; q++ {
				maxOff := max(st.MaxOffsetInQueue(topic, q), 0)
				committed, ok := cl.Offsets.Query(g, topic, q)
				if !ok || committed < 0 {
					committed = max(st.MinOffsetInQueue(topic, q), 0)
				}
				pulled := committed
				if d != nil {
					if it := d.Pulled.Lookup(brokerstats.Key{Topic: topic, Group: g, QueueID: q}); it != nil && it.Value() > committed {
						pulled = min(it.Value(), maxOff)
					}
				}
				if maxOff > committed {
					l.Lag += maxOff - committed
					l.LagLatencyMs = max(l.LagLatencyMs, age(topic, q, committed))
				}
				l.Inflight += pulled - committed
				if maxOff > pulled {
					l.Ready += maxOff - pulled
					l.QueueingMs = max(l.QueueingMs, age(topic, q, pulled))
				}
			}
			out = append(out, l)
		}
	}
	return out
}

func (c *collector) collectConsumers(e *emitter) {
	for _, l := range Lags(c.b, c.now()) {
		labels := c.consumerLabels(l.Topic, l.Group)
		e.gauge(nameConsumerLagMessages, float64(l.Lag), labels...)
		e.gauge(nameConsumerLagLatency, float64(l.LagLatencyMs), labels...)
		e.gauge(nameConsumerInflight, float64(l.Inflight), labels...)
		e.gauge(nameConsumerReady, float64(l.Ready), labels...)
		e.gauge(nameConsumerQueueing, float64(l.QueueingMs), labels...)
	}
}

func (c *collector) collectStore(e *emitter) {
	st := c.b.Store()
	maxOff := st.MaxPhyOffset()
	// 5.x: the bytes used on the file system of storePathRootDir.
	if used, ok := fsUsedBytes(c.b.Options().StorePathRootDir); ok {
		e.gauge(nameStorageSize, float64(used), storeLabelValues...)
	}
	if flushed, err := strconv.ParseInt(st.RuntimeInfo()["commitLogFlushedOffset"], 10, 64); err == nil {
		e.gauge(nameStorageFlushBehind, float64(max(maxOff-flushed, 0)), storeLabelValues...)
	}
	e.gauge(nameStorageDispatchBehind, float64(st.DispatchBehind()), storeLabelValues...)
	// 5.x records nothing while the commitlog is empty.
	if earliest := st.EarliestStoreTime(); earliest > 0 {
		e.gauge(nameStorageReserveTime, float64(max(c.now().UnixMilli()-earliest, 0)), storeLabelValues...)
	}
}

func (c *collector) collectDelay(e *emitter) {
	s := c.b.Schedule()
	levels := s.Levels()
	for i, n := range s.PendingByLevel() {
		e.gauge(nameDelayPending, float64(n), strconv.Itoa(i+1), levels[i].String())
	}
	e.histogram(nameDeliveryLateness, s.Deliveries().Lateness.Snapshot(), "delay_level")
}

func (c *collector) collectTimer(e *emitter) {
	t := c.b.Timers()
	if t == nil {
		return
	}
	st := t.Stats()
	// rmq counts timer messages broker-wide, not per real topic: the topic
	// label of the per-topic 5.x series is the timer topic.
	topic := append(storeLabelValues[:2:2], message.TopicWheelTimer)
	e.gauge(nameTimerEnqueueLag, float64(st.EnqueueBehind), storeLabelValues...)
	e.gauge(nameTimerDequeueLatency, float64(st.ReadLagMs), storeLabelValues...)
	e.gauge(nameTimerEnqueueLatency, float64(st.EnqueueLatencyMs), storeLabelValues...)
	// TimerMessageStore.getDequeueBehindMessages: every wheel entry from
	// the read cursor on.
	e.gauge(nameTimerDequeueLag, float64(st.Pending), storeLabelValues...)
	t.SetLatency(func(realTopic string, h *histo.Histogram) {
		e.histogram(nameDelayMessageLatency, h.Snapshot(), storeLabelValues[0], storeLabelValues[1], realTopic)
	})
	e.gauge(nameTimingMessages, float64(st.Pending), topic...)
	e.counter(nameTimerEnqueueTotal, float64(st.Enqueued), topic...)
	e.counter(nameTimerDequeueTotal, float64(st.Delivered), topic...)
	e.counter(nameTimerRecalls, float64(st.Markers))
	e.counter(nameTimerRecallDropped, float64(st.Deleted))
	for i, n := range t.PendingByDue(TimerBounds) {
		bound := "+Inf"
		if i < len(TimerBounds) {
			bound = strconv.Itoa(int(TimerBounds[i] / time.Second))
		}
		e.gauge(nameTimerMessageSnapshot, float64(n), storeLabelValues[0], storeLabelValues[1], bound)
	}
	e.histogram(nameDeliveryLateness, t.Deliveries().Lateness.Snapshot(), "timer")
}

// collectHA serves the replication series of the side the broker runs: a
// master's HA service or a slave's client. The classic protocol never tells
// a slave where the master's commitlog ends (the master streams from the
// slave's offset and its heartbeats carry only that), so the bytes a slave
// lacks are the master's rmq_ha_slave_lag_bytes{slave=...}; the slave
// serves its connection and its replicated offset. 5.3.3 exports no HA
// series.
func (c *collector) collectHA(e *emitter) {
	if st, ok := c.b.HAMasterStats(); ok {
		e.gauge(nameHASlaves, float64(st.Connections))
		e.gauge(nameHAFallBehind, float64(max(st.MasterMaxOffset-st.Push2SlaveMaxOffset, 0)))
		for _, sl := range st.Slaves {
			e.gauge(nameHASlaveLag, float64(broker.SlaveLag(st.MasterMaxOffset, sl.AckOffset)), sl.Addr)
		}
	}
	if st, ok := c.b.HAClientStats(); ok {
		connected := 0.0
		if st.Connected {
			connected = 1
		}
		e.gauge(nameHAMasterConnected, connected)
		e.gauge(nameHAReplicated, float64(max(st.ReportedOffset, 0)))
	}
	c.collectControllerHA(e)
}

// collectControllerHA serves a controller-mode broker's role, epochs, sync
// state set size and confirm offset (broker.ControllerState): what tells
// which member leads, whether a failover happened (the epoch steps) and
// whether the set shrank. A classic broker serves none of them.
func (c *collector) collectControllerHA(e *emitter) {
	st, ok := c.b.ControllerState()
	if !ok {
		return
	}
	master := 0.0
	if st.Master {
		master = 1
	}
	e.gauge(nameHAMaster, master)
	e.gauge(nameHAMasterEpoch, float64(st.MasterEpoch))
	e.gauge(nameHAConfirmOffset, float64(max(st.ConfirmOffset, 0)))
	if st.Master { // the set is the master's (broker.ControllerState)
		e.gauge(nameHASyncStateSet, float64(len(st.SyncStateSet)))
		e.gauge(nameHASyncStateEpoch, float64(st.SyncStateSetEpoch))
	}
}
