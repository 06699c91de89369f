package remoting

import (
	"encoding/binary"
	"runtime/debug"
	"strings"
	"testing"
)

// Issue 42 audit: the remoting decoders never recurse per input byte. JSON
// headers and bodies go through json-iterator, whose decoder and skipper stop
// at 10 000 levels ("exceeded max depth"); binary headers are flat, every
// length checked against the frame before anything is sliced or allocated.
// Each input here is ~2 MB of nesting, decoded under a 16 MiB stack cap so a
// per-byte recursion would be a fatal stack overflow.
func TestDecodeDeepNesting(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
	n := 1_000_000
	deepArr := strings.Repeat("[", n) + strings.Repeat("]", n)
	deepObj := strings.Repeat(`{"a":`, n/5) + "1" + strings.Repeat("}", n/5)

	for name, header := range map[string]string{
		"unknown field array":  `{"code":34,"x":` + deepArr + `}`,
		"unknown field object": `{"code":34,"x":` + deepObj + `}`,
		"extFields value":      `{"code":34,"extFields":{"a":` + deepArr + `}}`,
		"whole header":         deepArr,
	} {
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(header))) // JSON serialize type 0
		frame = append(frame, header...)
		if _, err := DecodeFrame(frame); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	for name, body := range map[string]string{
		"unknown field":           `{"clientID":"c","x":` + deepArr + `}`,
		"known field":             `{"consumerDataSet":` + deepArr + `}`,
		"subscription in a field": `{"consumerDataSet":[{"subscriptionDataSet":[{"tagsSet":` + deepArr + `}]}]}`,
	} {
		var hb HeartbeatData
		if err := UnmarshalBody([]byte(body), &hb); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// Binary header: an extFields area declaring lengths beyond the frame.
	bin := []byte{0, 34, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(bin))|uint32(SerializeRocketMQ)<<24)
	if _, err := DecodeFrame(append(frame, bin...)); err == nil {
		t.Error("binary header with an extFields length past the frame: decoded")
	}
}
