package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestTagsHashMatchesJavaStringHashCode(t *testing.T) {
	tests := []struct {
		tag  string
		want int64
	}{
		{tag: "", want: 0},
		{tag: "hello", want: 99162322},
		{tag: "TagA", want: 2598919},
		{tag: "TagA||TagB", want: 1789476431},
		{tag: "中文标签", want: 622041809},
		{tag: "emoji-\U0001F600", want: 1164511306}, // surrogate pair
		{tag: strings.Repeat("a", 40), want: 1042809472},
	}
	for _, tt := range tests {
		if got := TagsHash(tt.tag); got != tt.want {
			t.Errorf("TagsHash(%q) = %d, want %d", tt.tag, got, tt.want)
		}
		// HashAppend continues a hash: any split at a rune boundary gives
		// the hash of the whole (grpcapi's FIFO queue pick and the index
		// file's topic#key hash rely on it).
		for i := range tt.tag {
			if got := HashAppend(HashAppend(0, tt.tag[:i]), tt.tag[i:]); int64(got) != tt.want {
				t.Errorf("HashAppend split at %d of %q = %d, want %d", i, tt.tag, got, tt.want)
			}
		}
	}
}

func TestParsePropertiesJavaRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "java form without trailing separator", in: "A\x011\x02B\x012", want: map[string]string{"A": "1", "B": "2"}},
		{name: "go form with trailing separator", in: "A\x011\x02B\x012\x02", want: map[string]string{"A": "1", "B": "2"}},
		{name: "empty value dropped", in: "A\x01\x02B\x012", want: map[string]string{"B": "2"}},
		{name: "empty name dropped", in: "\x01x\x02B\x012", want: map[string]string{"B": "2"}},
		{name: "segment without separator dropped", in: "junk\x02B\x012", want: map[string]string{"B": "2"}},
		{name: "value keeps later name-value separators", in: "A\x01x\x01y", want: map[string]string{"A": "x\x01y"}},
		{name: "later duplicate wins", in: "A\x011\x02A\x012", want: map[string]string{"A": "2"}},
		{name: "empty segments", in: "\x02\x02A\x011\x02\x02", want: map[string]string{"A": "1"}},
		{name: "separator only", in: "\x01", want: map[string]string{}},
		{name: "shortest pair", in: "k\x01v", want: map[string]string{"k": "v"}},
		{name: "utf8", in: "TAGS\x01标签", want: map[string]string{"TAGS": "标签"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseProperties(tt.in)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("ParseProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, key := range []string{"A", "B", "k", "TAGS", "missing"} {
				v, ok := Props(tt.in).Lookup(key)
				if wv, wok := tt.want[key]; v != wv || ok != wok {
					t.Fatalf("Props(%q).Lookup(%q) = %q,%v want %q,%v", tt.in, key, v, ok, wv, wok)
				}
				if Props(tt.in).Get(key) != v {
					t.Fatalf("Props(%q).Get(%q) = %q, want %q", tt.in, key, Props(tt.in).Get(key), v)
				}
			}
		})
	}
}

func TestMarshalProperties(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]string
		want string
	}{
		{name: "nil", in: nil, want: ""},
		{name: "one", in: map[string]string{"TAGS": "a"}, want: "TAGS\x01a"},
		{name: "sorted, no trailing separator", in: map[string]string{"WAIT": "true", "KEYS": "k1 k2", "TAGS": "t"}, want: "KEYS\x01k1 k2\x02TAGS\x01t\x02WAIT\x01true"},
		{name: "many keys beyond the stack buffer", in: manyProps(20), want: MarshalProperties(manyProps(20))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarshalProperties(tt.in)
			if got != tt.want {
				t.Fatalf("MarshalProperties = %q, want %q", got, tt.want)
			}
			if back := ParseProperties(got); !maps.Equal(back, tt.in) && len(tt.in) > 0 {
				t.Fatalf("round trip = %q, want %q", back, tt.in)
			}
		})
	}
}

func manyProps(n int) map[string]string {
	m := make(map[string]string)
	for i := 0; i < n; i++ {
		m[string(rune('a'+i))+"key"] = strings.Repeat("v", i+1)
	}
	return m
}

func TestMessageIDEncodeDecode(t *testing.T) {
	tests := []struct {
		name string
		host netip.AddrPort
		off  int64
		want string
	}{
		{name: "ipv4", host: netip.MustParseAddrPort("127.0.0.1:10911"), off: 0x1234, want: "7F00000100002A9F0000000000001234"},
		{name: "ipv4 zero", host: netip.MustParseAddrPort("0.0.0.0:0"), off: 0, want: "00000000000000000000000000000000"},
		{name: "ipv4 mapped in ipv6 is ipv4", host: netip.MustParseAddrPort("[::ffff:10.1.2.3]:80"), off: 1 << 40, want: "0A01020300000050" + "0000010000000000"},
		{name: "ipv6", host: netip.MustParseAddrPort("[2001:db8::1]:10911"), off: 7, want: "20010DB8000000000000000000000001" + "00002A9F" + "0000000000000007"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := CreateMessageID(tt.host, tt.off)
			if id != tt.want {
				t.Fatalf("CreateMessageID = %s, want %s", id, tt.want)
			}
			for _, in := range []string{id, strings.ToLower(id)} {
				host, off, err := DecodeMessageID(in)
				if err != nil {
					t.Fatalf("DecodeMessageID(%s): %v", in, err)
				}
				wantHost := netip.AddrPortFrom(tt.host.Addr().Unmap(), tt.host.Port())
				if host != wantHost || off != tt.off {
					t.Fatalf("DecodeMessageID(%s) = %s %d, want %s %d", in, host, off, wantHost, tt.off)
				}
			}
		})
	}
	bad := []struct {
		name string
		id   string
	}{
		{name: "empty", id: ""},
		{name: "short", id: "7F00000100002A9F00000000000012"},
		{name: "not hex", id: "ZZ00000100002A9F0000000000001234"},
		{name: "port out of range", id: "7F00000100012A9F0000000000001234"},
		{name: "uniq key length", id: "7F0000010000000000000000000000000000"},
	}
	for _, tt := range bad {
		if _, _, err := DecodeMessageID(tt.id); !errors.Is(err, ErrBadMessageID) {
			t.Errorf("%s: DecodeMessageID(%q) err = %v, want ErrBadMessageID", tt.name, tt.id, err)
		}
	}
}

func sampleExt() *MessageExt {
	return &MessageExt{
		Message: Message{
			Topic: "TopicTest", QueueID: 3, Flag: 7, Body: []byte("hello body"),
			Properties:    map[string]string{"TAGS": "TagA", "UNIQ_KEY": "ABC", "KEYS": "k1 k2"},
			SysFlag:       TransactionCommitType | SysFlagCompressed,
			BornTimestamp: 1700000000123, BornHost: testBornHost,
			ReconsumeTimes: 2, PreparedTransactionOffset: 4242,
		},
		QueueOffset: 17, PhysicalOffset: 123456, StoreTimestamp: 1700000000456, StoreHost: testStoreHost,
	}
}

func TestRecordRoundTrip(t *testing.T) {
	v6 := netip.MustParseAddrPort("[2001:db8::5]:1234")
	tests := []struct {
		name     string
		mutate   func(m *MessageExt)
		wantSize int
		wantV2   bool
	}{
		{name: "ipv4", mutate: func(*MessageExt) {}, wantSize: 91 + 10 + 9 + len(MarshalProperties(sampleExt().Properties))},
		{name: "empty body and properties", mutate: func(m *MessageExt) { m.Body, m.Properties = nil, nil }, wantSize: 91 + 9},
		{name: "ipv6 born host", mutate: func(m *MessageExt) { m.BornHost = v6 }, wantSize: 91 + 12 + 10 + 9 + len(MarshalProperties(sampleExt().Properties))},
		{name: "ipv6 store host", mutate: func(m *MessageExt) { m.StoreHost = v6 }, wantSize: 91 + 12 + 10 + 9 + len(MarshalProperties(sampleExt().Properties))},
		{name: "long topic becomes v2", mutate: func(m *MessageExt) { m.Topic = strings.Repeat("T", 200) }, wantSize: 92 + 10 + 200 + len(MarshalProperties(sampleExt().Properties)), wantV2: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := sampleExt()
			tt.mutate(in)
			rec := EncodeRecord([]byte("prefix"), in)
			if string(rec[:6]) != "prefix" {
				t.Fatalf("EncodeRecord clobbered dst")
			}
			rec = rec[6:]
			if len(rec) != tt.wantSize {
				t.Fatalf("record size %d, want %d", len(rec), tt.wantSize)
			}
			magic := binary.BigEndian.Uint32(rec[4:])
			if (magic == MagicCodeV2) != tt.wantV2 {
				t.Fatalf("magic %#x, want v2=%v", magic, tt.wantV2)
			}
			out, err := DecodeRecord(rec)
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			want := *in
			want.BodyCRC = BodyCRC(in.Body)
			want.StoreSize = int32(len(rec))
			want.SysFlag = in.SysFlag
			if HostIsV6(in.BornHost) {
				want.SysFlag |= SysFlagBornHostV6
			}
			if HostIsV6(in.StoreHost) {
				want.SysFlag |= SysFlagStoreHostV6
			}
			want.MsgID = CreateMessageID(in.StoreHost, in.PhysicalOffset)
			if want.Properties == nil {
				want.Properties = map[string]string{}
			}
			if !bytes.Equal(out.Body, want.Body) || !maps.Equal(out.Properties, want.Properties) {
				t.Fatalf("body/properties: got %q %q", out.Body, out.Properties)
			}
			if again := EncodeRecord(nil, out); !bytes.Equal(again, rec) {
				t.Fatalf("re-encoding the decoded record changed it")
			}
			out.Body, want.Body = nil, nil
			out.Properties, want.Properties = nil, nil
			if !reflect.DeepEqual(*out, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", *out, want)
			}
		})
	}
}

func TestRecordFieldOffsetsMatchJava(t *testing.T) {
	m := sampleExt()
	rec := EncodeRecord(nil, m)
	be := binary.BigEndian
	checks := []struct {
		name string
		got  int64
		want int64
	}{
		{name: "TOTALSIZE", got: int64(be.Uint32(rec[0:])), want: int64(len(rec))},
		{name: "MAGICCODE", got: int64(int32(be.Uint32(rec[4:]))), want: -626843481},
		{name: "BODYCRC", got: int64(be.Uint32(rec[8:])), want: int64(BodyCRC(m.Body))},
		{name: "QUEUEID", got: int64(be.Uint32(rec[12:])), want: 3},
		{name: "FLAG", got: int64(be.Uint32(rec[16:])), want: 7},
		{name: "QUEUEOFFSET", got: int64(be.Uint64(rec[20:])), want: 17},
		{name: "PHYSICALOFFSET", got: int64(be.Uint64(rec[28:])), want: 123456},
		{name: "SYSFLAG", got: int64(be.Uint32(rec[36:])), want: 9},
		{name: "BORNTIMESTAMP", got: int64(be.Uint64(rec[40:])), want: 1700000000123},
		{name: "BORNHOST ip", got: int64(be.Uint32(rec[48:])), want: 0x0A000007},
		{name: "BORNHOST port", got: int64(be.Uint32(rec[52:])), want: 53211},
		{name: "STORETIMESTAMP", got: int64(be.Uint64(rec[56:])), want: 1700000000456},
		{name: "STOREHOST ip", got: int64(be.Uint32(rec[64:])), want: 0x7F000001},
		{name: "STOREHOST port", got: int64(be.Uint32(rec[68:])), want: 10911},
		{name: "RECONSUMETIMES", got: int64(be.Uint32(rec[72:])), want: 2},
		{name: "PREPARED_TX_OFFSET", got: int64(be.Uint64(rec[76:])), want: 4242},
		{name: "BODY length", got: int64(be.Uint32(rec[84:])), want: 10},
		{name: "TOPIC length", got: int64(rec[98]), want: 9},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if crc := BodyCRC([]byte("123456789")); crc != 0xCBF43926&0x7FFFFFFF {
		t.Errorf("BodyCRC check value = %#x", crc)
	}
}

func TestDecodeRecordRejectsMalformed(t *testing.T) {
	good := EncodeRecord(nil, sampleExt())
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
	}{
		{name: "empty", mutate: func([]byte) []byte { return nil }},
		{name: "truncated", mutate: func(b []byte) []byte { return b[:len(b)-1] }},
		{name: "header only", mutate: func(b []byte) []byte { return b[:8] }},
		{name: "bad magic", mutate: func(b []byte) []byte { b[4] ^= 0xFF; return b }},
		{name: "blank magic", mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 0xCBD43194); return b }},
		{name: "size too small", mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b, 50); return b }},
		{name: "negative size", mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b, 0xFFFFFFF0); return b }},
		{name: "body length beyond record", mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b[84:], 1<<20); return b }},
		{name: "negative body length", mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b[84:], 0xFFFFFFFF); return b }},
		{name: "topic length beyond record", mutate: func(b []byte) []byte { b[98] = 120; return b }},
		{name: "properties length mismatch", mutate: func(b []byte) []byte { b[len(b)-len(MarshalProperties(sampleExt().Properties))-1]++; return b }},
		{name: "size shorter than fields", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b, uint32(len(b)-3))
			return b
		}},
		{name: "ipv6 flag on ipv4 record", mutate: func(b []byte) []byte { b[39] |= byte(SysFlagStoreHostV6); return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.mutate(append([]byte(nil), good...))
			if _, err := DecodeRecord(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeRecord err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestDecodeRecords(t *testing.T) {
	var buf []byte
	for i := 0; i < 5; i++ {
		m := sampleExt()
		m.QueueOffset = int64(i)
		m.Body = bytes.Repeat([]byte{byte('a' + i)}, i*10)
		buf = EncodeRecord(buf, m)
	}
	msgs, err := DecodeRecords(buf)
	if err != nil || len(msgs) != 5 {
		t.Fatalf("DecodeRecords = %d, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.QueueOffset != int64(i) || len(m.Body) != i*10 {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	if _, err := DecodeRecords(buf[:len(buf)-2]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated DecodeRecords err = %v", err)
	}
	if msgs, err := DecodeRecords(nil); err != nil || len(msgs) != 0 {
		t.Fatalf("DecodeRecords(nil) = %v, %v", msgs, err)
	}
}

// encodeBatchEntry builds one SEND_BATCH_MESSAGE entry the way the Go client does.
func encodeBatchEntry(flag int32, body []byte, props string) []byte {
	total := 22 + len(body) + len(props)
	b := make([]byte, total)
	be := binary.BigEndian
	be.PutUint32(b, uint32(total))
	be.PutUint32(b[12:], uint32(flag))
	be.PutUint32(b[16:], uint32(len(body)))
	copy(b[20:], body)
	be.PutUint16(b[20+len(body):], uint16(len(props)))
	copy(b[22+len(body):], props)
	return b
}

func TestDecodeBatchBody(t *testing.T) {
	var body []byte
	body = append(body, encodeBatchEntry(1, []byte("first"), "TAGS\x01a\x02UNIQ_KEY\x01u1\x02")...)
	body = append(body, encodeBatchEntry(0, nil, "")...)
	body = append(body, encodeBatchEntry(9, []byte("third"), "KEYS\x01k")...)
	entries, err := DecodeBatchBody(body)
	if err != nil {
		t.Fatalf("DecodeBatchBody: %v", err)
	}
	want := []BatchEntry{
		{Flag: 1, Body: []byte("first"), Properties: map[string]string{"TAGS": "a", "UNIQ_KEY": "u1"}},
		{Flag: 0, Body: []byte{}, Properties: map[string]string{}},
		{Flag: 9, Body: []byte("third"), Properties: map[string]string{"KEYS": "k"}},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries", len(entries))
	}
	for i := range want {
		if entries[i].Flag != want[i].Flag || !bytes.Equal(entries[i].Body, want[i].Body) || !maps.Equal(entries[i].Properties, want[i].Properties) {
			t.Fatalf("entry %d = %+v, want %+v", i, entries[i], want[i])
		}
	}

	one := encodeBatchEntry(0, []byte("body"), "A\x01b")
	be := binary.BigEndian
	malformed := []struct {
		name string
		body []byte
	}{
		{name: "empty", body: nil},
		{name: "shorter than an entry header", body: one[:10]},
		{name: "truncated entry", body: one[:len(one)-1]},
		{name: "trailing bytes", body: append(append([]byte(nil), one...), 0, 0, 0)},
		{name: "size below header", body: func() []byte { b := append([]byte(nil), one...); be.PutUint32(b, 21); return b }()},
		{name: "negative size", body: func() []byte { b := append([]byte(nil), one...); be.PutUint32(b, 0x80000000); return b }()},
		{name: "size beyond body", body: func() []byte { b := append([]byte(nil), one...); be.PutUint32(b, uint32(len(b)+1)); return b }()},
		{name: "negative body length", body: func() []byte { b := append([]byte(nil), one...); be.PutUint32(b[16:], 0xFFFFFFFF); return b }()},
		{name: "body length beyond entry", body: func() []byte { b := append([]byte(nil), one...); be.PutUint32(b[16:], 100); return b }()},
		{name: "properties length beyond entry", body: func() []byte { b := append([]byte(nil), one...); be.PutUint16(b[24:], 99); return b }()},
		{name: "negative properties length", body: func() []byte { b := append([]byte(nil), one...); be.PutUint16(b[24:], 0x8001); return b }()},
		{name: "size larger than parts", body: func() []byte {
			b := append(append([]byte(nil), one...), 'x')
			be.PutUint32(b, uint32(len(b)))
			return b
		}()},
	}
	for _, tt := range malformed {
		if _, err := DecodeBatchBody(tt.body); !errors.Is(err, ErrBadBatchBody) {
			t.Errorf("%s: err = %v, want ErrBadBatchBody", tt.name, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	good := EncodeRecord(nil, sampleExt())
	f.Add(good)
	f.Add(good[:40])
	f.Add(append(append([]byte(nil), good...), good...))
	m6 := sampleExt()
	m6.BornHost = netip.MustParseAddrPort("[::1]:1")
	f.Add(EncodeRecord(nil, m6))
	f.Add([]byte{0, 0, 0, 8, 0xCB, 0xD4, 0x31, 0x94})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeRecord(b); err == nil {
			if int(m.StoreSize) > len(b) || len(m.Body) > len(b) {
				t.Fatalf("decoded sizes exceed input: %d %d > %d", m.StoreSize, len(m.Body), len(b))
			}
			if _, err := DecodeRecord(EncodeRecord(nil, m)); err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
		}
		if msgs, err := DecodeRecords(b); err == nil {
			n := 0
			for _, m := range msgs {
				n += int(m.StoreSize)
			}
			if n != len(b) {
				t.Fatalf("DecodeRecords covered %d of %d bytes", n, len(b))
			}
		}
	})
}

func FuzzDecodeBatchBody(f *testing.F) {
	f.Add(encodeBatchEntry(1, []byte("x"), "A\x01b"))
	f.Add(append(encodeBatchEntry(0, nil, ""), encodeBatchEntry(2, []byte("yy"), "K\x01v\x02")...))
	f.Add([]byte{0, 0, 0, 22})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeBatchBody(b)
		if err != nil {
			return
		}
		n := 0
		for _, e := range entries {
			n += 22 + len(e.Body)
		}
		if n > len(b) || len(entries) == 0 {
			t.Fatalf("%d entries covering %d of %d bytes", len(entries), n, len(b))
		}
	})
}

func TestEditProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		drop []string
		set  [][2]string
		want string
	}{
		{name: "append", in: "A\x011\x02B\x012", set: [][2]string{{"C", "3"}}, want: "A\x011\x02B\x012\x02C\x013"},
		{name: "replace", in: "A\x011\x02B\x012\x02", drop: []string{"A"}, set: [][2]string{{"A", "9"}}, want: "B\x012\x02A\x019"},
		{name: "drop every duplicate", in: "A\x011\x02B\x012\x02A\x013", drop: []string{"A"}, want: "B\x012"},
		{name: "malformed pairs dropped", in: "junk\x02\x01x\x02A\x01\x02B\x012", want: "B\x012"},
		{name: "empty text", in: "", set: [][2]string{{"K", "v"}}, want: "K\x01v"},
		{name: "nothing", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EditProperties(tt.in, tt.drop, tt.set...)
			if got != tt.want {
				t.Fatalf("EditProperties = %q, want %q", got, tt.want)
			}
			want := ParseProperties(tt.in)
			for _, k := range tt.drop {
				delete(want, k)
			}
			for _, kv := range tt.set {
				want[kv[0]] = kv[1]
			}
			if !maps.Equal(ParseProperties(got), want) {
				t.Fatalf("reads as %v, want %v", ParseProperties(got), want)
			}
		})
	}
}
