package remoting

import (
	"bytes"
	"fmt"
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

// BenchmarkReadFrameBody reads SEND_MESSAGE_V2 frames whole, as the server
// does, with the body copied into a fresh buffer or lent from the pool
// (lend.go) and released after its "handler".
func BenchmarkReadFrameBody(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 64 << 10} {
		for _, lent := range []bool{false, true} {
			name := map[bool]string{false: "fresh", true: "lent"}[lent]
			b.Run(fmt.Sprintf("body=%d/%s", size, name), func(b *testing.B) {
				cmd := benchCommand(SerializeRocketMQ)
				cmd.Body = bytes.Repeat([]byte("m"), size)
				frame := EncodeFrame(cmd)
				d := newStreamDecoder()
				if lent {
					d.srv.lend = codeSet([]int32{SendMessageV2})
				}
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				for b.Loop() {
					d.in.b = frame
					got, err := d.srv.nextFrame(d.conn, &d.in)
					if err != nil || got == nil {
						b.Fatal(got, err)
					}
					got.release()
				}
			})
		}
	}
}

// BenchmarkDecodeSendHeader decodes SEND_MESSAGE_V2's header as the broker
// does for every send: "raw" from a binary header left unparsed
// (RawExtCodes), "map" from extFields (a JSON header).
func BenchmarkDecodeSendHeader(b *testing.B) {
	raw, mapped, _ := sendHeaderCommands(b)
	for name, c := range map[string]*Command{"raw": raw, "map": mapped} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeHeader[SendMessageRequestHeaderV2](c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
