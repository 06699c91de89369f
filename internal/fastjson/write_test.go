package fastjson

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// TestAppendStringMatchesStdlib checks every single byte and a few sequences
// against encoding/json: the literal must parse, and parse to what
// encoding/json makes of the same string (invalid bytes become U+FFFD).
func TestAppendStringMatchesStdlib(t *testing.T) {
	var inputs []string
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
	}
	inputs = append(inputs, "", "😀", "\xed\xa0\x80", "\xf0\x9f\x98", "\u2028", `\u0041`, "</script>")
	for _, in := range inputs {
		lit := AppendString(nil, in)
		var got string
		if err := json.Unmarshal(lit, &got); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", in, lit, err)
		}
		std, _ := json.Marshal(in)
		var want string
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AppendString(%q) parses to %q, want %q", in, got, want)
		}
	}
	if got := string(AppendString([]byte("x:"), "a<b>&\"\\\x01\n")); got != `x:"a<b>&\"\\\u0001\n"` {
		t.Errorf("AppendString = %s", got)
	}
}

func TestAppendDouble(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{12.5, "12.5"},
		{-3, "-3.0"},
		{0.001, "0.001"},
		{0.0001, "1.0E-4"},
		{1.5e-5, "1.5E-5"},
		{9999999, "9999999.0"},
		{1e7, "1.0E7"},
		{123456789, "1.23456789E8"},
		{-2.5e300, "-2.5E300"},
		{1.0 / 3, "0.3333333333333333"},
		{math.NaN(), "null"},
		{math.Inf(1), "null"},
		{math.Inf(-1), "null"},
	}
	for _, tt := range tests {
		got := string(AppendDouble([]byte("x"), tt.in))
		if got != "x"+tt.want {
			t.Errorf("AppendDouble(%v) = %s, want x%s", tt.in, got, tt.want)
		}
		if tt.want == "null" {
			continue
		}
		back, err := strconv.ParseFloat(tt.want, 64)
		if err != nil || back != tt.in {
			t.Errorf("%s reads back as %v, %v; want %v", tt.want, back, err, tt.in)
		}
	}
}

func TestAppendIntKey(t *testing.T) {
	if got := string(AppendIntKey([]byte("{"), -12, false)); got != "{-12" {
		t.Errorf("bare = %s", got)
	}
	if got := string(AppendIntKey([]byte("{"), 7, true)); got != `{"7"` {
		t.Errorf("quoted = %s", got)
	}
}

func TestAppendMessageQueue(t *testing.T) {
	b := []byte("{")
	b = AppendMessageQueue(b, `b"1`, 3, "T")
	b = append(b, ":5}"...)
	if want := `{{"brokerName":"b\"1","queueId":3,"topic":"T"}:5}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var m Entries[testQueue, int64]
	if err := Unmarshal(b, &m); err != nil || len(m) != 1 || m[0].Key != (testQueue{`b"1`, 3, "T"}) || m[0].Value != 5 {
		t.Fatalf("read back %+v, %v", m, err)
	}
}

// FuzzRoundTrip writes a ConsumeStats-shaped body and a Long-keyed map with
// the writers, as Java peers receive them, and checks Normalize and Entries
// give every value back.
func FuzzRoundTrip(f *testing.F) {
	f.Add("broker-a", int32(0), "TopicTest", int64(0), "127.0.0.1:10911", 1.5, false)
	f.Add(`b"1`, int32(-1), "%RETRY%G\x01\x02", int64(-9), "\xff\u2028</>", 1e7, true)
	f.Add("", int32(2147483647), "", int64(math.MaxInt64), "", math.NaN(), false)
	f.Fuzz(func(t *testing.T, broker string, queueID int32, topic string, id int64, addr string, tps float64, quoted bool) {
		b := []byte(`{"brokerAddrs":{`)
		b = AppendIntKey(b, id, quoted)
		b = append(b, ':')
		b = AppendString(b, addr)
		b = append(b, `},"consumeTps":`...)
		b = AppendDouble(b, tps)
		b = append(b, `,"offsetTable":{`...)
		b = AppendMessageQueue(b, broker, queueID, topic)
		b = append(b, `:{"brokerOffset":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, "}}}"...)

		var got struct {
			BrokerAddrs Entries[int64, string]               `json:"brokerAddrs"`
			ConsumeTps  *float64                             `json:"consumeTps"`
			OffsetTable Entries[testQueue, map[string]int64] `json:"offsetTable"`
		}
		if err := Unmarshal(b, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		validAddr, validBroker, validTopic := stdString(addr), stdString(broker), stdString(topic)
		if len(got.BrokerAddrs) != 1 || got.BrokerAddrs[0].Key != id || got.BrokerAddrs[0].Value != validAddr {
			t.Fatalf("brokerAddrs of %s = %+v", b, got.BrokerAddrs)
		}
		switch {
		case math.IsNaN(tps) || math.IsInf(tps, 0):
			if got.ConsumeTps != nil {
				t.Fatalf("consumeTps of %s = %v, want null", b, *got.ConsumeTps)
			}
		case got.ConsumeTps == nil || *got.ConsumeTps != tps:
			t.Fatalf("consumeTps of %s = %v, want %v", b, got.ConsumeTps, tps)
		}
		wantQ := testQueue{validBroker, queueID, validTopic}
		if len(got.OffsetTable) != 1 || got.OffsetTable[0].Key != wantQ || got.OffsetTable[0].Value["brokerOffset"] != id {
			t.Fatalf("offsetTable of %s = %+v, want key %+v", b, got.OffsetTable, wantQ)
		}
	})
}

// stdString is s as encoding/json writes and reads it back.
func stdString(s string) string {
	b, _ := json.Marshal(s)
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
