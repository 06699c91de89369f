package admin

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestDecodeTraces(t *testing.T) {
	rec := func(f ...string) string { return strings.Join(f, "\x01") + "\x02" }
	body := rec("Pub", "1700000000000", "DefaultRegion", "PG", "T", "ID1", "tag", "k1", "127.0.0.1:10911", "5", "12", "0", "OFF1", "false") +
		rec("Pub", "1700000000001", "DefaultRegion", "PG", "T", "ID2", "tag", "k2", "127.0.0.1:10911", "5", "1", "0", "OFF2") + // 13 fields: success
		rec("SubBefore", "1700000000100", "DefaultRegion", "CG", "req", "ID1", "0", "k1") +
		rec("SubAfter", "req", "ID1", "7", "true", "k1", "0", "1700000000200", "CG") +
		rec("SubAfter", "req", "ID1", "7", "false", "k1") + // 4.9.x before timeStamp and group
		rec("Unknown", "x") + rec("Pub", "short")
	got := DecodeTraces([]byte(body), "ID1", "10.0.0.1:5000")
	want := []TraceView{
		{Type: "Pub", MsgID: "ID1", Group: "PG", Topic: "T", Tags: "tag", Keys: "k1", StoreHost: "127.0.0.1:10911", ClientHost: "10.0.0.1:5000", TimeStamp: 1700000000000, CostTime: 12, Status: "failed"},
		{Type: "SubBefore", MsgID: "ID1", Group: "CG", Keys: "k1", ClientHost: "10.0.0.1:5000", TimeStamp: 1700000000100, Status: "success"},
		{Type: "SubAfter", MsgID: "ID1", Group: "CG", Keys: "k1", ClientHost: "10.0.0.1:5000", TimeStamp: 1700000000200, CostTime: 7, Status: "success"},
		{Type: "SubAfter", MsgID: "ID1", Keys: "k1", ClientHost: "10.0.0.1:5000", CostTime: 7, Status: "failed"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d = %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if v := DecodeTraces([]byte(body), "ID2", ""); len(v) != 1 || v[0].Status != "success" {
		t.Errorf("13-field Pub: %+v", v)
	}

	var out bytes.Buffer
	PrintTraces(&out, got)
	text := out.String()
	for _, s := range []string{"#ProducerGroup", "Pub        PG ", "12ms", "#ConsumerGroup", "Sub        CG "} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	if strings.Count(text, "Sub        ") != 2 { // SubBefore is not printed
		t.Errorf("output:\n%s", text)
	}
}

func TestParseResetTimestamp(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.Local)
	cases := map[string]int64{
		"now":                     now.UnixMilli(),
		"1700000000000":           1700000000000,
		"-1":                      -1,
		"2026-03-04#05:06:07:008": now.UnixMilli(),
	}
	for in, want := range cases {
		if got, err := ParseResetTimestamp(in, now); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	if _, err := ParseResetTimestamp("yesterday", now); err == nil {
		t.Error("yesterday parsed")
	}
}
