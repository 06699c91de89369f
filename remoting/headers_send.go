package remoting

import "strconv"

// Send-path request headers: SEND_MESSAGE and SEND_REPLY_MESSAGE carry
// SendMessageRequestHeader; SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and
// SEND_REPLY_MESSAGE_V2 the same fields under one-letter names
// (SendMessageRequestHeaderV2, which the stock broker converts to V1 before
// reading it); CONSUMER_SEND_MSG_BACK ConsumerSendMsgBackRequestHeader.
//
// A send is the hottest request of a broker, served on the event loop when
// it can be: its header is decoded without allocating (decodeFast, which
// DecodeHeader prefers), and the V2 letters of a binary header left
// unparsed (ServerOptions.RawExtCodes) are read in place, in one pass,
// without building the extFields map.

// SendMessageRequestHeader is SendMessageRequestHeader (4.9.8).
type SendMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	Batch                 bool
	MaxReconsumeTimes     int32
	// HasMaxReconsumeTimes is whether the nullable maxReconsumeTimes was
	// given (present and not empty).
	HasMaxReconsumeTimes bool
}

// SendMessageRequestHeaderV2 is SendMessageRequestHeaderV2: the fields of
// SendMessageRequestHeader under the letters a-m (sendV2Letters). Convert
// it with SendMessageRequestHeader(v2).
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// sendHeaderKeys names the send header's fields in one of its two
// spellings.
type sendHeaderKeys struct {
	producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueID, sysFlag, bornTimestamp,
	flag, properties, reconsumeTimes, unitMode, batch, maxReconsumeTimes string
}

var (
	sendV1Names = sendHeaderKeys{
		producerGroup: "producerGroup", topic: "topic", defaultTopic: "defaultTopic",
		defaultTopicQueueNums: "defaultTopicQueueNums", queueID: "queueId", sysFlag: "sysFlag",
		bornTimestamp: "bornTimestamp", flag: "flag", properties: "properties", reconsumeTimes: "reconsumeTimes",
		unitMode: "unitMode", batch: "batch", maxReconsumeTimes: "maxReconsumeTimes",
	}
	sendV2Letters = sendHeaderKeys{
		producerGroup: "a", topic: "b", defaultTopic: "c", defaultTopicQueueNums: "d", queueID: "e",
		sysFlag: "f", bornTimestamp: "g", flag: "h", properties: "i", reconsumeTimes: "j",
		unitMode: "k", maxReconsumeTimes: "l", batch: "m",
	}
)

// decodeNamed reads the fields under the names of k, in the order the
// stock decode checks them.
func (r *SendMessageRequestHeader) decodeNamed(h *Header, k *sendHeaderKeys) {
	r.ProducerGroup = h.Str(k.producerGroup, true)
	r.Topic = h.Str(k.topic, true)
	r.DefaultTopic = h.Str(k.defaultTopic, true)
	r.DefaultTopicQueueNums = h.Int32(k.defaultTopicQueueNums, true, 0)
	r.QueueID = h.Int32(k.queueID, true, 0)
	r.SysFlag = h.Int32(k.sysFlag, true, 0)
	r.BornTimestamp = h.Int64(k.bornTimestamp, true, 0)
	r.Flag = h.Int32(k.flag, true, 0)
	r.Properties = h.Str(k.properties, false)
	r.ReconsumeTimes = h.Int32(k.reconsumeTimes, false, 0)
	r.UnitMode = h.Bool(k.unitMode)
	r.Batch = h.Bool(k.batch)
	r.MaxReconsumeTimes = h.Int32(k.maxReconsumeTimes, false, 0)
	r.HasMaxReconsumeTimes = h.ext[k.maxReconsumeTimes] != ""
}

func (r *SendMessageRequestHeader) decodeHeader(h *Header) { r.decodeNamed(h, &sendV1Names) }

func (*SendMessageRequestHeader) decodeFast(c *Command) (SendMessageRequestHeader, error) {
	var v SendMessageRequestHeader
	h := Header{ext: c.Ext()}
	v.decodeHeader(&h)
	return v, h.err
}

// decodeHeader reads the letters. A header that fails is reported with the
// V1 names, as the stock broker reports it after converting it to V1.
func (r *SendMessageRequestHeaderV2) decodeHeader(h *Header) {
	(*SendMessageRequestHeader)(r).decodeNamed(h, &sendV2Letters)
	if h.err == nil {
		return
	}
	v1 := make(map[string]string, len(h.ext))
	for _, k := range sendV2Keys {
		if v, ok := h.ext[k.short]; ok {
			v1[k.long] = v
		}
	}
	named := Header{ext: v1}
	var discard SendMessageRequestHeader
	discard.decodeHeader(&named)
	h.err = named.err
}

func (*SendMessageRequestHeaderV2) decodeFast(c *Command) (SendMessageRequestHeaderV2, error) {
	var v SendMessageRequestHeaderV2
	if raw, ok := c.RawExt(); ok && v.decodeRaw(raw) {
		return v, nil
	}
	h := Header{ext: c.Ext()}
	v.decodeHeader(&h)
	return v, h.err
}

// sendV2Keys maps SendMessageRequestHeaderV2's letters to the V1 names
// (SendMessageRequestHeaderV2.createSendMessageRequestHeaderV1; n, the
// 5.x broker name, is not read).
var sendV2Keys = [...]struct{ short, long string }{
	{"a", "producerGroup"}, {"b", "topic"}, {"c", "defaultTopic"}, {"d", "defaultTopicQueueNums"},
	{"e", "queueId"}, {"f", "sysFlag"}, {"g", "bornTimestamp"}, {"h", "flag"}, {"i", "properties"},
	{"j", "reconsumeTimes"}, {"k", "unitMode"}, {"l", "maxReconsumeTimes"}, {"m", "batch"}, {"n", "bname"},
}

// decodeRaw reads the letters from an unparsed binary extFields area in
// one pass. It reports false for anything but a header whose required
// fields are all present and well formed (the map path then reports the
// error); every header it accepts it reads as decodeHeader does.
func (r *SendMessageRequestHeaderV2) decodeRaw(raw string) bool {
	const (
		required = 1<<8 - 1 // a-h
		bad      = 1 << 15
	)
	seen := 0
	num := func(v string, bit int, optional bool) int32 {
		if v == "" && optional {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			seen |= bad
		}
		seen |= bit
		return int32(n)
	}
	eachBinaryField(raw, func(k, v string) {
		if len(k) != 1 {
			return
		}
		switch k[0] {
		case 'a':
			r.ProducerGroup, seen = v, seen|1
		case 'b':
			r.Topic, seen = v, seen|2
		case 'c':
			r.DefaultTopic, seen = v, seen|4
		case 'd':
			r.DefaultTopicQueueNums = num(v, 8, false)
		case 'e':
			r.QueueID = num(v, 16, false)
		case 'f':
			r.SysFlag = num(v, 32, false)
		case 'g':
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				seen |= bad
			}
			r.BornTimestamp, seen = n, seen|64
		case 'h':
			r.Flag = num(v, 128, false)
		case 'i':
			r.Properties = v
		case 'j':
			r.ReconsumeTimes = num(v, 0, true)
		case 'k':
			r.UnitMode = JavaBool(v)
		case 'l':
			r.MaxReconsumeTimes = num(v, 0, true)
			r.HasMaxReconsumeTimes = v != ""
		case 'm':
			r.Batch = JavaBool(v)
		}
	})
	return seen == required // else a required letter missing, or a number malformed
}

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK's (the fields
// the broker reads: originMsgId, originTopic and unitMode are not).
type ConsumerSendMsgBackRequestHeader struct {
	Offset     int64
	Group      string
	DelayLevel int32
	// MaxReconsumeTimes is the nullable maxReconsumeTimes;
	// HasMaxReconsumeTimes whether it was given (present and not empty).
	MaxReconsumeTimes    int32
	HasMaxReconsumeTimes bool
}

func (r *ConsumerSendMsgBackRequestHeader) decodeHeader(h *Header) {
	r.Offset = h.Int64("offset", true, 0)
	r.Group = h.Str("group", true)
	r.DelayLevel = h.Int32("delayLevel", true, 0)
	r.HasMaxReconsumeTimes = h.ext["maxReconsumeTimes"] != ""
	r.MaxReconsumeTimes = h.Int32("maxReconsumeTimes", false, 0)
}
