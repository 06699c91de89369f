package admin

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

func TestDecodeMessages(t *testing.T) {
	store := netip.MustParseAddrPort("127.0.0.1:10911")
	born := netip.MustParseAddrPort("10.1.2.3:50000")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	tests := []struct {
		name     string
		rec      testRecord
		wantBody string
		wantID   string // MsgID
	}{
		{
			name:     "v1 with uniq key",
			rec:      testRecord{topic: "T", queueID: 2, queueOff: 5, phyOff: 1234, body: []byte("hello"), props: map[string]string{"UNIQ_KEY": "ABC", "TAGS": "a", "KEYS": "k1 k2"}, storeHost: store, bornHost: born, bornTs: 1, storeTs: 2},
			wantBody: "hello", wantID: "ABC",
		},
		{
			name:     "no uniq key falls back to offset id",
			rec:      testRecord{topic: "T", phyOff: 99, body: []byte("x"), storeHost: store, bornHost: born},
			wantBody: "x", wantID: message.CreateMessageID(store, 99),
		},
		{
			name:     "zlib body inflated",
			rec:      testRecord{topic: "T", body: []byte(strings.Repeat("z", 5000)), compressed: true, storeHost: store, bornHost: born},
			wantBody: strings.Repeat("z", 5000), wantID: message.CreateMessageID(store, 0),
		},
		{
			name:     "v2 magic, long topic",
			rec:      testRecord{topic: strings.Repeat("t", 200), magicV2: true, body: []byte("b"), storeHost: store, bornHost: born},
			wantBody: "b", wantID: message.CreateMessageID(store, 0),
		},
		{
			name:     "IPv6 hosts",
			rec:      testRecord{topic: "T", phyOff: 7, body: []byte("6"), storeHost: v6, bornHost: v6},
			wantBody: "6", wantID: message.CreateMessageID(v6, 7),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodeRecord(tt.rec)
			msgs, err := DecodeMessages(append(raw, raw...))
			if err != nil {
				t.Fatalf("DecodeMessages: %v", err)
			}
			if len(msgs) != 2 {
				t.Fatalf("got %d messages, want 2", len(msgs))
			}
			m := msgs[0]
			if string(m.Body) != tt.wantBody || m.MsgID != tt.wantID || m.Topic != tt.rec.topic ||
				m.QueueID != tt.rec.queueID || m.QueueOffset != tt.rec.queueOff || m.CommitLogOffset != tt.rec.phyOff ||
				m.StoreHost != tt.rec.storeHost || m.BornHost != tt.rec.bornHost || m.StoreSize != int32(len(raw)) {
				t.Errorf("decoded %+v", m)
			}
			if m.OffsetMsgID != message.CreateMessageID(tt.rec.storeHost, tt.rec.phyOff) {
				t.Errorf("OffsetMsgID = %s", m.OffsetMsgID)
			}
			for k, v := range tt.rec.props {
				if m.Properties[k] != v {
					t.Errorf("property %s = %q, want %q", k, m.Properties[k], v)
				}
			}
		})
	}
}

func TestDecodeMessagesRejectsDamage(t *testing.T) {
	good := encodeRecord(testRecord{topic: "T", body: []byte("hello"), storeHost: netip.MustParseAddrPort("127.0.0.1:1"), bornHost: netip.MustParseAddrPort("127.0.0.1:2")})
	badMagic := append([]byte(nil), good...)
	badMagic[4] = 0
	bigSize := append([]byte(nil), good...)
	bigSize[3]++
	tests := []struct {
		name string
		in   []byte
	}{
		{name: "cut short", in: good[:len(good)-3]},
		{name: "bad magic", in: badMagic},
		{name: "size past the end", in: bigSize},
		{name: "tiny", in: []byte{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeMessages(tt.in); !errors.Is(err, ErrBadBody) {
				t.Errorf("err = %v, want ErrBadBody", err)
			}
		})
	}
}

func TestNewSendRequest(t *testing.T) {
	spec := &SendSpec{Topic: "T", QueueID: 3, Body: []byte("b"), Properties: map[string]string{"TAGS": "x"}, BornTimestamp: 42}
	v2 := NewSendRequest(spec)
	if v2.Code != remoting.SendMessageV2 {
		t.Fatalf("code = %d", v2.Code)
	}
	want := map[string]string{"a": ToolsProducerGroup, "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "42", "h": "0", "i": "TAGS\x01x", "j": "0", "k": "false", "m": "false"}
	if !reflect.DeepEqual(v2.ExtFields, want) {
		t.Errorf("V2 ext = %v\nwant %v", v2.ExtFields, want)
	}
	spec.V1Header = true
	v1 := NewSendRequest(spec)
	if v1.Code != remoting.SendMessage || v1.ExtFields["topic"] != "T" || v1.ExtFields["queueId"] != "3" || v1.ExtFields["a"] != "" {
		t.Errorf("V1 = %d %v", v1.Code, v1.ExtFields)
	}
}

func TestNewUniqID(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 1, 0, time.UTC)
	a, b := NewUniqID(now), NewUniqID(now)
	if len(a) != 32 || a == b || strings.ToUpper(a) != a {
		t.Errorf("ids %s %s", a, b)
	}
	// Bytes 10..13: milliseconds since the start of the month.
	if got := a[20:28]; got != "05265FE8" {
		t.Errorf("month millis field = %s, want 05265FE8 (1 day + 1 s)", got)
	}
}

func TestTagMatches(t *testing.T) {
	tests := []struct {
		expr, tag string
		want      bool
	}{
		{"*", "a", true}, {"", "", true}, {"a || b", "b", true}, {"a||b", "c", false}, {"a", "", false},
	}
	for _, tt := range tests {
		if got := TagMatches(tt.expr, tt.tag); got != tt.want {
			t.Errorf("TagMatches(%q, %q) = %v", tt.expr, tt.tag, got)
		}
	}
}

func TestPublishAndSubscribeQueues(t *testing.T) {
	rd := &remoting.TopicRouteData{
		BrokerDatas: []*remoting.BrokerData{
			{BrokerName: "b", BrokerAddrs: map[int64]string{0: "B0", 1: "B1"}},
			{BrokerName: "a", BrokerAddrs: map[int64]string{1: "A1"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{0: "C0"}},
		},
		QueueDatas: []*remoting.QueueData{
			{BrokerName: "b", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 2},
			{BrokerName: "a", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1},
			{BrokerName: "c", Perm: 4, ReadQueueNums: 2, WriteQueueNums: 2},
		},
	}
	var pub []string
	for _, q := range PublishQueues("T", rd) {
		pub = append(pub, q.BrokerName+"/"+q.Addr+"/"+string(rune('0'+q.QueueID)))
	}
	// a has no master, c is read-only.
	if want := []string{"b/B0/0", "b/B0/1"}; !reflect.DeepEqual(pub, want) {
		t.Errorf("PublishQueues = %v, want %v", pub, want)
	}
	var sub []string
	for _, q := range SubscribeQueues("T", rd) {
		sub = append(sub, q.BrokerName+"/"+q.Addr+"/"+string(rune('0'+q.QueueID)))
	}
	if want := []string{"a/A1/0", "b/B0/0", "c/C0/0", "c/C0/1"}; !reflect.DeepEqual(sub, want) {
		t.Errorf("SubscribeQueues = %v, want %v", sub, want)
	}
}

func TestVersionDesc(t *testing.T) {
	tests := []struct {
		v    int32
		want string
	}{
		{409, "V4_9_8"}, {317, "V4_5_2"}, {121, "V3_4_9"}, {479, "V5_3_3"}, {0, "V3_0_0_SNAPSHOT"}, {9999, "HIGHER_VERSION"}, {-1, "V3_0_0_SNAPSHOT"},
	}
	for _, tt := range tests {
		if got := VersionDesc(tt.v); got != tt.want {
			t.Errorf("VersionDesc(%d) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestParseJavaProperties(t *testing.T) {
	in := "# comment\nbrokerName=broker-a\r\n  listenPort : 10911\n! bang\nnamesrvAddr=a:1;b:2\nk\\=x=v\\n\nempty=\n\nspaced value\n"
	want := map[string]string{"brokerName": "broker-a", "listenPort": "10911", "namesrvAddr": "a:1;b:2", "k=x": "v\n", "empty": "", "spaced": "value"}
	if got := ParseJavaProperties(in); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseJavaProperties = %v\nwant %v", got, want)
	}
}

func TestDecodeRecallHandle(t *testing.T) {
	// base64url("v1 T broker-a 1700000000000 ABC")
	good := "djEgVCBicm9rZXItYSAxNzAwMDAwMDAwMDAwIEFCQw=="
	h, err := DecodeRecallHandle(good)
	if err != nil || *h != (RecallHandle{Topic: "T", BrokerName: "broker-a", TimestampMs: 1700000000000, UniqKey: "ABC"}) {
		t.Fatalf("DecodeRecallHandle = %+v, %v", h, err)
	}
	if _, err := DecodeRecallHandle(strings.TrimRight(good, "=")); err != nil {
		t.Errorf("unpadded handle: %v", err)
	}
	for _, bad := range []string{"", "!!!", "djIgVCBiIDEgQQ==" /* v2 T b 1 A */, "djEgVCBiIHggQQ==" /* v1 T b x A */, "djEgVCBi" /* v1 T b */} {
		if _, err := DecodeRecallHandle(bad); !errors.Is(err, ErrBadRecallHandle) {
			t.Errorf("DecodeRecallHandle(%q) err = %v, want ErrBadRecallHandle", bad, err)
		}
	}
}

func TestMergeOrderConf(t *testing.T) {
	tests := []struct{ old, entry, want string }{
		{"", "b:4", "b:4"},
		{"a:2;b:8", "b:4", "a:2;b:4"},
		{"c:1", "a:3", "a:3;c:1"},
	}
	for _, tt := range tests {
		if got := mergeOrderConf(tt.old, tt.entry); got != tt.want {
			t.Errorf("mergeOrderConf(%q, %q) = %q, want %q", tt.old, tt.entry, got, tt.want)
		}
	}
}
