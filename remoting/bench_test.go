package remoting

import (
	"bytes"
	"testing"
)

// benchCommand is a SEND_MESSAGE_V2 request as the Java producer writes it:
// the short letter header and a 1 KiB body.
func benchCommand(st byte) *Command {
	return &Command{
		Code: SendMessageV2, Language: "JAVA", Version: 409, Opaque: 123456, SerializeType: st,
		ExtFields: map[string]string{
			"a": "please_rename_unique_group_name", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "2",
			"f": "0", "g": "1700000000000", "h": "0", "i": "KEYS\x01order-1\x02UNIQ_KEY\x01AC1100017F0000000000000000000001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
			"j": "0", "k": "false", "m": "false",
		},
		Body: bytes.Repeat([]byte("m"), 1024),
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		b.Run("type="+typeName(st), func(b *testing.B) {
			cmd := benchCommand(st)
			buf := AppendFrame(nil, cmd)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendFrame(buf[:0], cmd)
			}
		})
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		b.Run("type="+typeName(st), func(b *testing.B) {
			frame := EncodeFrame(benchCommand(st))[4:]
			b.SetBytes(int64(len(frame) + 4))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeFrame(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
