package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// MarshalJSON writes the body as text when it is UTF-8 ("body") and as
// base64 otherwise ("bodyBase64").
func (m *Message) MarshalJSON() ([]byte, error) {
	type plain Message
	out := struct {
		*plain
		Body       string `json:"body,omitempty"`
		BodyBase64 string `json:"bodyBase64,omitempty"`
	}{plain: (*plain)(m)}
	if utf8.Valid(m.Body) {
		out.Body = string(m.Body)
	} else {
		out.BodyBase64 = base64.StdEncoding.EncodeToString(m.Body)
	}
	return json.Marshal(out)
}

// javaHost renders an address as InetSocketAddress.toString: "/ip:port".
func javaHost(h interface{ String() string }) string { return "/" + h.String() }

// JavaString is MessageExt.toString (with the properties sorted).
func (m *Message) JavaString(brokerName string) string {
	bn := brokerName
	if bn == "" {
		bn = "null"
	}
	tx := "null"
	if strings.EqualFold(m.Properties[message.PropTranMsg], "true") {
		tx = m.Properties[message.PropUniqKey]
	}
	return fmt.Sprintf("MessageExt [brokerName=%s, queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, bornHost=%s, storeTimestamp=%d, storeHost=%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, preparedTransactionOffset=%d, toString()=Message{topic='%s', flag=%d, properties=%s, body=%s, transactionId='%s'}]",
		bn, m.QueueID, m.StoreSize, m.QueueOffset, m.SysFlag, m.BornTimestamp, javaHost(m.BornHost),
		m.StoreTimestamp, javaHost(m.StoreHost), m.OffsetMsgID, m.CommitLogOffset, m.BodyCRC, m.ReconsumeTimes,
		m.PreparedTransactionOffset, m.Topic, m.Flag, javaMap(m.Properties), javaBytes(m.Body), tx)
}

// ViewMessage fetches one message by its offset id (VIEW_MESSAGE_BY_ID,
// sent to the broker address the id encodes).
func (a *Admin) ViewMessage(ctx context.Context, offsetMsgID string) (*Message, error) {
	host, off, err := message.DecodeMessageID(offsetMsgID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMsgID, err)
	}
	addr := host.String()
	req := newRequest(remoting.ViewMessageByID, (&remoting.ViewMessageRequestHeader{Offset: off}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	msgs, err := DecodeMessages(resp.Body)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: broker %s returned no message for %s", ErrNotFound, addr, offsetMsgID)
	}
	return msgs[0], nil
}

// Query limits of the stock admin (MQAdminImpl, QueryMsgByKeySubCommand).
const (
	QueryMaxNumByKey   = 64
	QueryMaxNumUniqKey = 32
)

// QueryMessage sends QUERY_MESSAGE to every broker of the topic's route and
// keeps what the client keeps: for a key query, messages of the topic whose
// KEYS contain key; for a unique-key query, messages whose id is key.
// Brokers answering QUERY_NOT_FOUND contribute nothing; when every broker
// fails, their errors are returned.
func (a *Admin) QueryMessage(ctx context.Context, topic, key string, maxNum int, begin, end int64, unique bool) ([]*Message, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []*Message
	var errs []error
	answered := 0
	seen := map[string]bool{}
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.QueryMessage, (&remoting.QueryMessageRequestHeader{
			Topic: topic, Key: key, MaxNum: int32(maxNum), BeginTimestamp: begin, EndTimestamp: end, UniqueKeyFlag: unique,
		}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req, remoting.Success, remoting.QueryNotFound)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		answered++
		if resp.Code != remoting.Success {
			continue
		}
		msgs, err := DecodeMessages(resp.Body)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, m := range msgs {
			if seen[m.OffsetMsgID] {
				continue
			}
			if unique {
				if m.MsgID != key {
					continue
				}
			} else if m.Topic != topic || !containsKey(m.Keys(), key) {
				continue
			}
			seen[m.OffsetMsgID] = true
			out = append(out, m)
		}
	}
	if answered == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: query message by key finished, but no message (topic %s, key %s)", ErrNotFound, topic, key)
	}
	return out, nil
}

func containsKey(keys, key string) bool {
	for _, k := range strings.Fields(keys) {
		if k == key {
			return true
		}
	}
	return false
}

// PrintQueryByKey writes queryMsgByKey output.
func PrintQueryByKey(w io.Writer, msgs []*Message) {
	fmt.Fprintf(w, "%-50s %4s %40s\n", "#Message ID", "#QID", "#Offset")
	for _, m := range msgs {
		fmt.Fprintf(w, "%-50s %4d %40d\n", m.MsgID, m.QueueID, m.QueueOffset)
	}
}

// FindMessageByID resolves a message id the way queryMsgById does: as an
// offset id (VIEW_MESSAGE_BY_ID); when that fails and a topic is given, as a
// unique key (QUERY_MESSAGE with _UNIQUE_KEY_QUERY, as 5.x tools fall back).
func (a *Admin) FindMessageByID(ctx context.Context, id, topic string) (*Message, error) {
	m, err := a.ViewMessage(ctx, id)
	if err == nil || topic == "" {
		return m, err
	}
	msgs, qerr := a.QueryMessage(ctx, topic, id, QueryMaxNumUniqKey, a.now().Add(-72*time.Hour).UnixMilli(), math.MaxInt64, true)
	if qerr != nil {
		return nil, errors.Join(err, qerr)
	}
	return msgs[0], nil
}

// Track types (TrackType).
const (
	TrackConsumed            = "CONSUMED"
	TrackConsumedButFiltered = "CONSUMED_BUT_FILTERED"
	TrackPull                = "PULL"
	TrackNotConsumeYet       = "NOT_CONSUME_YET"
	TrackNotOnline           = "NOT_ONLINE"
	TrackUnknown             = "UNKNOWN"
)

// MessageTrack says whether one group consumed a message.
type MessageTrack struct {
	ConsumerGroup string `json:"consumerGroup"`
	TrackType     string `json:"trackType"`
	ExceptionDesc string `json:"exceptionDesc,omitempty"`
}

func (t MessageTrack) String() string {
	desc := t.ExceptionDesc
	if desc == "" {
		desc = "null"
	}
	return fmt.Sprintf("MessageTrack [consumerGroup=%s, trackType=%s, exceptionDesc=%s]", t.ConsumerGroup, t.TrackType, desc)
}

func trackDesc(err error) string {
	var re *ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("CODE:%d DESC:%s", re.Code, re.Remark)
	}
	return err.Error()
}

// MessageTracks is messageTrackDetail: for every group consuming the
// message's topic, whether it consumed the message.
func (a *Admin) MessageTracks(ctx context.Context, m *Message) ([]MessageTrack, error) {
	groups, err := a.QueryTopicConsumeByWho(ctx, m.Topic, nil)
	if err != nil {
		return nil, err
	}
	out := []MessageTrack{}
	for _, g := range groups {
		mt := MessageTrack{ConsumerGroup: g, TrackType: TrackUnknown}
		cc, err := a.ConsumerConnection(ctx, g, "")
		if err != nil {
			if CodeOf(err) == remoting.ConsumerNotOnline {
				mt.TrackType = TrackNotOnline
			}
			mt.ExceptionDesc = trackDesc(err)
			out = append(out, mt)
			continue
		}
		switch cc.ConsumeType {
		case "CONSUME_ACTIVELY":
			mt.TrackType = TrackPull
		case "CONSUME_PASSIVELY":
			consumed, err := a.consumed(ctx, m, g)
			switch {
			case err != nil:
				if CodeOf(err) == remoting.ConsumerNotOnline || errors.Is(err, ErrNotFound) {
					mt.TrackType = TrackNotOnline
				}
				mt.ExceptionDesc = trackDesc(err)
			case !consumed:
				mt.TrackType = TrackNotConsumeYet
			default:
				mt.TrackType = TrackConsumed
				if sd := cc.SubscriptionTable[m.Topic]; sd != nil && len(sd.TagsSet) > 0 {
					matched := false
					for _, t := range sd.TagsSet {
						if t == "*" || t == m.Tags() {
							matched = true
						}
					}
					if !matched {
						mt.TrackType = TrackConsumedButFiltered
					}
				}
			}
		}
		out = append(out, mt)
	}
	return out, nil
}

// consumed reports whether the group's committed offset on the message's
// queue, at the broker that stored it, is past the message.
func (a *Admin) consumed(ctx context.Context, m *Message, group string) (bool, error) {
	cs, err := a.ConsumeStats(ctx, group, "")
	if err != nil {
		return false, err
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return false, err
	}
	for _, q := range cs.Queues {
		if q.Topic != m.Topic || q.QueueID != m.QueueID {
			continue
		}
		bd := ci.BrokerAddrTable[q.BrokerName]
		if bd != nil && bd.BrokerAddrs[0] == m.StoreHost.String() && q.ConsumerOffset > m.QueueOffset {
			return true, nil
		}
	}
	return false, nil
}

// MessageDetail is the result of queryMsgById for one id.
type MessageDetail struct {
	Message  *Message       `json:"message"`
	BodyPath string         `json:"bodyPath"`
	Tracks   []MessageTrack `json:"tracks"`
	TrackErr string         `json:"trackError,omitempty"`
}

// MessageDetail fetches a message by id, writes its body under BodyDir and
// looks up its consumption, as queryMsgById does.
func (a *Admin) MessageDetail(ctx context.Context, id, topic string) (*MessageDetail, error) {
	m, err := a.FindMessageByID(ctx, id, topic)
	if err != nil {
		return nil, err
	}
	return a.detail(ctx, m)
}

// MessageDetailByUniqueKey is queryMsgByUniqueKey: the message whose client
// id (UNIQ_KEY) is id, looked up in topic's key index only.
func (a *Admin) MessageDetailByUniqueKey(ctx context.Context, id, topic string) (*MessageDetail, error) {
	msgs, err := a.QueryMessage(ctx, topic, id, QueryMaxNumUniqKey, 0, math.MaxInt64, true)
	if err != nil {
		return nil, err
	}
	return a.detail(ctx, msgs[0])
}

// detail writes m's body under BodyDir and looks up its consumption.
func (a *Admin) detail(ctx context.Context, m *Message) (*MessageDetail, error) {
	var err error
	d := &MessageDetail{Message: m}
	if err := os.MkdirAll(a.opts.BodyDir, 0o755); err != nil {
		return nil, fmt.Errorf("admin: body directory: %w", err)
	}
	d.BodyPath = filepath.Join(a.opts.BodyDir, m.MsgID)
	if err := os.WriteFile(d.BodyPath, m.Body, 0o644); err != nil {
		return nil, fmt.Errorf("admin: write message body: %w", err)
	}
	if d.Tracks, err = a.MessageTracks(ctx, m); err != nil {
		d.TrackErr = err.Error()
	}
	return d, nil
}

// Print writes queryMsgById's stock block for one message.
func (d *MessageDetail) Print(w io.Writer) {
	m := d.Message
	line := func(k string, v any) { fmt.Fprintf(w, "%-20s %v\n", k, v) }
	line("OffsetID:", m.OffsetMsgID)
	line("Topic:", m.Topic)
	line("Tags:", "["+nullable(m.Tags())+"]")
	line("Keys:", "["+nullable(m.Keys())+"]")
	line("Queue ID:", m.QueueID)
	line("Queue Offset:", m.QueueOffset)
	line("CommitLog Offset:", m.CommitLogOffset)
	line("Reconsume Times:", m.ReconsumeTimes)
	line("Born Timestamp:", HumanTime(m.BornTimestamp))
	line("Store Timestamp:", HumanTime(m.StoreTimestamp))
	line("Born Host:", m.BornHost.String())
	line("Store Host:", m.StoreHost.String())
	line("System Flag:", m.SysFlag)
	line("Properties:", javaMap(m.Properties))
	line("Message Body Path:", d.BodyPath)
	switch {
	case d.TrackErr != "":
		fmt.Fprintf(w, "\n\nWARN: message track failed: %s\n", d.TrackErr)
	case len(d.Tracks) == 0:
		fmt.Fprintf(w, "\n\nWARN: No Consumer\n")
	default:
		fmt.Fprintf(w, "\n\n")
		for _, t := range d.Tracks {
			fmt.Fprintf(w, "%s\n", t)
		}
	}
}

func nullable(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// SendMessageSpec is what sendMessage sends.
type SendMessageSpec struct {
	Topic string
	Body  []byte
	Tags  string
	Keys  string
	// BrokerName and QueueID pick the queue; QueueID < 0 lets the producer
	// choose (round robin from a random start, as the Java producer).
	BrokerName string
	QueueID    int32
	// Properties are extra user or system properties (e.g. DELAY,
	// TIMER_DELIVER_MS).
	Properties    map[string]string
	ProducerGroup string
}

// sendRetryCodes are the codes after which the Java producer retries on
// another broker (retryResponseCodes).
var sendRetryCodes = map[int32]bool{17: true, 14: true, 1: true, 16: true, 204: true, 205: true}

// SendMessage sends one message as the Java producer does: route lookup
// (falling back to TBW102's route for a topic the name server does not
// know, so that the broker auto-creates it), SEND_MESSAGE_V2 to a queue,
// up to two retries on another broker.
func (a *Admin) SendMessage(ctx context.Context, s SendMessageSpec) (*SendResult, error) {
	queues, err := a.publishQueues(ctx, s.Topic)
	if err != nil {
		return nil, err
	}
	props := map[string]string{message.PropWait: "true"}
	for k, v := range s.Properties {
		props[k] = v
	}
	if s.Tags != "" {
		props[message.PropTags] = s.Tags
	}
	if s.Keys != "" {
		props[message.PropKeys] = s.Keys
	}
	now := a.now()
	props[message.PropUniqKey] = NewUniqID(now)
	if s.QueueID >= 0 {
		var chosen []QueueAddr
		for _, q := range queues {
			if q.BrokerName == s.BrokerName && q.QueueID == s.QueueID {
				chosen = append(chosen, q)
			}
		}
		if len(chosen) == 0 {
			return nil, fmt.Errorf("%w: topic %s has no writable queue %d on broker %s", ErrNoRoute, s.Topic, s.QueueID, s.BrokerName)
		}
		queues = chosen
	} else if s.BrokerName != "" {
		var chosen []QueueAddr
		for _, q := range queues {
			if q.BrokerName == s.BrokerName {
				chosen = append(chosen, q)
			}
		}
		if len(chosen) == 0 {
			return nil, fmt.Errorf("%w: topic %s has no writable queue on broker %s", ErrNoRoute, s.Topic, s.BrokerName)
		}
		queues = chosen
	}
	start := rand.IntN(len(queues))
	var lastErr error
	lastBroker := ""
	for attempt := 0; attempt < 3; attempt++ {
		q := pickQueue(queues, start+attempt, lastBroker)
		req := NewSendRequest(&SendSpec{
			ProducerGroup: s.ProducerGroup, Topic: s.Topic, QueueID: q.QueueID, Body: s.Body,
			Properties: props, BornTimestamp: now.UnixMilli(),
		})
		resp, err := a.invoke(ctx, roleBroker, q.Addr, req)
		if err == nil {
			if _, ok := SendStatus(resp.Code); ok {
				res, perr := ParseSendResponse(resp)
				if perr != nil {
					return nil, perr
				}
				res.MsgID = props[message.PropUniqKey]
				res.BrokerName = q.BrokerName
				return res, nil
			}
			err = &ResponseError{Role: roleBroker, Addr: q.Addr, Request: req.Code, Code: resp.Code, Remark: resp.Remark}
			if !sendRetryCodes[resp.Code] {
				return nil, err
			}
		}
		lastErr, lastBroker = err, q.BrokerName
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// pickQueue is selectOneMessageQueue(lastBrokerName): the queue at index i,
// or the next one on another broker when one exists.
func pickQueue(queues []QueueAddr, i int, lastBroker string) QueueAddr {
	for k := range queues {
		q := queues[(i+k)%len(queues)]
		if lastBroker == "" || q.BrokerName != lastBroker {
			return q
		}
	}
	return queues[i%len(queues)]
}

// publishQueues returns the writable queues of topic, or those of TBW102
// capped at DefaultTopicQueueNums per broker when the topic has no route.
func (a *Admin) publishQueues(ctx context.Context, topic string) ([]QueueAddr, error) {
	rd, err := a.Route(ctx, topic)
	if err == nil {
		if qs := PublishQueues(topic, rd); len(qs) > 0 {
			return qs, nil
		}
		return nil, fmt.Errorf("%w: topic %s has no writable queue", ErrNoRoute, topic)
	}
	if CodeOf(err) != remoting.TopicNotExist {
		return nil, err
	}
	def, derr := a.Route(ctx, message.TopicAutoCreateKey)
	if derr != nil {
		return nil, errors.Join(err, derr)
	}
	for _, qd := range def.QueueDatas {
		qd.WriteQueueNums = min(qd.WriteQueueNums, DefaultTopicQueueNums)
	}
	qs := PublishQueues(topic, def)
	if len(qs) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no route and %s is not writable", ErrNoRoute, topic, message.TopicAutoCreateKey)
	}
	return qs, nil
}

// PrintSendResult writes sendMessage output.
func PrintSendResult(w io.Writer, r *SendResult) {
	fmt.Fprintf(w, "%-32s  %-4s  %-20s    %s\n", "#Broker Name", "#QID", "#Send Result", "#MsgId")
	fmt.Fprintf(w, "%-32s  %-4d  %-20s    %s\n", r.BrokerName, r.QueueID, r.Status, r.MsgID)
	if r.RecallHandle != "" {
		fmt.Fprintf(w, "RecallHandle: %s\n", r.RecallHandle)
	}
}

// queueOffset sends one of GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP for a queue.
func (a *Admin) queueOffset(ctx context.Context, q QueueAddr, code int32, ts int64) (int64, error) {
	ext := (&remoting.QueueRequestHeader{Topic: q.Topic, QueueID: q.QueueID}).Fields()
	if code == remoting.SearchOffsetByTimestamp {
		ext = (&remoting.SearchOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID, Timestamp: ts}).Fields()
	}
	req := newRequest(code, ext, nil)
	resp, err := a.callBroker(ctx, q.Addr, req)
	if err != nil {
		return 0, err
	}
	rh, err := remoting.DecodeHeader[remoting.OffsetResponseHeader](resp)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrBadBody, RequestName(code), err)
	}
	return rh.Offset, nil
}

// MaxOffset is GET_MAX_OFFSET: the offset the next message will get.
func (a *Admin) MaxOffset(ctx context.Context, q QueueAddr) (int64, error) {
	return a.queueOffset(ctx, q, remoting.GetMaxOffset, 0)
}

// MinOffset is GET_MIN_OFFSET.
func (a *Admin) MinOffset(ctx context.Context, q QueueAddr) (int64, error) {
	return a.queueOffset(ctx, q, remoting.GetMinOffset, 0)
}

// SearchOffset is SEARCH_OFFSET_BY_TIMESTAMP.
func (a *Admin) SearchOffset(ctx context.Context, q QueueAddr, ts int64) (int64, error) {
	return a.queueOffset(ctx, q, remoting.SearchOffsetByTimestamp, ts)
}

// Pull sends one non-blocking PULL_MESSAGE with the subscription in the
// request (as the tools' pull consumer does) and re-filters by tag. Messages
// get the MIN_OFFSET/MAX_OFFSET properties the Java client adds.
func (a *Admin) Pull(ctx context.Context, q QueueAddr, group, subExpr string, offset int64, maxNums int32) (*PullResult, error) {
	req := NewPullRequest(&PullSpec{
		Group: group, Topic: q.Topic, QueueID: q.QueueID, Offset: offset,
		MaxNums: maxNums, SysFlag: PullFlagSubscription, Subscription: subExpr,
	})
	resp, err := a.invoke(ctx, roleBroker, q.Addr, req)
	if err != nil {
		return nil, err
	}
	r, ok, err := ParsePullResponse(resp)
	if !ok {
		return nil, &ResponseError{Role: roleBroker, Addr: q.Addr, Request: req.Code, Code: resp.Code, Remark: resp.Remark}
	}
	if err != nil {
		return nil, err
	}
	kept := r.Messages[:0]
	for _, m := range r.Messages {
		if TagMatches(subExpr, m.Tags()) {
			m.Properties[message.PropMinOffset] = strconv.FormatInt(r.MinOffset, 10)
			m.Properties[message.PropMaxOffset] = strconv.FormatInt(r.MaxOffset, 10)
			kept = append(kept, m)
		}
	}
	r.Messages = kept
	return r, nil
}

// javaQueue is MessageQueue.toString.
func javaQueue(q remoting.MessageQueue) string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}

// MessageWriter prints messages found by consumeMessage and printMsg: the
// stock "MSGID: ... BODY: ..." lines, or one JSON object per message.
type MessageWriter struct {
	W         io.Writer
	JSON      bool
	PrintBody bool
}

func (mw *MessageWriter) note(format string, args ...any) {
	if !mw.JSON {
		fmt.Fprintf(mw.W, format, args...)
	}
}

func (mw *MessageWriter) messages(q QueueAddr, msgs []*Message) error {
	for _, m := range msgs {
		if mw.JSON {
			row := struct {
				BrokerName string   `json:"brokerName"`
				Message    *Message `json:"message"`
			}{q.BrokerName, m}
			b, err := json.Marshal(row)
			if err != nil {
				return fmt.Errorf("admin: encode message: %w", err)
			}
			fmt.Fprintf(mw.W, "%s\n", b)
			continue
		}
		body := "NOT PRINT BODY"
		if mw.PrintBody {
			body = string(m.Body)
		}
		fmt.Fprintf(mw.W, "MSGID: %s %s BODY: %s\n", m.MsgID, m.JavaString(q.BrokerName), body)
	}
	return nil
}

// ConsumeSpec selects what consumeMessage reads.
type ConsumeSpec struct {
	Topic      string
	BrokerName string
	QueueID    int32 // < 0: every queue
	Offset     int64 // < 0: from the queue's minimum
	Group      string
	Begin, End int64 // ms; 0 means unbounded
	Count      int64 // messages at most (default 128)
}

// ConsumeMessage is consumeMessage: it pulls up to Count messages of the
// topic (or of one queue, from an offset) and prints them as it goes.
func (a *Admin) ConsumeMessage(ctx context.Context, s ConsumeSpec, mw *MessageWriter) error {
	if s.Count <= 0 {
		s.Count = 128
	}
	if s.Group == "" {
		s.Group = ToolsConsumerGroup
	}
	rd, err := a.Route(ctx, s.Topic)
	if err != nil {
		return err
	}
	queues := SubscribeQueues(s.Topic, rd)
	if s.QueueID >= 0 {
		var found []QueueAddr
		for _, q := range queues {
			if q.BrokerName == s.BrokerName && q.QueueID == s.QueueID {
				found = append(found, q)
			}
		}
		if len(found) == 0 {
			return fmt.Errorf("%w: topic %s has no readable queue %d on broker %s", ErrNoRoute, s.Topic, s.QueueID, s.BrokerName)
		}
		queues = found
	}
	left := s.Count
	for _, q := range queues {
		if left <= 0 {
			break
		}
		minOff, maxOff, err := a.offsetRange(ctx, q, s.Begin, s.End)
		if err != nil {
			return err
		}
		if s.QueueID >= 0 && s.Offset >= 0 {
			if s.Offset > maxOff {
				mw.note("%s no matched msg, offset=%d\n", javaQueue(q.MessageQueue), s.Offset)
				return nil
			}
			minOff = max(minOff, s.Offset)
		}
		if maxOff-minOff > left {
			mw.note("The older %d message of the %d queue will be provided\n", left, q.QueueID)
			maxOff = minOff + left
		}
		n, err := a.pullRange(ctx, q, s.Group, "*", minOff, maxOff, func(r *PullResult) int32 { return int32(min(maxOff-r.NextBeginOffset, 32)) }, mw, true)
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// offsetRange returns [min, max) of a queue, narrowed to the store times
// [begin, end] when they are set.
func (a *Admin) offsetRange(ctx context.Context, q QueueAddr, begin, end int64) (int64, int64, error) {
	minOff, err := a.MinOffset(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	maxOff, err := a.MaxOffset(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	if begin > 0 {
		if minOff, err = a.SearchOffset(ctx, q, begin); err != nil {
			return 0, 0, err
		}
	}
	if end > 0 {
		if maxOff, err = a.SearchOffset(ctx, q, end); err != nil {
			return 0, 0, err
		}
	}
	return minOff, maxOff, nil
}

// pullRange pulls [from, to) of a queue, printing each batch, until the
// range is read or the broker has nothing more; it returns the number of
// messages printed.
func (a *Admin) pullRange(ctx context.Context, q QueueAddr, group, subExpr string, from, to int64, batch func(*PullResult) int32, mw *MessageWriter, consumeOK bool) (int64, error) {
	var n int64
	cursor := &PullResult{NextBeginOffset: from}
	for cursor.NextBeginOffset < to {
		offset := cursor.NextBeginOffset
		r, err := a.Pull(ctx, q, group, subExpr, offset, max(batch(cursor), 1))
		if err != nil {
			return n, err
		}
		switch r.Status {
		case PullFound:
			if consumeOK {
				mw.note("Consume ok\n")
			}
			if err := mw.messages(q, r.Messages); err != nil {
				return n, err
			}
			n += int64(len(r.Messages))
		case PullNoMatchedMsg:
			mw.note("%s no matched msg. status=%s, offset=%d\n", javaQueue(q.MessageQueue), r.Status, r.NextBeginOffset)
		default:
			mw.note("%s print msg finished. status=%s, offset=%d\n", javaQueue(q.MessageQueue), r.Status, r.NextBeginOffset)
			return n, nil
		}
		if r.NextBeginOffset <= offset {
			// A broker that does not advance would loop forever.
			return n, fmt.Errorf("%w: pull of %s at %d did not advance", ErrBadBody, javaQueue(q.MessageQueue), offset)
		}
		cursor = r
	}
	return n, nil
}

// PrintMsgSpec selects what printMsg reads.
type PrintMsgSpec struct {
	Topic      string
	SubExpr    string // "*" when empty
	Begin, End int64  // ms; 0 means unbounded
}

// PrintMsg is printMsg: every message of every queue of the topic (within
// the time bounds), 32 per pull, with a separator line after each queue.
func (a *Admin) PrintMsg(ctx context.Context, s PrintMsgSpec, mw *MessageWriter) error {
	if s.SubExpr == "" {
		s.SubExpr = "*"
	}
	rd, err := a.Route(ctx, s.Topic)
	if err != nil {
		return err
	}
	for _, q := range SubscribeQueues(s.Topic, rd) {
		minOff, maxOff, err := a.offsetRange(ctx, q, s.Begin, s.End)
		if err != nil {
			return err
		}
		mw.note("minOffset=%d, maxOffset=%d, %s\n", minOff, maxOff, javaQueue(q.MessageQueue))
		if _, err := a.pullRange(ctx, q, ToolsConsumerGroup, s.SubExpr, minOff, maxOff, func(*PullResult) int32 { return 32 }, mw, false); err != nil {
			return err
		}
		mw.note("--------------------------------------------------------\n")
	}
	return nil
}

// ParseTimestamp reads a tools timestamp: milliseconds since the epoch or
// local "yyyy-MM-dd#HH:mm:ss:SSS".
func ParseTimestamp(s string) (int64, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return n, nil
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05:000", strings.TrimSpace(s), time.Local)
	if err != nil {
		return 0, fmt.Errorf("%w: timestamp %q is neither milliseconds nor yyyy-MM-dd#HH:mm:ss:SSS", ErrUsage, s)
	}
	return t.UnixMilli(), nil
}
