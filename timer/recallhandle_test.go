package timer

import (
	"encoding/base64"
	"errors"
	"testing"
)

func TestRecallHandleRoundTrip(t *testing.T) {
	h := EncodeRecallHandle("Orders", "broker-a", 1_700_000_000_001, "7F000001000018B4AAC2")
	// Stock encodes with java.util.Base64.getUrlEncoder(): padded, '-' and '_'.
	want := base64.URLEncoding.EncodeToString([]byte("v1 Orders broker-a 1700000000001 7F000001000018B4AAC2"))
	if h != want {
		t.Fatalf("handle %q, want %q", h, want)
	}
	topic, b, ts, uk, err := DecodeRecallHandle(h)
	if err != nil || topic != "Orders" || b != "broker-a" || ts != 1_700_000_000_001 || uk != "7F000001000018B4AAC2" {
		t.Fatalf("decode: %q %q %d %q %v", topic, b, ts, uk, err)
	}
}

func TestDecodeRecallHandleForms(t *testing.T) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		handle  string
		wantErr bool
		wantUK  string
	}{
		{name: "padded", handle: enc("v1 T b 5 U"), wantUK: "U"},
		{name: "unpadded accepted like Java", handle: base64.RawURLEncoding.EncodeToString([]byte("v1 T b 5 U")), wantUK: "U"},
		{name: "extra tokens ignored", handle: enc("v1 T b 5 U extra"), wantUK: "U"},
		{name: "empty", handle: "", wantErr: true},
		{name: "not base64", handle: "!!!!", wantErr: true},
		{name: "standard alphabet with + is not URL-safe", handle: "++++", wantErr: true},
		{name: "wrong version", handle: enc("v2 T b 5 U"), wantErr: true},
		{name: "too few tokens", handle: enc("v1 T b 5"), wantErr: true},
		{name: "timestamp not a number", handle: enc("v1 T b soon U"), wantErr: true},
		{name: "double space leaves an empty field", handle: enc("v1 T  b 5 U"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, uk, err := DecodeRecallHandle(tc.handle)
			if tc.wantErr {
				if !errors.Is(err, ErrBadRecallHandle) {
					t.Fatalf("err = %v, want ErrBadRecallHandle", err)
				}
				return
			}
			if err != nil || uk != tc.wantUK {
				t.Fatalf("uk=%q err=%v", uk, err)
			}
		})
	}
}
