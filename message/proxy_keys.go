package message

// Property keys the 5.x proxy (gRPC endpoint) writes on the messages it
// sends (MessageConst.java).
const (
	// PropShardingKey is the message group of a FIFO message
	// (PROPERTY_SHARDING_KEY).
	PropShardingKey = "__SHARDINGKEY"
	// PropBornHost is the gRPC client's address (PROPERTY_BORN_HOST).
	PropBornHost = "__BORNHOST"
	// PropTraceContext is the client's trace context (PROPERTY_TRACE_CONTEXT).
	PropTraceContext = "TRACE_CONTEXT"
)
