package grpcapi

import (
	"runtime/debug"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// Issue 42 audit: a request's protobuf decoding does not recurse per input
// byte. The apiv2 schema has no recursive message, and protobuf-go stops
// nested groups in unknown fields at its recursion limit (10 000), so a
// megabyte of nesting is an error, not a stack overflow (checked under a
// 16 MiB stack cap). Property maps and keys are then bounded by
// messageProperties (userPropertyMaxNum, maxUserPropertySize).
func TestProtoDeepUnknownGroups(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
	n := 1_000_000
	var b []byte
	for i := 0; i < n; i++ {
		b = protowire.AppendTag(b, 99, protowire.StartGroupType)
	}
	for i := 0; i < n; i++ {
		b = protowire.AppendTag(b, 99, protowire.EndGroupType)
	}
	for _, m := range []proto.Message{&v2.SendMessageRequest{}, &v2.ReceiveMessageRequest{}, &v2.TelemetryCommand{}} {
		if err := proto.Unmarshal(b, m); err == nil {
			t.Errorf("%T: 10^6 nested groups decoded", m)
		}
	}
}
