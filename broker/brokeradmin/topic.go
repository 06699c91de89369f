package brokeradmin

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// brokerVersionDesc is MQVersion.getVersionDesc of remoting.Version.
const brokerVersionDesc = "V4_9_8"

// TopicFilterType names UPDATE_AND_CREATE_TOPIC accepts.
const (
	filterTypeSingleTag = "SINGLE_TAG"
	filterTypeMultiTag  = "MULTI_TAG"
)

// processUpdateAndCreateTopic serves UPDATE_AND_CREATE_TOPIC and
// re-registers with the name servers.
func (s *Service) processUpdateAndCreateTopic(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.CreateTopicRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, readQueues, writeQueues, perm := rh.Topic, rh.ReadQueueNums, rh.WriteQueueNums, rh.Perm
	filterType, sysFlag, attributes := rh.TopicFilterType, rh.TopicSysFlag, rh.Attributes
	if err := message.ValidateTopic(topic); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if s.topics.IsSystemTopic(topic) {
		return remoting.NewResponse(req, remoting.SystemError, "The topic["+topic+"] is conflict with system topic.")
	}
	if filterType != filterTypeSingleTag && filterType != filterTypeMultiTag {
		return remoting.NewResponse(req, remoting.SystemError, "No enum constant org.apache.rocketmq.common.TopicFilterType."+filterType)
	}
	// The 5.x attributes (AdminBrokerProcessor.updateAndCreateTopic, then
	// TopicConfigManager.updateSingleTopicConfigWithoutPersist): a malformed
	// or refused modification is a SYSTEM_ERROR with the stock message, a
	// MIXED type without enableMixedMessageType an INVALID_PARAMETER; an
	// update without attributes keeps the topic's.
	mod, err := topicgroup.ParseAttributeModification(attributes)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	if !s.allowMixed && mod["+"+message.AttrMessageType] == string(message.TopicTypeMixed) {
		return remoting.NewResponse(req, remoting.InvalidParameter, "MIXED message type is not supported.")
	}
	old := s.topics.Get(topic)
	var current map[string]string
	if old != nil {
		current = old.Attributes
	}
	attrs, err := topicgroup.AlterAttributes(old == nil, current, mod)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	s.log.Info().Str("topic", topic).Object("client", c).Int32("read", readQueues).Int32("write", writeQueues).
		Int32("perm", perm).Str("attributes", attributes).Msg("update and create topic")
	// Like stock, the order flag is not taken from the request: it follows the
	// name server's ORDER_TOPIC_CONFIG at the next periodic registration.
	s.topics.Update(&topicgroup.TopicConfig{
		TopicName: topic, ReadQueueNums: readQueues, WriteQueueNums: writeQueues, Perm: perm,
		TopicFilterType: filterType, TopicSysFlag: sysFlag, Attributes: attrs,
	})
	return remoting.NewResponse(req, remoting.Success, "")
}

// processDeleteTopic serves DELETE_TOPIC_IN_BROKER: the config, the consume
// queues and the group offsets of the topic go.
func (s *Service) processDeleteTopic(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic := rh.Topic
	if err := message.ValidateTopic(topic); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if s.topics.IsSystemTopic(topic) {
		return remoting.NewResponse(req, remoting.SystemError, "The topic["+topic+"] is conflict with system topic.")
	}
	s.log.Info().Str("topic", topic).Object("client", c).Msg("delete topic")
	if !s.topics.Delete(topic) {
		s.log.Warn().Str("topic", topic).Object("client", c).Msg("delete topic: no such topic")
	}
	s.store.DeleteTopics(topic)
	s.offsets.RemoveTopic(topic)
	return remoting.NewResponse(req, remoting.Success, "")
}

// processGetAllTopicConfig serves GET_ALL_TOPIC_CONFIG.
func (s *Service) processGetAllTopicConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	w := s.topics.Snapshot()
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(&w)
	return resp
}

// processGetTopicConfig serves GET_TOPIC_CONFIG (a 5.x admin request).
func (s *Service) processGetTopicConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic := rh.Topic
	tc := s.topics.Get(topic)
	if tc == nil {
		return remoting.NewResponse(req, remoting.TopicNotExist, "No topic in this broker. topic: "+topic)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(tc)
	return resp
}

// processGetTopicStatsInfo serves GET_TOPIC_STATS_INFO: min/max offset and
// last store time of every write queue, in fastjson's MessageQueue-keyed
// map form (the only form the Java tools are known to read).
func (s *Service) processGetTopicStatsInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic := rh.Topic
	tc := s.topics.Get(topic)
	if tc == nil {
		return remoting.NewResponse(req, remoting.TopicNotExist, "topic["+topic+"] not exist")
	}
	var sb strings.Builder
	sb.WriteString(`{"offsetTable":{`)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		minOff := max(s.store.MinOffsetInQueue(topic, q), 0)
		maxOff := max(s.store.MaxOffsetInQueue(topic, q), 0)
		var last int64
		if maxOff > 0 {
			if ts, err := s.store.MessageStoreTimeStamp(topic, q, maxOff-1); err == nil {
				last = ts
			}
		}
		if q > 0 {
			sb.WriteByte(',')
		}
		sb.Write(remoting.MarshalBody(&remoting.MessageQueue{BrokerName: s.brokerName, QueueID: q, Topic: topic}))
		fmt.Fprintf(&sb, `:{"lastUpdateTimestamp":%d,"maxOffset":%d,"minOffset":%d}`, last, maxOff, minOff)
	}
	sb.WriteString(`}}`)
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = []byte(sb.String())
	return resp
}

// processGetBrokerRuntimeInfo serves GET_BROKER_RUNTIME_INFO with the keys
// mqadmin clusterList and brokerStatus read. Thread-pool figures are 0: the
// broker has no bounded request queues.
func (s *Service) processGetBrokerRuntimeInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	t := s.store.RuntimeInfo()
	if t == nil {
		t = make(map[string]string)
	}
	puts, gets := s.stats.PutMsgs.Load(), s.stats.GetMsgs.Load()
	now := s.clock.Now()
	t["brokerVersionDesc"] = brokerVersionDesc
	t["brokerVersion"] = strconv.Itoa(remoting.Version)
	t["putTps"] = s.stats.rates.tps(now, puts, true)
	t["getTransferedTps"] = s.stats.rates.tps(now, gets, false)
	t["msgPutTotalTodayNow"] = strconv.FormatInt(puts, 10)
	t["msgGetTotalTodayNow"] = strconv.FormatInt(gets, 10)
	for _, k := range []string{"msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning"} {
		t[k] = "0"
	}
	for _, k := range []string{
		"sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "queryThreadPoolQueueSize", "EndTransactionQueueSize",
		"sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueHeadWaitTimeMills",
		"pageCacheLockTimeMills", "startAcceptSendRequestTimeStamp", "remainTransientStoreBufferNumbs",
	} {
		t[k] = "0"
	}
	t["sendThreadPoolQueueCapacity"] = "10000"
	t["pullThreadPoolQueueCapacity"] = "100000"
	t["queryThreadPoolQueueCapacity"] = "20000"
	t["EndTransactionThreadPoolQueueCapacity"] = "100000"
	s.extras(t)
	t["dispatchBehindBytes"] = strconv.FormatInt(s.store.DispatchBehind(), 10)
	t["earliestMessageTimeStamp"] = strconv.FormatInt(s.earliestMessageTime(), 10)
	t["commitLogMaxOffset"] = strconv.FormatInt(s.store.MaxPhyOffset(), 10)
	t["commitLogMinOffset"] = strconv.FormatInt(s.store.MinPhyOffset(), 10)
	// J4 AdminBrokerProcessor.prepareRuntimeInfo: the commitlog bytes not
	// flushed yet, human-readable (rocketmq-exporter reads the number before
	// the space).
	if flushed, err := strconv.ParseInt(t["commitLogFlushedOffset"], 10, 64); err == nil {
		t["remainHowManyDataToFlush"] = humanBytes(uint64(max(s.store.MaxPhyOffset()-flushed, 0)))
	}
	t["runtime"] = "[ " + formatUptime(now.Sub(s.stats.BootTime)) + " ]"
	if total, free, err := diskSpace(s.storeDir); err == nil && total > 0 {
		t["commitLogDiskRatio"] = strconv.FormatFloat(float64(total-free)/float64(total), 'f', -1, 64)
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(total), humanBytes(free))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(&remoting.KVTable{Table: t})
	return resp
}

// earliestMessageTime is the store time of the oldest commitlog record, -1
// when the commitlog is empty.
func (s *Service) earliestMessageTime() int64 {
	rec, err := s.store.LookMessageByOffset(s.store.MinPhyOffset())
	if err != nil {
		return -1
	}
	m, err := message.DecodeRecord(rec)
	if err != nil {
		return -1
	}
	return m.StoreTimestamp
}

// humanBytes is MixAll.humanReadableByteCount(bytes, false).
func humanBytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	units := "KMGTPE"
	exp := 0
	v := float64(n)
	for v >= 1024*1024 && exp < len(units)-1 {
		v /= 1024
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", v/1024, units[exp])
}

func formatUptime(d time.Duration) string {
	d = d.Round(time.Second)
	days := int64(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	hours := int64(d / time.Hour)
	d -= time.Duration(hours) * time.Hour
	mins := int64(d / time.Minute)
	d -= time.Duration(mins) * time.Minute
	return fmt.Sprintf("%d days, %d hours, %d minutes, %d seconds", days, hours, mins, int64(d/time.Second))
}

// rateWindows are the StoreStatsService windows of "putTps" and
// "getTransferedTps" (seconds).
var rateWindows = [...]int{10, 60, 600}

// rateSampler keeps one sample of the put/get counters per second for the
// longest window, to report rates over each window.
type rateSampler struct {
	mu      sync.Mutex
	samples []rateSample // oldest first
}

type rateSample struct {
	at         time.Time
	puts, gets int64
}

func (r *rateSampler) sample(now time.Time, puts, gets int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, rateSample{now, puts, gets})
	if n := len(r.samples) - (rateWindows[len(rateWindows)-1] + 1); n > 0 {
		r.samples = append(r.samples[:0], r.samples[n:]...)
	}
}

// tps renders the rates over each window as "%.2f %.2f %.2f", measured from
// the newest sample at least a window old (or the oldest one) to now.
func (r *rateSampler) tps(now time.Time, current int64, puts bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(rateWindows))
	for i, w := range rateWindows {
		rate := 0.0
		if len(r.samples) > 0 {
			base := r.samples[0]
			for j := len(r.samples) - 1; j >= 0; j-- {
				if now.Sub(r.samples[j].at) >= time.Duration(w)*time.Second {
					base = r.samples[j]
					break
				}
			}
			if secs := now.Sub(base.at).Seconds(); secs > 0 {
				n := base.gets
				if puts {
					n = base.puts
				}
				rate = float64(current-n) / secs
			}
		}
		out[i] = strconv.FormatFloat(rate, 'f', 2, 64)
	}
	return strings.Join(out, " ")
}
