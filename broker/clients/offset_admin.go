package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// Offset admin requests (J4 AdminBrokerProcessor, Broker2Client,
// ConsumerOffsetManager): reset by time, client status, time span,
// correction offsets, clone and consume-queue inspection.
//
//	INVOKE_BROKER_TO_RESET_OFFSET ─► offsets by time ─► RESET_CONSUMER_CLIENT_OFFSET (oneway) to each client
//	INVOKE_BROKER_TO_GET_CONSUMER_STATUS ─► GET_CONSUMER_STATUS_FROM_CLIENT (sync) to each client

// OffsetAdminProcessors maps the offset admin codes this file serves.
func (s *Service) OffsetAdminProcessors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.InvokeBrokerToResetOffset:       s.resetOffset,
		remoting.InvokeBrokerToGetConsumerStatus: s.getConsumerStatus,
		remoting.QueryConsumeTimeSpan:            s.queryConsumeTimeSpan,
		remoting.QueryCorrectionOffset:           s.queryCorrectionOffset,
		remoting.CloneGroupOffset:                s.cloneGroupOffset,
		remoting.QueryConsumeQueue:               s.queryConsumeQueue,
	}
}

// minStatusClientVersion is MQVersion V3_0_7_SNAPSHOT: older clients serve
// neither RESET_CONSUMER_CLIENT_OFFSET nor GET_CONSUMER_STATUS_FROM_CLIENT.
const minStatusClientVersion int32 = 28

// consumerStatusTimeout bounds each GET_CONSUMER_STATUS_FROM_CLIENT call (5 s stock).
const consumerStatusTimeout = 5 * time.Second

// queueOffset is one entry of a Map<MessageQueue, Long>.
type queueOffset struct {
	mq     remoting.MessageQueue
	offset int64
}

// appendOffsetTable writes a Map<MessageQueue, Long> as fastjson does:
// object keys, in the order given.
func appendOffsetTable(buf []byte, table []queueOffset) []byte {
	buf = append(buf, '{')
	for i, e := range table {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fastjson.AppendMessageQueue(buf, e.mq.BrokerName, e.mq.QueueID, e.mq.Topic)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, e.offset, 10)
	}
	return append(buf, '}')
}

// resetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (Broker2Client.resetOffset):
// per write queue the offset whose message was stored at the timestamp (-1:
// the queue's end), taken when isForce or when it is behind the group's
// offset. The table goes to every client of the group (oneway); with none
// online the answer is CONSUMER_NOT_ONLINE, on which mqadmin falls back to
// rewriting the broker's offsets itself. Unlike 4.9.8, and like 5.x with
// useServerSideResetOffset, the broker's own offsets are set to the table
// too, so the reset also holds for a client that commits before it applies it.
func (s *Service) resetOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ResetOffsetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, group, ts, force := hd.Topic, hd.Group, hd.Timestamp, hd.IsForce
	s.log.Info().Str("topic", topic).Str("group", group).Int64("timestamp", ts).Bool("force", force).Msg("reset offset")
	tc := s.topics.Get(topic)
	if tc == nil {
		return remoting.NewResponse(req, remoting.SystemError, "[reset-offset] reset offset failed, no topic in this broker. topic="+topic)
	}
	table := make([]queueOffset, 0, tc.WriteQueueNums)
	for i := int32(0); i < tc.WriteQueueNums; i++ {
		current, ok := s.Offsets.Query(group, topic, i)
		if !ok {
			return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("THe consumer group <%s> not exist", group))
		}
		var target int64
		if ts == -1 {
			target = s.store.MaxOffsetInQueue(topic, i)
		} else {
			target = s.store.OffsetInQueueByTime(topic, i, ts)
		}
		target = max(target, 0)
		if !force && target >= current {
			target = current
		}
		table = append(table, queueOffset{remoting.MessageQueue{BrokerName: s.brokerName, QueueID: i, Topic: topic}, target})
	}

	ext := (&remoting.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: ts}).Fields()
	var body []byte
	if req.Language == "CPP" {
		// ResetOffsetBodyForC: a list of {topic, brokerName, queueId, offset}.
		type mqForC struct {
			BrokerName string `json:"brokerName"`
			Offset     int64  `json:"offset"`
			QueueID    int32  `json:"queueId"`
			Topic      string `json:"topic"`
		}
		list := make([]mqForC, len(table))
		for i, e := range table {
			list[i] = mqForC{e.mq.BrokerName, e.offset, e.mq.QueueID, e.mq.Topic}
		}
		body = remoting.MarshalBody(struct {
			OffsetTable []mqForC `json:"offsetTable"`
		}{list})
	} else {
		body = append(appendOffsetTable([]byte(`{"offsetTable":`), table), '}')
	}
	channels := s.Consumers.Channels(group)
	if len(channels) == 0 {
		return remoting.NewResponse(req, remoting.ConsumerNotOnline,
			fmt.Sprintf("Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", group, topic, ts))
	}
	for _, ch := range channels {
		if ch.Version < minStatusClientVersion {
			return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("the client does not support this feature. version=%d", ch.Version))
		}
	}
	for _, e := range table {
		s.Offsets.Commit(group, topic, e.mq.QueueID, e.offset)
	}
	for _, ch := range channels {
		if err := ch.Conn.Oneway(remoting.NewRequest(remoting.ResetConsumerClientOffset, ext, body)); err != nil {
			s.log.Warn().Err(err).Str("group", group).Str("clientId", ch.ClientID).Msg("reset offset: push to client failed")
		}
	}
	resp := successResponse(req, append(appendOffsetTable([]byte(`{"offsetTable":`), table), '}'))
	return resp
}

// getConsumerStatus serves INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// (Broker2Client.getConsumeStatus): each client of the group (or only
// clientAddr, a client id) is asked for its offsets of topic, and the answer
// maps client id → offsets. Clients that fail to answer are left out.
func (s *Service) getConsumerStatus(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetConsumerStatusRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, group, only := hd.Topic, hd.Group, hd.ClientAddr
	channels := s.Consumers.Channels(group)
	if len(channels) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", group))
	}
	type clientStatus struct {
		id    string
		table []byte // the client's messageQueueTable, fastjson text
	}
	var got []clientStatus
	for _, ch := range channels {
		if ch.Version < minStatusClientVersion {
			return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("the client does not support this feature. version=%d", ch.Version))
		}
		if strings.TrimSpace(only) != "" && only != ch.ClientID {
			continue
		}
		call := remoting.NewRequest(remoting.GetConsumerStatusFromClient, (&remoting.GetConsumerStatusRequestHeader{Topic: topic, Group: group}).Fields(), nil)
		ctx, cancel := context.WithTimeout(context.Background(), consumerStatusTimeout)
		resp, err := ch.Conn.Invoke(ctx, call)
		cancel()
		if err != nil {
			s.log.Warn().Err(err).Str("group", group).Str("clientId", ch.ClientID).Msg("get consumer status failed")
			continue
		}
		if resp.Code != remoting.Success || len(resp.Body) == 0 {
			continue
		}
		var body struct {
			MessageQueueTable fastjson.Entries[remoting.MessageQueue, int64] `json:"messageQueueTable"`
		}
		if err := fastjson.Unmarshal(resp.Body, &body); err != nil {
			s.log.Warn().Err(err).Str("clientId", ch.ClientID).Msg("get consumer status: bad body")
			continue
		}
		table := make([]queueOffset, len(body.MessageQueueTable))
		for i, e := range body.MessageQueueTable {
			table[i] = queueOffset{e.Key, e.Value}
		}
		got = append(got, clientStatus{ch.ClientID, appendOffsetTable(nil, table)})
	}
	buf := []byte(`{"consumerTable":{`)
	for i, c := range got {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fastjson.AppendString(buf, c.id)
		buf = append(buf, ':')
		buf = append(buf, c.table...)
	}
	buf = append(buf, `},"messageQueueTable":{}}`...)
	return successResponse(req, buf)
}

// queueTimeSpan is QueueTimeSpan.
type queueTimeSpan struct {
	ConsumeTimeStamp int64                 `json:"consumeTimeStamp"`
	DelayTime        int64                 `json:"delayTime"`
	MaxTimeStamp     int64                 `json:"maxTimeStamp"`
	MessageQueue     remoting.MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64                 `json:"minTimeStamp"`
}

// queryConsumeTimeSpan serves QUERY_CONSUME_TIME_SPAN: per write queue the
// store times of the first and last messages, of the group's last consumed
// one, and how long the next one has waited.
func (s *Service) queryConsumeTimeSpan(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryConsumeTimeSpanRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, group := hd.Topic, hd.Group
	tc := s.topics.Get(topic)
	if tc == nil {
		return remoting.NewResponse(req, remoting.TopicNotExist, "topic["+topic+"] not exist")
	}
	storeTime := func(qid int32, off int64) int64 {
		ts, err := s.store.MessageStoreTimeStamp(topic, qid, off)
		if err != nil {
			return -1 // Java getMessageStoreTimeStamp's "not found"
		}
		return ts
	}
	now := s.clock.Now().UnixMilli()
	spans := make([]queueTimeSpan, 0, tc.WriteQueueNums)
	for i := int32(0); i < tc.WriteQueueNums; i++ {
		sp := queueTimeSpan{MessageQueue: remoting.MessageQueue{BrokerName: s.brokerName, QueueID: i, Topic: topic}}
		sp.MinTimeStamp = storeTime(i, s.store.MinOffsetInQueue(topic, i))
		maxOff := s.store.MaxOffsetInQueue(topic, i)
		sp.MaxTimeStamp = storeTime(i, maxOff-1)
		consumed, ok := s.Offsets.Query(group, topic, i)
		if !ok {
			consumed = -1
		}
		if consumed > 0 {
			sp.ConsumeTimeStamp = storeTime(i, consumed-1)
		} else {
			sp.ConsumeTimeStamp = sp.MinTimeStamp
		}
		if consumed < maxOff {
			sp.DelayTime = now - storeTime(i, consumed)
		}
		spans = append(spans, sp)
	}
	return successResponse(req, remoting.MarshalBody(struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}{spans}))
}

// queryCorrectionOffset serves QUERY_CORRECTION_OFFSET: per queue of topic
// the smallest offset (at or past the queue's minimum) over the groups not in
// filterGroups, or Long.MAX_VALUE where compareGroup is behind it. Stock
// removes the filtered groups' offsets from its table while computing this;
// here they are only skipped.
func (s *Service) queryCorrectionOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryCorrectionOffsetHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	filter, compare, topic := hd.FilterGroups, hd.CompareGroup, hd.Topic
	skip := map[string]bool{}
	if strings.TrimSpace(filter) != "" {
		for _, g := range strings.Split(filter, ",") {
			skip[g] = true
		}
	}
	minOff := map[int32]int64{}
	for _, g := range s.Offsets.GroupsByTopic(topic) {
		if skip[g] {
			continue
		}
		for qid, off := range s.Offsets.QueryAll(g, topic) {
			if off < s.store.MinOffsetInQueue(topic, qid) {
				continue
			}
			if cur, ok := minOff[qid]; !ok || off < cur {
				minOff[qid] = off
			}
		}
	}
	for qid, off := range s.Offsets.QueryAll(compare, topic) {
		if cur, ok := minOff[qid]; ok && cur > off {
			minOff[qid] = math.MaxInt64
		}
	}
	ids := make([]int32, 0, len(minOff))
	for id := range minOff {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	buf := []byte(`{"correctionOffsets":{`)
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fastjson.AppendIntKey(buf, int64(id), false)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, minOff[id], 10)
	}
	return successResponse(req, append(buf, "}}"...))
}

// cloneGroupOffset serves CLONE_GROUP_OFFSET: destGroup gets srcGroup's
// offsets of topic, or of every topic srcGroup has offsets for when topic is
// blank. Unless offline, a topic the online srcGroup does not subscribe to is
// skipped. (Stock clones only the header's topic inside that loop, so a blank
// topic clones nothing; here it clones each topic.)
func (s *Service) cloneGroupOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.CloneGroupOffsetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	src, dest, topic, offline := hd.SrcGroup, hd.DestGroup, hd.Topic, hd.Offline
	topics := []string{topic}
	if strings.TrimSpace(topic) == "" {
		topics = s.Offsets.TopicsByGroup(src)
	}
	for _, t := range topics {
		if s.topics.Get(t) == nil {
			s.log.Warn().Str("topic", t).Msg("cloneGroupOffset: topic config not exist")
			continue
		}
		if !offline && s.Consumers.SubscriptionCount(src) > 0 && s.Consumers.FindSubscription(src, t) == nil {
			s.log.Warn().Str("group", src).Str("topic", t).Msg("cloneGroupOffset: the online group does not subscribe to the topic")
			continue
		}
		s.Offsets.Clone(src, dest, t)
	}
	return successResponse(req, nil)
}

// consumeQueueData is ConsumeQueueData.
type consumeQueueData struct {
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	Msg            string `json:"msg,omitempty"`
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
}

// queryConsumeQueue serves QUERY_CONSUME_QUEUE: count consume-queue units of
// topic/queueId from index, and, with consumerGroup, the group's
// subscription. rmq keeps no consume-queue extension file, so no unit has
// extendDataJson, bitMap or eval.
func (s *Service) queryConsumeQueue(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryConsumeQueueRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, qid, index, count := hd.Topic, hd.QueueID, hd.Index, hd.Count
	group, hasGroup := "", hd.ConsumerGroup != nil
	if hasGroup {
		group = *hd.ConsumerGroup
	}
	units, ok := s.store.ConsumeQueueUnits(topic, qid, index, int(count))
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("%d@%s is not exist!", qid, topic))
	}
	body := struct {
		FilterData       string                     `json:"filterData,omitempty"`
		MaxQueueIndex    int64                      `json:"maxQueueIndex"`
		MinQueueIndex    int64                      `json:"minQueueIndex"`
		QueueData        []consumeQueueData         `json:"queueData,omitempty"`
		SubscriptionData *remoting.SubscriptionData `json:"subscriptionData,omitempty"`
	}{
		MaxQueueIndex: s.store.MaxOffsetInQueue(topic, qid),
		MinQueueIndex: s.store.MinOffsetInQueue(topic, qid),
	}
	if hasGroup {
		body.SubscriptionData = s.Consumers.FindSubscription(group, topic)
		if body.SubscriptionData == nil {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", group, topic)
		} else {
			body.FilterData = "null" // fastjson of the absent ConsumerFilterData of a TAG subscription
		}
	}
	resp := successResponse(req, nil)
	if len(units) == 0 {
		resp.Remark = fmt.Sprintf("Index %d of %d@%s is not exist!", index, qid, topic)
		return resp
	}
	body.QueueData = make([]consumeQueueData, len(units))
	for i, u := range units {
		body.QueueData[i] = consumeQueueData{PhysicOffset: u.PhyOffset, PhysicSize: u.Size, TagsCode: u.TagsCode}
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp.Body = b
	return resp
}
