package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The worked example of remoting-protocol.md §1.6: GET_ROUTEINFO_BY_TOPIC for
// topic TopicTest, opaque 3, version 409, language JAVA.
const (
	exampleJSONHeader = `{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":409}`
	exampleBinaryHex  = "0000002d01000029" + "0069" + "00" + "0199" + "00000003" + "00000000" + "00000000" +
		"00000014" + "0005" + "746f706963" + "00000009" + "546f70696354657374"
)

func exampleCommand(st byte) *Command {
	return &Command{
		Code: GetRouteinfoByTopic, Language: "JAVA", Version: 409, Opaque: 3,
		ExtFields: map[string]string{"topic": "TopicTest"}, SerializeType: st,
	}
}

func exampleJSONFrame() []byte {
	return append(mustHex("0000008700000083"), exampleJSONHeader...)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// decodeWhole checks the length prefix of a whole frame and decodes the rest.
func decodeWhole(t testing.TB, frame []byte) *Command {
	t.Helper()
	n, err := FrameLength(frame[:4])
	if err != nil {
		t.Fatalf("FrameLength: %v", err)
	}
	if n != len(frame)-4 {
		t.Fatalf("length prefix %d, frame has %d bytes after it", n, len(frame)-4)
	}
	cmd, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatalf("DecodeFrame: %v", err)
	}
	return cmd
}

func TestWorkedExample(t *testing.T) {
	tests := []struct {
		name  string
		st    byte
		frame []byte
	}{
		{name: "JSON", st: SerializeJSON, frame: exampleJSONFrame()},
		{name: "ROCKETMQ", st: SerializeRocketMQ, frame: mustHex(exampleBinaryHex)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeWhole(t, tc.frame)
			if want := exampleCommand(tc.st); !sameCommand(got, want) {
				t.Fatalf("decoded %+v, want %+v", got, want)
			}
			// One ext field, so map order cannot change the bytes.
			if enc := EncodeFrame(exampleCommand(tc.st)); !bytes.Equal(enc, tc.frame) {
				t.Fatalf("encoded\n%x\nwant\n%x", enc, tc.frame)
			}
		})
	}
}

// TestRoundTrip encodes and decodes commands that exercise every field in both
// header types. want* override the expected result where a type is lossy.
func TestRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	tests := []struct {
		name       string
		cmd        Command
		wantJSON   *Command // nil: the input itself
		wantBinary *Command // nil: the input itself
	}{
		{
			name: "bare request",
			cmd:  Command{Code: HeartBeat, Language: "JAVA", Version: 409, Opaque: 1},
		},
		{
			name: "response with remark and body",
			cmd: Command{Code: SystemError, Language: "GO", Version: Version, Opaque: 77, Flag: FlagResponse,
				Remark: "topic[x] not exist, apply first please!", Body: []byte(`{"a":1}`)},
		},
		{
			name: "oneway flag and every other flag bit",
			cmd:  Command{Code: UpdateConsumerOffset, Language: "JAVA", Opaque: 9, Flag: FlagOneway | 1<<7 | 1<<30},
		},
		{
			name: "max int16 code, negative opaque and version",
			cmd:  Command{Code: math.MaxInt16, Language: "CPP", Version: -2, Opaque: -123456},
		},
		{
			name: "min int32 opaque and flag",
			cmd:  Command{Code: 0, Language: "GO", Opaque: math.MinInt32, Flag: math.MinInt32},
		},
		{
			name: "control characters in ext and remark",
			cmd: Command{Code: SendMessageV2, Language: "JAVA", Opaque: 5,
				Remark:    "line1\nline2\t\x00\x7f\"q\"\\",
				ExtFields: map[string]string{"i": "KEYS\x01k1 k2\x02UNIQ_KEY\x01ABC\x02", "ctl\x1f": "\x01\x02\x03\x1b\r\n"}},
		},
		{
			name: "unicode",
			cmd: Command{Code: SendMessage, Language: "PYTHON", Opaque: 6, Remark: "错误 ✗ 😀",
				ExtFields: map[string]string{"主题": "話題😀", "tags": "\u2028\u2029"}},
		},
		{
			name: "invalid UTF-8",
			cmd: Command{Code: SendMessage, Language: "JAVA", Opaque: 7, Remark: "bad\xff\xfe",
				ExtFields: map[string]string{"k\xc3": "v\x80x"}},
			wantJSON: &Command{Code: SendMessage, Language: "JAVA", Opaque: 7, Remark: "bad\ufffd\ufffd",
				ExtFields: map[string]string{"k\ufffd": "v\ufffdx"}},
		},
		{
			name:       "empty but non-nil ext fields",
			cmd:        Command{Code: GetBrokerClusterInfo, Language: "JAVA", Opaque: 8, ExtFields: map[string]string{}},
			wantBinary: &Command{Code: GetBrokerClusterInfo, Language: "JAVA", Opaque: 8}, // length 0 reads as none
		},
		{
			name: "empty key and value",
			cmd:  Command{Code: SendMessage, Language: "GO", Opaque: 10, ExtFields: map[string]string{"": "", "a": ""}},
		},
		{
			name: "many ext fields and a large body",
			cmd: Command{Code: PullMessage, Language: "JAVA", Version: 409, Opaque: 11, Body: big, ExtFields: map[string]string{
				"consumerGroup": "g", "topic": "TopicTest", "queueId": "3", "queueOffset": "9223372036854775807",
				"maxMsgNums": "32", "sysFlag": "6", "commitOffset": "-1", "suspendTimeoutMillis": "20000",
				"subscription": "TagA || TagB", "subVersion": "1700000000000", "expressionType": "TAG"}},
		},
		{
			name:       "empty language defaults to GO",
			cmd:        Command{Code: 1, Opaque: 12},
			wantJSON:   &Command{Code: 1, Language: "GO", Opaque: 12},
			wantBinary: &Command{Code: 1, Language: "GO", Opaque: 12},
		},
		{
			name:       "unknown language",
			cmd:        Command{Code: 1, Language: "KOTLIN", Opaque: 13},
			wantBinary: &Command{Code: 1, Language: "OTHER", Opaque: 13}, // one byte carries only known codes
		},
	}
	for _, tc := range tests {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			t.Run(tc.name+"/"+typeName(st), func(t *testing.T) {
				in := tc.cmd
				in.SerializeType = st
				want := &in
				if o := tc.wantJSON; o != nil && st == SerializeJSON {
					want = o
				}
				if o := tc.wantBinary; o != nil && st == SerializeRocketMQ {
					want = o
				}
				w := *want
				w.SerializeType = st
				if got := decodeWhole(t, EncodeFrame(&in)); !sameCommand(got, &w) {
					t.Fatalf("round trip\n got %+v\nwant %+v", got, &w)
				}
			})
		}
	}
}

func typeName(st byte) string {
	switch st {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return "unknown"
}

// TestCodeRange pins how codes beyond int16 travel: JSON carries them whole,
// the binary header truncates them to int16 as Java's (short) cast does.
func TestCodeRange(t *testing.T) {
	tests := []struct {
		name string
		st   byte
		code int32
		want int32
	}{
		{name: "JSON 32767", st: SerializeJSON, code: 32767, want: 32767},
		{name: "JSON pop code", st: SerializeJSON, code: 200050, want: 200050},
		{name: "ROCKETMQ 32767", st: SerializeRocketMQ, code: 32767, want: 32767},
		{name: "ROCKETMQ 32768 wraps", st: SerializeRocketMQ, code: 32768, want: -32768},
		{name: "ROCKETMQ pop code truncated", st: SerializeRocketMQ, code: 200050, want: int32(int16(200050 & 0xFFFF))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeWhole(t, EncodeFrame(&Command{Code: tc.code, Language: "GO", SerializeType: tc.st}))
			if got.Code != tc.want {
				t.Fatalf("code %d decoded as %d, want %d", tc.code, got.Code, tc.want)
			}
		})
	}
}

func TestJSONExtFieldsPresence(t *testing.T) {
	tests := []struct {
		name string
		ext  map[string]string
		want string // substring of the header, or "" when extFields must be absent
	}{
		{name: "nil map omits the key", ext: nil},
		{name: "empty map writes an empty object", ext: map[string]string{}, want: `"extFields":{}`},
		{name: "one field", ext: map[string]string{"a": "b"}, want: `"extFields":{"a":"b"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := EncodeFrame(&Command{Code: 1, Language: "GO", ExtFields: tc.ext})
			header := string(frame[8:])
			if tc.want == "" {
				if strings.Contains(header, "extFields") {
					t.Fatalf("header %s has extFields", header)
				}
				return
			}
			if !strings.Contains(header, tc.want) {
				t.Fatalf("header %s lacks %s", header, tc.want)
			}
		})
	}
}

func TestBinaryNilExtFieldsWritesZeroLength(t *testing.T) {
	frame := EncodeFrame(&Command{Code: 1, Language: "GO", Remark: "abc", SerializeType: SerializeRocketMQ})
	header := frame[8:]
	if len(header) != 21+3 {
		t.Fatalf("header is %d bytes, want 24", len(header))
	}
	if rl := binary.BigEndian.Uint32(header[13:]); rl != 3 {
		t.Fatalf("remark length %d, want 3", rl)
	}
	if el := binary.BigEndian.Uint32(header[20:]); el != 0 {
		t.Fatalf("extFields length %d, want 0", el)
	}
}

// TestDecodeClientJSONForms decodes headers in the shapes the stock clients
// write them (remoting-protocol.md §1.2).
func TestDecodeClientJSONForms(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   Command
	}{
		{
			name:   "Java request with serializeTypeCurrentRPC",
			header: `{"code":34,"flag":0,"language":"JAVA","opaque":42,"serializeTypeCurrentRPC":"JSON","version":409}`,
			want:   Command{Code: HeartBeat, Language: "JAVA", Version: 409, Opaque: 42},
		},
		{
			name:   "Java oneway with custom header",
			header: `{"code":15,"extFields":{"consumerGroup":"g","topic":"T","queueId":"1","commitOffset":"100"},"flag":2,"language":"JAVA","opaque":43,"serializeTypeCurrentRPC":"JSON","version":409}`,
			want: Command{Code: UpdateConsumerOffset, Language: "JAVA", Version: 409, Opaque: 43, Flag: FlagOneway,
				ExtFields: map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "commitOffset": "100"}},
		},
		{
			name:   "Java response with remark",
			header: `{"code":17,"flag":1,"language":"JAVA","opaque":44,"remark":"No topic route info in name server for the topic: T","serializeTypeCurrentRPC":"JSON","version":409}`,
			want: Command{Code: TopicNotExist, Language: "JAVA", Version: 409, Opaque: 44, Flag: FlagResponse,
				Remark: "No topic route info in name server for the topic: T"},
		},
		{
			name:   "Java header object with only null fields",
			header: `{"code":38,"extFields":{},"flag":0,"language":"JAVA","opaque":45,"serializeTypeCurrentRPC":"JSON","version":409}`,
			want:   Command{Code: GetConsumerListByGroup, Language: "JAVA", Version: 409, Opaque: 45, ExtFields: map[string]string{}},
		},
		{
			name:   "Go client request",
			header: `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`,
			want: Command{Code: GetRouteinfoByTopic, Language: "GO", Version: 317, Opaque: 1,
				ExtFields: map[string]string{"topic": "TopicTest"}},
		},
		{
			name:   "Go client request with null ext fields",
			header: `{"code":34,"language":"GO","version":317,"opaque":2,"flag":0,"remark":"","extFields":null}`,
			want:   Command{Code: HeartBeat, Language: "GO", Version: 317, Opaque: 2},
		},
		{
			name:   "Go client response to a server request",
			header: `{"code":0,"language":"GO","version":317,"opaque":-7,"flag":1,"remark":"","extFields":{}}`,
			want:   Command{Code: Success, Language: "GO", Version: 317, Opaque: -7, Flag: FlagResponse, ExtFields: map[string]string{}},
		},
		{
			name:   "escaped property separators",
			header: `{"code":10,"extFields":{"properties":"KEYS\u0001a\u0002TAGS\u0001b\u0002"},"flag":0,"language":"JAVA","opaque":3,"version":409}`,
			want: Command{Code: SendMessage, Language: "JAVA", Version: 409, Opaque: 3,
				ExtFields: map[string]string{"properties": "KEYS\x01a\x02TAGS\x01b\x02"}},
		},
		{
			name:   "null remark and unknown fields",
			header: `{"code":0,"flag":1,"language":"JAVA","opaque":4,"remark":null,"suspended":false,"version":479}`,
			want:   Command{Code: Success, Language: "JAVA", Version: 479, Opaque: 4, Flag: FlagResponse},
		},
		{
			name:   "whitespace between tokens",
			header: "{ \"code\" : 11 ,\n\t\"opaque\" : 5 }",
			want:   Command{Code: PullMessage, Opaque: 5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeWhole(t, frameOf(SerializeJSON, []byte(tc.header), []byte("B")))
			want := tc.want
			want.Body = []byte("B")
			if !sameCommand(got, &want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", got, &want)
			}
		})
	}
}

// TestDecodeErrors feeds DecodeFrame broken frames (without the length prefix).
func TestDecodeErrors(t *testing.T) {
	okBin := binHeader{code: 10, remarkLen: 0, extLen: 0}
	tests := []struct {
		name    string
		frame   []byte
		wantErr error
	}{
		{name: "empty", frame: nil, wantErr: ErrFrameTooShort},
		{name: "three bytes", frame: []byte{0, 0, 0}, wantErr: ErrFrameTooShort},
		{name: "header length beyond frame", frame: frameBytes(0, SerializeJSON, 10, []byte("{}"))[4:], wantErr: ErrBadHeaderLength},
		{name: "max header length", frame: frameBytes(0, SerializeRocketMQ, 0xFFFFFF, okBin.bytes())[4:], wantErr: ErrBadHeaderLength},
		{name: "serialize type 2", frame: frameBytes(0, 2, 2, []byte("{}"))[4:], wantErr: ErrBadSerializeType},
		{name: "serialize type 0xff", frame: frameBytes(0, 0xFF, 0, nil)[4:], wantErr: ErrBadSerializeType},
		{name: "empty JSON header", frame: frameOf(SerializeJSON, nil, nil)[4:], wantErr: ErrBadHeader},
		{name: "broken JSON", frame: frameOf(SerializeJSON, []byte(`{"code":`), nil)[4:], wantErr: ErrBadHeader},
		{name: "JSON trailing garbage", frame: frameOf(SerializeJSON, []byte(`{"code":1}x`), nil)[4:], wantErr: ErrBadHeader},
		{name: "JSON number ext value", frame: frameOf(SerializeJSON, []byte(`{"code":1,"extFields":{"a":1}}`), nil)[4:], wantErr: ErrBadHeader},
		{name: "JSON code over int32", frame: frameOf(SerializeJSON, []byte(`{"code":2147483648}`), nil)[4:], wantErr: ErrBadHeader},
		{name: "JSON string code", frame: frameOf(SerializeJSON, []byte(`{"code":"10"}`), nil)[4:], wantErr: ErrBadHeader},
		{name: "binary header of 20 bytes", frame: frameOf(SerializeRocketMQ, okBin.bytes()[:20], nil)[4:], wantErr: ErrBadHeader},
		{
			name:    "binary negative remark length",
			frame:   frameOf(SerializeRocketMQ, binHeader{remarkLen: -1}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary remark longer than header",
			frame:   frameOf(SerializeRocketMQ, binHeader{remarkLen: 5, remark: []byte("abc")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary remark eats the ext length",
			frame:   frameOf(SerializeRocketMQ, binHeader{remarkLen: 6, remark: []byte("ab")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary negative ext length",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: -8}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary ext length beyond header",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 100, ext: extEntry(1, "a", 1, "b")}.bytes(), []byte("body bytes do not count"))[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary negative key length",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 8, ext: extEntry(-1, "a", 1, "b")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary key longer than ext block",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 8, ext: extEntry(200, "a", 1, "b")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary negative value length",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 8, ext: extEntry(1, "a", -1, "b")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary value longer than ext block",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 8, ext: extEntry(1, "a", math.MaxInt32, "b")}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary truncated key length",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 9, ext: append(extEntry(1, "a", 1, "b"), 0)}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
		{
			name:    "binary truncated value length",
			frame:   frameOf(SerializeRocketMQ, binHeader{extLen: 5, ext: []byte{0, 1, 'a', 0, 0}}.bytes(), nil)[4:],
			wantErr: ErrBadHeader,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := DecodeFrame(tc.frame)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("DecodeFrame = %v, %v; want error %v", cmd, err, tc.wantErr)
			}
		})
	}
}

func TestFrameLength(t *testing.T) {
	tests := []struct {
		name    string
		prefix  int32
		want    int
		wantErr error
	}{
		{name: "negative", prefix: -1, wantErr: ErrFrameTooShort},
		{name: "min int32", prefix: math.MinInt32, wantErr: ErrFrameTooShort},
		{name: "zero", prefix: 0, wantErr: ErrFrameTooShort},
		{name: "three", prefix: 3, wantErr: ErrFrameTooShort},
		{name: "header word only", prefix: 4, want: 4},
		{name: "exactly 16 MiB with the prefix", prefix: MaxFrameSize - 4, want: MaxFrameSize - 4},
		{name: "one byte over 16 MiB", prefix: MaxFrameSize - 3, wantErr: ErrFrameTooLarge},
		{name: "max int32", prefix: math.MaxInt32, wantErr: ErrFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := FrameLength(binary.BigEndian.AppendUint32(nil, uint32(tc.prefix)))
			if !errors.Is(err, tc.wantErr) || n != tc.want {
				t.Fatalf("FrameLength(%d) = %d, %v; want %d, %v", tc.prefix, n, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestBinaryTrailingHeaderBytes: Java reads the binary header field by field
// and ignores bytes after the ext block; so do we.
func TestBinaryTrailingHeaderBytes(t *testing.T) {
	header := append(binHeader{code: 34, opaque: 8, extLen: 7, ext: extEntry(1, "a", 0, "")}.bytes(), "junk"...)
	got := decodeWhole(t, frameOf(SerializeRocketMQ, header, []byte("body")))
	want := &Command{Code: 34, Language: "JAVA", Opaque: 8, ExtFields: map[string]string{"a": ""},
		Body: []byte("body"), SerializeType: SerializeRocketMQ}
	if !sameCommand(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

func TestBinaryDuplicateKeyLastWins(t *testing.T) {
	ext := append(extEntry(1, "k", 1, "1"), extEntry(1, "k", 1, "2")...)
	got := decodeWhole(t, frameOf(SerializeRocketMQ, binHeader{extLen: int32(len(ext)), ext: ext}.bytes(), nil))
	if !reflect.DeepEqual(got.ExtFields, map[string]string{"k": "2"}) {
		t.Fatalf("ext = %v, want k=2", got.ExtFields)
	}
}

func TestDecodeCopiesBody(t *testing.T) {
	frame := EncodeFrame(&Command{Code: 1, Language: "GO", Body: []byte("hello")})
	cmd := decodeWhole(t, frame)
	for i := range frame {
		frame[i] = 0
	}
	if string(cmd.Body) != "hello" {
		t.Fatalf("body aliases the frame: %q", cmd.Body)
	}
}

func TestAppendFrameAppends(t *testing.T) {
	first := &Command{Code: 1, Language: "GO", Opaque: 1, Body: []byte("one")}
	second := &Command{Code: 2, Language: "JAVA", Opaque: 2, Remark: "r", SerializeType: SerializeRocketMQ}
	stream := AppendFrame(AppendFrame([]byte("prefix"), first), second)
	if !bytes.HasPrefix(stream, []byte("prefix")) {
		t.Fatalf("AppendFrame clobbered dst: %q", stream[:6])
	}
	rest := stream[6:]
	for _, want := range []*Command{first, second} {
		n, err := FrameLength(rest[:4])
		if err != nil {
			t.Fatal(err)
		}
		got := decodeWhole(t, rest[:4+n])
		if !sameCommand(got, want) {
			t.Fatalf("decoded %+v, want %+v", got, want)
		}
		rest = rest[4+n:]
	}
	if len(rest) != 0 {
		t.Fatalf("%d stray bytes after two frames", len(rest))
	}
}

func TestValidUTF8(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "valid stays", in: "abc 😀", want: "abc 😀"},
		{name: "one bad byte", in: "a\xffb", want: "a\ufffdb"},
		{name: "each bad byte replaced", in: "\xf0\x9f\x98", want: "\ufffd\ufffd\ufffd"},
		{name: "surrogate encoding", in: "\xed\xa0\x80", want: "\ufffd\ufffd\ufffd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := validUTF8(tc.in); got != tc.want {
				t.Fatalf("validUTF8(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
