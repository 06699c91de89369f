package store

import (
	"net/netip"
	"testing"

	"github.com/rmqio/rmq/message"
)

// FuzzCheckRecord feeds arbitrary bytes to the recovery scanner: checkRecord
// and resync must neither panic nor accept a record that does not frame.
// (The record codec itself is fuzzed in package message.)
func FuzzCheckRecord(f *testing.F) {
	ext := &message.MessageExt{
		Message: message.Message{
			Topic: "TopicTest", QueueID: 3, Body: []byte("hello body"),
			Properties: map[string]string{"TAGS": "TagA", "UNIQ_KEY": "ABC"},
			BornHost:   testBornHost,
		},
		StoreHost: testStoreHost,
	}
	good := message.EncodeRecord(nil, ext)
	f.Add(good)
	f.Add(good[:40])
	f.Add(append(append([]byte(nil), good...), good...))
	ext.BornHost = netip.MustParseAddrPort("[::1]:1")
	f.Add(message.EncodeRecord(nil, ext))
	f.Add([]byte{0, 0, 0, 8, 0xCB, 0xD4, 0x31, 0x94})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		l, kind := checkRecord(b, 0, 0)
		switch kind {
		case recValid:
			if _, err := message.DecodeRecord(b); err != nil || l.Total > len(b) {
				t.Fatalf("checkRecord accepted %d bytes that do not decode: %v", l.Total, err)
			}
		case recBlank:
			if l.Total != len(b) {
				t.Fatalf("BLANK of %d bytes in %d", l.Total, len(b))
			}
		}
		if q := resync(b, 0, len(b), 0); q >= len(b) {
			t.Fatalf("resync = %d past %d bytes", q, len(b))
		}
	})
}
