package remoting

// Topic administration request headers (broker/brokeradmin serves them).

// CreateTopicRequestHeader is UPDATE_AND_CREATE_TOPIC's. Order is required
// but, as stock, not applied (the name server's ORDER_TOPIC_CONFIG decides).
type CreateTopicRequestHeader struct {
	Topic           string
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string
	TopicSysFlag    int32
	Order           bool
	Attributes      string
}

func (r *CreateTopicRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.DefaultTopic = h.Str("defaultTopic", true)
	r.ReadQueueNums = h.Int32("readQueueNums", true, 0)
	r.WriteQueueNums = h.Int32("writeQueueNums", true, 0)
	r.Perm = h.Int32("perm", true, 0)
	r.TopicFilterType = h.Str("topicFilterType", true)
	r.TopicSysFlag = h.Int32("topicSysFlag", false, 0)
	r.Order = JavaBool(h.Str("order", true))
	r.Attributes = h.Str("attributes", false)
}
