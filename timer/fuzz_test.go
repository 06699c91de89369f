package timer

import (
	"errors"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/message"
)

func FuzzDecodeRecallHandle(f *testing.F) {
	f.Add(EncodeRecallHandle("T", "b", 5, "U"))
	f.Add("")
	f.Add("djEgVCBiIDUgVQ")
	f.Add("djEgIGIgNSBV")
	f.Fuzz(func(t *testing.T, h string) {
		topic, b, ts, uk, err := DecodeRecallHandle(h)
		if err != nil {
			if !errors.Is(err, ErrBadRecallHandle) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		if topic == "" || b == "" || uk == "" {
			t.Fatalf("accepted empty field: %q %q %q", topic, b, uk)
		}
		// What decodes re-encodes to an equivalent handle.
		t2, b2, ts2, uk2, err := DecodeRecallHandle(EncodeRecallHandle(topic, b, ts, uk))
		if err != nil || t2 != topic || b2 != b || ts2 != ts || uk2 != uk {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

func FuzzAdmit(f *testing.F) {
	f.Add("TIMER_DELAY_SEC", "10", int64(1_700_000_000_000), int64(259200))
	f.Add("TIMER_DELAY_MS", "9223372036854775807", int64(5), int64(1))
	f.Add("TIMER_DELIVER_MS", "-9223372036854775808", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, key, val string, now, maxSec int64) {
		if now < 0 {
			now = -now / 2
		}
		props := map[string]string{key: val}
		ms, timer, due, err := Admit(props, now, maxSec)
		if err != nil {
			if !errors.Is(err, ErrIllegal) || due {
				t.Fatalf("err %v due %v", err, due)
			}
			return
		}
		if !timer {
			return
		}
		if due != (ms <= now) {
			t.Fatalf("due=%v for %d at %d", due, ms, now)
		}
		if !due {
			limit := maxSec
			if limit <= 0 {
				limit = DefaultMaxDelaySec
			}
			if limit < 9_223_372_036_854_775 && ms-now > limit*1000 {
				t.Fatalf("%d ms ahead admitted with max %d s", ms-now, limit)
			}
		}
		if key == message.PropTimerDeliverMs {
			if v, perr := strconv.ParseInt(val, 10, 64); perr != nil || v != ms {
				t.Fatalf("deliver %q → %d", val, ms)
			}
		}
	})
}

func FuzzDecodeUnit(f *testing.F) {
	var b [unitSize]byte
	u := testUnit(3)
	u.encode(b[:])
	f.Add(b[:])
	f.Add(make([]byte, unitSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, ok := decodeUnit(b)
		if !ok {
			return
		}
		var c [unitSize]byte
		u.encode(c[:])
		if string(c[:]) != string(b[:unitSize]) {
			t.Fatal("an accepted unit does not re-encode to itself")
		}
	})
}
