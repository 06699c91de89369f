package remoting

// Request codes of rmq's own, which no RocketMQ broker serves. Each number
// was checked against every code of RequestCode.java in rocketmq-all-4.9.8
// (common/protocol) and rocketmq-all-5.3.3 (remoting/protocol): those use
// 10..3010 and 200050..200151, so rmq's own codes live at 9100 and up,
// clear of both ranges and of the remoting tests' private codes (9001..).

// ClockFastForward (rmq) moves the broker's message clock ahead, as
// rmqtest.FastForward does in a Go test, for the tests of other languages
// against a broker with clockControlEnable=true. Request header:
// durationMs (required, >= 0) and timeoutMs (optional bound of the jump's
// wait, real time); the response carries brokerTime (ms, the message
// clock after the jump) and clockOffsetMs (how far that clock is ahead of
// the wall clock). A broker with the key off answers NO_PERMISSION.
const ClockFastForward int32 = 9100

// rmqRequestCodeNames names rmq's own request codes for the metrics labels
// and texts (RequestCodeName, RequestCodeText), as the stock table names its.
var rmqRequestCodeNames = map[int32]string{
	ClockFastForward: "clock_fast_forward",
}
