package message

// Request-reply property keys (MessageConst.java).
const (
	// PropCorrelationID pairs a reply with its request.
	PropCorrelationID = "CORRELATION_ID" // PROPERTY_CORRELATION_ID
	// PropReplyToClient is the client id of the requester: the broker pushes
	// the reply to that client's connection.
	PropReplyToClient = "REPLY_TO_CLIENT" // PROPERTY_MESSAGE_REPLY_TO_CLIENT
	// PropPushReplyTime is set by the broker just before it pushes a reply.
	PropPushReplyTime = "PUSH_REPLY_TIME" // PROPERTY_PUSH_REPLY_TIME
	// PropMsgType is "reply" on a reply message.
	PropMsgType = "MSG_TYPE" // PROPERTY_MESSAGE_TYPE
)
