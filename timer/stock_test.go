package timer

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// The checkpoint bytes the 5.3.3 jar wrote (testdata/java-5.3.3/Gen.java.txt)
// decode to its values and encode back to the same bytes.
func TestStockCheckpointJavaBytes(t *testing.T) {
	raw, err := os.ReadFile("testdata/java-5.3.3/checkpoint.bin")
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeStockCheckpoint(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := StockCheckpoint{LastReadTimeMs: 1765000000000, LastTimerLogFlushPos: 5200, LastTimerQueueOffset: 17, MasterTimerQueueOffset: 42,
		DataVersion: DataVersion{StateVersion: 7, Timestamp: 1765000000123, Counter: 3}}
	if c != want {
		t.Fatalf("decoded %+v, want %+v", c, want)
	}
	if got := c.Encode(); !bytes.Equal(got, raw) {
		t.Fatalf("re-encoded %x, Java wrote %x", got, raw)
	}
	// What rmq sends: the bytes the jar decoded (Gen.java.txt's printout).
	rmq, err := os.ReadFile("testdata/java-5.3.3/checkpoint-rmq.bin")
	if err != nil {
		t.Fatal(err)
	}
	sent := StockCheckpoint{LastReadTimeMs: 1765000001000, LastTimerLogFlushPos: 4160, LastTimerQueueOffset: 9, MasterTimerQueueOffset: 9,
		DataVersion: DataVersion{Timestamp: 1765000001500, Counter: 12}}
	if got := sent.Encode(); !bytes.Equal(got, rmq) {
		t.Fatalf("encoded %x, the jar decoded %x", got, rmq)
	}
}

// A 32-byte body (a checkpoint without data version) decodes as Java's
// decode does; lengths Java fails on are refused.
func TestStockCheckpointLengths(t *testing.T) {
	full := StockCheckpoint{LastReadTimeMs: 1, LastTimerLogFlushPos: 2, LastTimerQueueOffset: 3, MasterTimerQueueOffset: 4,
		DataVersion: DataVersion{StateVersion: 5, Timestamp: 6, Counter: 7}}.Encode()
	c, err := DecodeStockCheckpoint(full[:32])
	if err != nil || c != (StockCheckpoint{LastReadTimeMs: 1, LastTimerLogFlushPos: 2, LastTimerQueueOffset: 3, MasterTimerQueueOffset: 4}) {
		t.Fatalf("32 bytes: %+v %v", c, err)
	}
	if c, err := DecodeStockCheckpoint(append(full, 0xff)); err != nil || c.DataVersion.Counter != 7 {
		t.Fatalf("57 bytes: %+v %v", c, err)
	}
	for _, n := range []int{0, 8, 31, 33, 48, 55} {
		if _, err := DecodeStockCheckpoint(full[:n]); !errors.Is(err, ErrBadStockState) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
}

// The metrics JSON the jar wrote decodes; rmq's encoding is what the jar
// decoded (Gen.java.txt), byte for byte.
func TestStockMetricsJava(t *testing.T) {
	raw, err := os.ReadFile("testdata/java-5.3.3/metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeStockMetrics(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m.DataVersion != (DataVersion{Timestamp: 1765000000400, Counter: 9}) || len(m.TimingCount) != 2 ||
		m.TimingCount["TopicA"] != (TopicCount{Count: 3, TimeStamp: 1765000000200}) ||
		m.TimingCount["%RETRY%g"] != (TopicCount{Count: -1, TimeStamp: 1765000000300}) {
		t.Fatalf("decoded %+v", m)
	}
	rmq, err := os.ReadFile("testdata/java-5.3.3/metrics-rmq.json")
	if err != nil {
		t.Fatal(err)
	}
	sent := &StockMetrics{DataVersion: DataVersion{Timestamp: 1765000001600, Counter: 4},
		TimingCount: map[string]TopicCount{"T1": {Count: 2, TimeStamp: 1765000001700}}}
	if got := sent.Encode(); !bytes.Equal(got, rmq) {
		t.Fatalf("encoded %s, the jar decoded %s", got, rmq)
	}
	// The Java file's fields, re-encoded by rmq, read back the same.
	back, err := DecodeStockMetrics(m.Encode())
	if err != nil || back.DataVersion != m.DataVersion || len(back.TimingCount) != 2 || back.TimingCount["%RETRY%g"] != m.TimingCount["%RETRY%g"] {
		t.Fatalf("round trip %+v %v", back, err)
	}
	for _, bad := range []string{"", "[", `{"timingCount":{"a":{"count":"x"}}}`, `{"timingCount":[1]}`} {
		if _, err := DecodeStockMetrics([]byte(bad)); !errors.Is(err, ErrBadStockState) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func FuzzDecodeStockCheckpoint(f *testing.F) {
	raw, _ := os.ReadFile("testdata/java-5.3.3/checkpoint.bin")
	f.Add(raw)
	f.Add(raw[:32])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeStockCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrBadStockState) {
				t.Fatalf("unwrapped %v", err)
			}
			return
		}
		if len(b) >= StockCheckpointSize && !bytes.Equal(c.Encode(), b[:StockCheckpointSize]) {
			t.Fatalf("re-encode differs")
		}
	})
}

func FuzzDecodeStockMetrics(f *testing.F) {
	raw, _ := os.ReadFile("testdata/java-5.3.3/metrics.json")
	f.Add(raw)
	f.Add([]byte(`{"timingCount":{}}`))
	f.Add([]byte(`{"dataVersion":{"counter":1},"timingCount":{"\u0001":{"count":9223372036854775807}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		m, err := DecodeStockMetrics(b)
		if err != nil {
			if !errors.Is(err, ErrBadStockState) {
				t.Fatalf("unwrapped %v", err)
			}
			return
		}
		back, err := DecodeStockMetrics(m.Encode())
		if err != nil || back.DataVersion != m.DataVersion || len(back.TimingCount) != len(m.TimingCount) {
			t.Fatalf("re-encode: %+v %v", back, err)
		}
		for k, v := range m.TimingCount {
			if back.TimingCount[k] != v {
				t.Fatalf("topic %q: %+v, was %+v", k, back.TimingCount[k], v)
			}
		}
	})
}
