package grpcapi

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// TestReceiveFilterLimits: a SQL92 filter over the length or depth limit
// (issue 42: 10^6 nested parentheses overflowed the parser's stack and killed
// the process) and an empty one are ILLEGAL_FILTER_EXPRESSION, as the proxy's
// ReceiveMessageActivity answers what FilterAPI.build refuses; the stream has
// that status (and the delivery timestamp) only, and the server keeps serving. The small maximum
// stack makes a per-byte recursion die at once.
func TestReceiveFilterLimits(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
	cs := startConsumeServer(t, nil, nil)
	cs.createTopic("RawLimit", 1)
	c := dial(t, cs.testServer, false)
	for _, tc := range []struct {
		name, expr, want string
	}{
		// 10^6 a side no longer reaches the parser: the request is over the
		// receive limit (maxMessageSize + 1 MiB, limits.go) and refused unread.
		{"10^6 bytes of parentheses", strings.Repeat("(", 500_000) + "a = 1" + strings.Repeat(")", 500_000), "the limit is 65536 bytes"},
		{"too deep", strings.Repeat("(", 20_000) + "a = 1" + strings.Repeat(")", 20_000), "the limit of 256 levels"},
		{"minus chain", strings.Repeat("-", 250_000) + "1=1", "the limit is 65536 bytes"},
		{"empty", "", "Expression can't be null! SQL92"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := recvReq("LimitGroup", "RawLimit", 10*time.Second)
			req.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_SQL, Expression: tc.expr}
			r := receiveRaw(t, c, callCtx(t), req)
			if r.status.GetCode() != v2.Code_ILLEGAL_FILTER_EXPRESSION || !strings.Contains(r.status.GetMessage(), tc.want) ||
				len(r.status.GetMessage()) > 400 || r.order != "sd" {
				t.Fatalf("%v (%q)", r.status.GetCode(), r.order)
			}
		})
	}
	ok := recvReq("LimitGroup", "RawLimit", 10*time.Second)
	ok.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_SQL, Expression: "a > 1"}
	ok.LongPollingTimeout = nil
	if r := receiveRaw(t, c, callCtx(t), ok); r.status.GetCode() == v2.Code_ILLEGAL_FILTER_EXPRESSION || r.status.GetCode() == v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("an ordinary filter after them: %v", r.status)
	}
}
