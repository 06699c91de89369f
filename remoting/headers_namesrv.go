package remoting

// Name server request headers (namesrv/processors.go serves them; the
// broker's registration and the admin client send them).

// PutKVConfigRequestHeader is PUT_KV_CONFIG's.
type PutKVConfigRequestHeader struct{ Namespace, Key, Value string }

func (r *PutKVConfigRequestHeader) decodeHeader(h *Header) {
	r.Namespace, r.Key, r.Value = h.Str("namespace", true), h.Str("key", true), h.Str("value", true)
}

// KVConfigRequestHeader is GET_KV_CONFIG's and DELETE_KV_CONFIG's
// (GetKVConfigRequestHeader, DeleteKVConfigRequestHeader: the same fields).
type KVConfigRequestHeader struct{ Namespace, Key string }

func (r *KVConfigRequestHeader) decodeHeader(h *Header) {
	r.Namespace, r.Key = h.Str("namespace", true), h.Str("key", true)
}

// GetKVListByNamespaceRequestHeader is GET_KVLIST_BY_NAMESPACE's.
type GetKVListByNamespaceRequestHeader struct{ Namespace string }

func (r *GetKVListByNamespaceRequestHeader) decodeHeader(h *Header) {
	r.Namespace = h.Str("namespace", true)
}

// RegisterBrokerRequestHeader is REGISTER_BROKER's; HeartbeatTimeoutMillis
// is 5.x's addition (0 when absent).
type RegisterBrokerRequestHeader struct {
	BrokerName, BrokerAddr, ClusterName, HAServerAddr string
	BrokerID                                          int64
	Compressed                                        bool
	BodyCrc32                                         int64
	HeartbeatTimeoutMillis                            int64
	// EnableActingMaster is 5.x's Boolean: nil from a 4.x broker, which
	// the name server then never treats as a prime slave.
	EnableActingMaster *bool
}

func (r *RegisterBrokerRequestHeader) decodeHeader(h *Header) {
	r.BrokerName = h.Str("brokerName", true)
	r.BrokerAddr = h.Str("brokerAddr", true)
	r.ClusterName = h.Str("clusterName", true)
	r.HAServerAddr = h.Str("haServerAddr", true)
	r.BrokerID = h.Int64("brokerId", true, 0)
	r.Compressed = h.Bool("compressed")
	r.BodyCrc32 = h.Int64("bodyCrc32", false, 0)
	r.HeartbeatTimeoutMillis = h.Int64("heartbeatTimeoutMillis", false, 0)
	r.EnableActingMaster = optBool(h, "enableActingMaster")
}

// BrokerIdentityRequestHeader is UNREGISTER_BROKER's and
// QUERY_DATA_VERSION's (UnRegisterBrokerRequestHeader,
// QueryDataVersionRequestHeader: the same four required fields).
type BrokerIdentityRequestHeader struct {
	BrokerName, BrokerAddr, ClusterName string
	BrokerID                            int64
}

func (r *BrokerIdentityRequestHeader) decodeHeader(h *Header) {
	r.BrokerName, r.BrokerAddr, r.ClusterName = h.Str("brokerName", true), h.Str("brokerAddr", true), h.Str("clusterName", true)
	r.BrokerID = h.Int64("brokerId", true, 0)
}

// GetRouteInfoRequestHeader is GET_ROUTEINFO_BY_TOPIC's;
// AcceptStandardJSONOnly is 5.x's addition.
type GetRouteInfoRequestHeader struct {
	Topic                  string
	AcceptStandardJSONOnly bool
}

func (r *GetRouteInfoRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.AcceptStandardJSONOnly = h.Bool("acceptStandardJsonOnly")
}

// WritePermOfBrokerRequestHeader is WIPE_WRITE_PERM_OF_BROKER's and
// ADD_WRITE_PERM_OF_BROKER's.
type WritePermOfBrokerRequestHeader struct{ BrokerName string }

func (r *WritePermOfBrokerRequestHeader) decodeHeader(h *Header) {
	r.BrokerName = h.Str("brokerName", true)
}

// DeleteTopicFromNamesrvRequestHeader is DELETE_TOPIC_IN_NAMESRV's.
type DeleteTopicFromNamesrvRequestHeader struct{ Topic, ClusterName string }

func (r *DeleteTopicFromNamesrvRequestHeader) decodeHeader(h *Header) {
	r.Topic = h.Str("topic", true)
	r.ClusterName = h.Str("clusterName", false)
}

// TopicRequestHeader is the header of the requests that carry only a
// required topic: REGISTER_TOPIC_IN_NAMESRV (RegisterTopicRequestHeader),
// DELETE_TOPIC_IN_BROKER (DeleteTopicRequestHeader), GET_TOPIC_CONFIG
// (GetTopicConfigRequestHeader), GET_TOPIC_STATS_INFO
// (GetTopicStatsInfoRequestHeader), QUERY_TOPIC_CONSUME_BY_WHO
// (QueryTopicConsumeByWhoRequestHeader).
type TopicRequestHeader struct{ Topic string }

func (r *TopicRequestHeader) decodeHeader(h *Header) { r.Topic = h.Str("topic", true) }

// GetTopicsByClusterRequestHeader is GET_TOPICS_BY_CLUSTER's.
type GetTopicsByClusterRequestHeader struct{ Cluster string }

func (r *GetTopicsByClusterRequestHeader) decodeHeader(h *Header) { r.Cluster = h.Str("cluster", true) }
