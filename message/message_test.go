package message

import (
	"bytes"
	"compress/zlib"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

func TestMessageIDIPv6Loopback(t *testing.T) {
	host := netip.MustParseAddrPort("[::1]:10911")
	const want = "0000000000000000000000000000000100002A9F0000000000000001"
	if id := CreateMessageID(host, 1); id != want {
		t.Fatalf("CreateMessageID = %s, want %s", id, want)
	}
	if h, off, err := DecodeMessageID(strings.ToLower(want)); err != nil || h != host || off != 1 {
		t.Fatalf("DecodeMessageID = %v %d %v", h, off, err)
	}
}

func TestParseLayoutPositions(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		m := sampleExt()
		shift := 0
		if v6 {
			m.BornHost = netip.MustParseAddrPort("[2001:db8::9]:7")
			shift = 12
		}
		rec := EncodeRecord(nil, m)
		l, err := ParseLayout(append(rec, "trailing bytes"...))
		if err != nil {
			t.Fatalf("v6=%v: ParseLayout: %v", v6, err)
		}
		if l.Total != len(rec) || l.StoreTimestampPos != 56+shift || l.StoreHostPos != 64+shift || l.ReconsumeTimesPos != 72+shift || l.BodyPos != 88+shift {
			t.Fatalf("v6=%v: layout %+v", v6, l)
		}
		if l.Topic(rec) != m.Topic || !bytes.Equal(l.Body(rec), m.Body) || l.StoreTimestamp(rec) != m.StoreTimestamp {
			t.Fatalf("v6=%v: topic %q body %q store ts %d", v6, l.Topic(rec), l.Body(rec), l.StoreTimestamp(rec))
		}
		if got := ParseProperties(string(l.Props(rec))); !maps.Equal(got, m.Properties) {
			t.Fatalf("v6=%v: properties %v", v6, got)
		}
		if text, err := PropertiesText(rec); err != nil || text != MarshalProperties(m.Properties) {
			t.Fatalf("v6=%v: PropertiesText = %q, %v", v6, text, err)
		}
		if b := l.Body(rec); cap(b) != len(b) {
			t.Fatalf("v6=%v: body capacity %d not clipped to %d", v6, cap(b), len(b))
		}
	}
}

func TestRecordEncodeMatchesEncodeRecord(t *testing.T) {
	m := sampleExt()
	r := Record{
		Topic: m.Topic, Properties: MarshalProperties(m.Properties), Body: m.Body, BodyCRC: BodyCRC(m.Body),
		QueueID: m.QueueID, Flag: m.Flag, SysFlag: m.SysFlag, ReconsumeTimes: m.ReconsumeTimes,
		QueueOffset: m.QueueOffset, PhysicalOffset: m.PhysicalOffset, BornTimestamp: m.BornTimestamp,
		StoreTimestamp: m.StoreTimestamp, PreparedTransactionOffset: m.PreparedTransactionOffset,
		BornHost: m.BornHost, StoreHost: m.StoreHost,
	}
	b := make([]byte, r.Size())
	r.Encode(b)
	if want := EncodeRecord(nil, m); !bytes.Equal(b, want) {
		t.Fatalf("Record.Encode differs from EncodeRecord")
	}
}

func TestEncodeRecordRawProperties(t *testing.T) {
	m := sampleExt()
	m.Properties, m.RawProperties = nil, "B\x012\x02A\x011\x02"
	out, err := DecodeRecord(EncodeRecord(nil, m))
	if err != nil {
		t.Fatalf("DecodeRecord: %v", err)
	}
	if want := map[string]string{"A": "1", "B": "2"}; !maps.Equal(out.Properties, want) {
		t.Fatalf("properties %v, want %v", out.Properties, want)
	}
}

func TestInflateBody(t *testing.T) {
	plain := []byte(strings.Repeat("z", 5000))
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, 5)
	zw.Write(plain)
	zw.Close()
	z := buf.Bytes()
	tests := []struct {
		name    string
		sysFlag int32
		body    []byte
		want    []byte
		wantOK  bool
	}{
		{name: "java zlib", sysFlag: SysFlagCompressed | CompressionZlib, body: z, want: plain, wantOK: true},
		{name: "type bits 0 mean zlib", sysFlag: SysFlagCompressed, body: z, want: plain, wantOK: true},
		{name: "not compressed", sysFlag: CompressionZlib, body: z, want: z},
		{name: "lz4 left alone", sysFlag: SysFlagCompressed | CompressionLZ4, body: z, want: z},
		{name: "zstd left alone", sysFlag: SysFlagCompressed | CompressionZstd, body: z, want: z},
		{name: "not zlib data", sysFlag: SysFlagCompressed, body: []byte("raw"), want: []byte("raw")},
		{name: "truncated zlib data", sysFlag: SysFlagCompressed, body: z[:len(z)/2], want: z[:len(z)/2]},
	}
	for _, tt := range tests {
		got, ok := InflateBody(tt.sysFlag, tt.body)
		if ok != tt.wantOK || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: InflateBody = %d bytes, %v; want %d bytes, %v", tt.name, len(got), ok, len(tt.want), tt.wantOK)
		}
	}
}

func TestTransactionType(t *testing.T) {
	for _, tt := range []struct{ flag, want int32 }{
		{0, TransactionNotType}, {SysFlagCompressed | TransactionPreparedType, TransactionPreparedType},
		{TransactionCommitType | SysFlagBornHostV6, TransactionCommitType}, {-1, TransactionRollbackType},
	} {
		if got := TransactionType(tt.flag); got != tt.want {
			t.Errorf("TransactionType(%#x) = %#x, want %#x", tt.flag, got, tt.want)
		}
	}
}

func TestTopicNames(t *testing.T) {
	if RetryTopic("G") != "%RETRY%G" || DLQTopic("G") != "%DLQ%G" || ReplyTopic("DefaultCluster") != "DefaultCluster_REPLY_TOPIC" {
		t.Errorf("RetryTopic/DLQTopic/ReplyTopic = %s %s %s", RetryTopic("G"), DLQTopic("G"), ReplyTopic("DefaultCluster"))
	}
	if TopicWheelTimer != "rmq_sys_wheel_timer" {
		t.Errorf("TopicWheelTimer = %s", TopicWheelTimer)
	}
	tests := []struct {
		topic        string
		retry, dlq   bool
		group        string
		groupFromTop bool
	}{
		{topic: "%RETRY%G1", retry: true, group: "G1", groupFromTop: true},
		{topic: "%DLQ%G1", dlq: true},
		{topic: "T%RETRY%G1"},
		{topic: "%RETRY%", retry: true, group: "", groupFromTop: true},
		{topic: "TopicTest"},
	}
	for _, tt := range tests {
		g, ok := RetryTopicGroup(tt.topic)
		if IsRetryTopic(tt.topic) != tt.retry || IsDLQTopic(tt.topic) != tt.dlq || g != tt.group || ok != tt.groupFromTop {
			t.Errorf("%q: IsRetryTopic %v IsDLQTopic %v RetryTopicGroup %q,%v", tt.topic, IsRetryTopic(tt.topic), IsDLQTopic(tt.topic), g, ok)
		}
	}
}

// FuzzParseProperties checks the three readers of the properties text
// against each other, and that marshalling what was read reads back the same.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"", "A\x011\x02B\x012", "A\x011\x02B\x012\x02", "A\x01\x02B\x012", "\x01x\x02B\x012", "junk\x02B\x012",
		"A\x01x\x01y", "A\x011\x02A\x012", "\x02\x02A\x011\x02\x02", "\x01", "k\x01v", "TAGS\x01标签",
		"KEYS\x01k1 k2\x02TAGS\x01t\x02WAIT\x01true", "UNIQ_KEY\x01ABC\x02TAGS\x01a\x02KEYS\x01k1 k2",
	} {
		f.Add(s, "A")
	}
	f.Fuzz(func(t *testing.T, s, key string) {
		m := ParseProperties(s)
		for k, v := range m {
			if k == "" || v == "" || strings.ContainsAny(k, "\x01\x02") || strings.Contains(v, "\x02") {
				t.Fatalf("ParseProperties(%q) kept pair %q=%q", s, k, v)
			}
			if got, ok := Props(s).Lookup(k); !ok || got != v {
				t.Fatalf("Props(%q).Lookup(%q) = %q,%v want %q", s, k, got, ok, v)
			}
		}
		if got, ok := Props(s).Lookup(key); got != m[key] || ok != (m[key] != "") {
			t.Fatalf("Props(%q).Lookup(%q) = %q,%v want %q", s, key, got, ok, m[key])
		}
		if back := ParseProperties(MarshalProperties(m)); !maps.Equal(back, m) {
			t.Fatalf("round trip of %q: %q, want %q", s, back, m)
		}
		edited := ParseProperties(EditProperties(s, []string{key}))
		want := maps.Clone(m)
		delete(want, key)
		if !maps.Equal(edited, want) {
			t.Fatalf("EditProperties(%q, drop %q) reads as %q, want %q", s, key, edited, want)
		}
	})
}
