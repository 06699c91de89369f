package bench

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
)

// records concatenates one stored record per body, with IPv4 and IPv6
// hosts alternating and a topic long enough for a v2 record at the end.
func records(bodies ...string) []byte {
	var b []byte
	for i, body := range bodies {
		host := netip.MustParseAddrPort("127.0.0.1:10911")
		if i%2 == 1 {
			host = netip.MustParseAddrPort("[::1]:10911")
		}
		topic := "BenchTopic"
		if i == len(bodies)-1 && i > 0 {
			topic = strings.Repeat("t", 200)
		}
		m := &message.MessageExt{Message: message.Message{Topic: topic, Body: []byte(body), BornHost: host,
			Properties: map[string]string{"KEYS": "k", "UNIQ_KEY": "u"}}, StoreHost: host, QueueOffset: int64(i)}
		b = message.EncodeRecord(b, m)
	}
	return b
}

// TestCountRecordsMatchesDecode: the walk counts what DecodeRecords decodes,
// and the bodies' bytes.
func TestCountRecordsMatchesDecode(t *testing.T) {
	for _, bodies := range [][]string{nil, {"a"}, {"", "bb", strings.Repeat("c", 4096)}, {"x", "y", "z", "w"}} {
		b := records(bodies...)
		n, bytes, err := countRecords(b)
		if err != nil {
			t.Fatalf("%d records: %v", len(bodies), err)
		}
		want := 0
		for _, s := range bodies {
			want += len(s)
		}
		if n != int64(len(bodies)) || bytes != int64(want) {
			t.Errorf("countRecords = %d records, %d bytes; want %d, %d", n, bytes, len(bodies), want)
		}
	}
}

// TestCountRecordsRefusesBrokenBodies: a truncated or garbled body is an
// admin.ErrBadBody, counted up to the broken record.
func TestCountRecordsRefusesBrokenBodies(t *testing.T) {
	b := records("first", "second")
	for name, body := range map[string][]byte{
		"truncated": b[:len(b)-3],
		"bad magic": append(append([]byte(nil), b[:len(b)/2]...), 0, 0, 0, 0x40, 1, 2, 3, 4),
		"short":     {0, 0, 0},
	} {
		if _, _, err := countRecords(body); !errors.Is(err, admin.ErrBadBody) {
			t.Errorf("%s: err = %v, want ErrBadBody", name, err)
		}
	}
}

// FuzzCountRecords: the walk never panics, and it agrees with the decoder
// on whether a body is well framed and how many records it holds.
func FuzzCountRecords(f *testing.F) {
	f.Add(records("a", "bb"))
	f.Add(records(""))
	f.Add([]byte{0, 0, 0, 8, 0xda, 0xa3, 0x20, 0xa7})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, _, err := countRecords(b)
		msgs, derr := message.DecodeRecords(b)
		if (err == nil) != (derr == nil) {
			t.Fatalf("countRecords err %v, DecodeRecords err %v", err, derr)
		}
		if err == nil && n != int64(len(msgs)) {
			t.Fatalf("countRecords %d records, DecodeRecords %d", n, len(msgs))
		}
	})
}
