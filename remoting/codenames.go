package remoting

import "strconv"

//go:generate go run ../internal/gencodenames -git $ROCKETMQ_GIT -o codenames_gen.go

// The one table of request and response code names (codenames_gen.go,
// generated from 5.3.3's RequestCode, ResponseCode and
// RemotingSysResponseCode): the rocketmq_rpc_latency labels, mqadmin-style
// error texts and logs all read it. TestEveryCodeConstantIsNamed fails when a
// code constant of this package has no stock name.

// RequestCodeName is the stock name of a request code in lower case, as
// 5.3.3's RemotingHelper.getRequestCodeDesc gives it ("send_message_v2"),
// or the decimal code when the stock table has none (rmq's own codes,
// codes_rmq.go, by their own names).
func RequestCodeName(code int32) string {
	if n, ok := requestCodeNames[code]; ok {
		return n
	}
	if n, ok := rmqRequestCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// ResponseCodeName is the stock name of a response code in lower case
// (RemotingHelper.getResponseCodeDesc), or the decimal code.
func ResponseCodeName(code int32) string {
	if n, ok := responseCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// RequestCodeText is the name for texts (admin errors, logs): the 5.3.3
// name, else the 4.9.8 name of a code 5.3.3 dropped (the plain-ACL codes),
// in lower case; ok is false when neither release names code.
func RequestCodeText(code int32) (string, bool) {
	if n, ok := requestCodeNames[code]; ok {
		return n, true
	}
	if n, ok := rmqRequestCodeNames[code]; ok {
		return n, true
	}
	n, ok := legacyRequestCodeNames[code]
	return n, ok
}

// ResponseCodeText is RequestCodeText for response codes.
func ResponseCodeText(code int32) (string, bool) {
	if n, ok := responseCodeNames[code]; ok {
		return n, true
	}
	n, ok := legacyResponseCodeNames[code]
	return n, ok
}
