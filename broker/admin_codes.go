package broker

import (
	"sort"
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Admin requests the core answers (J4 AdminBrokerProcessor): the delay-level
// offsets, the system topic list and the removal of unused consume queues.

// processGetAllDelayOffset serves GET_ALL_DELAY_OFFSET: delayOffset.json's
// text as ScheduleMessageService.encode writes it, {"offsetTable":{1:0,...}},
// one entry per delay level.
func (b *Broker) processGetAllDelayOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.sched == nil {
		return remoting.NewResponse(req, remoting.SystemError, "No delay offset in this broker")
	}
	offsets := b.sched.Offsets()
	buf := []byte(`{"offsetTable":{`)
	for level := 1; level <= len(b.levels); level++ {
		if level > 1 {
			buf = append(buf, ',')
		}
		buf = fastjson.AppendIntKey(buf, int64(level), false)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, offsets[level], 10)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = append(buf, "}}"...)
	return resp
}

// processGetSystemTopicListFromBroker serves GET_SYSTEM_TOPIC_LIST_FROM_BROKER:
// TopicValidator's system topic set, which holds the built-in topics and the
// ones this broker adds at start (cluster, broker name, reply and trace topics).
func (b *Broker) processGetSystemTopicListFromBroker(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(&remoting.TopicList{TopicList: b.topics.SystemTopics()})
	return resp
}

// SystemTopics lists the system topics, sorted: the built-in ones and those
// this broker defines itself.
func (m *TopicConfigManager) SystemTopics() []string {
	m.mu.RLock()
	set := make(map[string]bool, len(builtinSystemTopics)+len(m.system))
	for t := range m.system {
		set[t] = true
	}
	m.mu.RUnlock()
	for t := range builtinSystemTopics {
		set[t] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// keptWithoutConfig are the internal topics whose queues CLEAN_UNUSED_TOPIC
// keeps although the topic table may not name them (stock keeps the schedule
// and op-half topics; rmq's half and timer-wheel topics are internal too).
var keptWithoutConfig = map[string]bool{
	message.TopicSchedule: true, message.TopicTransOpHalf: true, message.TopicTransHalf: true, message.TopicWheelTimer: true,
}

// processCleanUnusedTopic serves CLEAN_UNUSED_TOPIC: the consume queues of
// topics that are not in the topic table are deleted.
func (b *Broker) processCleanUnusedTopic(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var unused []string
	for _, t := range b.store.Topics() {
		if !b.topics.Has(t) && !keptWithoutConfig[t] {
			unused = append(unused, t)
		}
	}
	if len(unused) > 0 {
		b.log.Warn().Strs("topics", unused).Msg("clean unused topics")
		b.store.DeleteTopics(unused...)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}
