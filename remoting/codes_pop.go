package remoting

// 5.x POP consumption and client-side assignment (RequestCode.java,
// ResponseCode.java of rocketmq-all-5.3.3).
const (
	PopMessage                 int32 = 200050
	AckMessage                 int32 = 200051
	PeekMessage                int32 = 200052
	ChangeMessageInvisibleTime int32 = 200053
	Notification               int32 = 200054
	PollingInfo                int32 = 200055
	BatchAckMessage            int32 = 200151
	QueryAssignment            int32 = 400
	SetMessageRequestMode      int32 = 401
	GetAllMessageRequestMode   int32 = 402
)

// Response codes of the POP requests.
const (
	NoMessage      int32 = 208
	PollingFull    int32 = 209
	PollingTimeout int32 = 210
)
