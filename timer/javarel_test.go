package timer

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Records of a relative delay (TIMER_DELAY_SEC/MS) as a Java 5.3.3 broker
// writes them carry no absolute time: TIMER_OUT_MS is the asked time rounded
// down to Java's timerPrecisionMs (HookUtils.transformTimerMessage), the
// asked time is the hook's clock + delay, and the store timestamp is read
// after the hook (CommitLog.asyncPutMessage). recordDue must never answer
// earlier than that asked time, and keep rmq's own (exact) records exact.

// javaOut is TIMER_OUT_MS as HookUtils.transformTimerMessage writes it for
// asked time d and precision p.
func javaOut(d, p int64) int64 {
	if d%p == 0 {
		return d - p
	}
	return d / p * p
}

// javaRelProps is a Java hook's record properties text for a relative delay
// of delay (key TIMER_DELAY_MS or TIMER_DELAY_SEC) with TIMER_OUT_MS out, in
// the order HashMap gives them in messageProperties2String (the order does
// not matter to a reader; the keys and values do).
func javaRelProps(key, delay string, out int64, extra ...[2]string) message.Props {
	m := map[string]string{
		message.PropUniqKey: "7F0000011F8018B4AAC2", "CLUSTER": "DefaultCluster", message.PropWait: "true",
		key: delay, message.PropTimerOutMs: strconv.FormatInt(out, 10),
		message.PropRealTopic: "Orders", message.PropRealQueueID: "0",
	}
	for _, kv := range extra {
		m[kv[0]] = kv[1]
	}
	return message.Props(message.MarshalProperties(m))
}

func TestRecordDueRelative(t *testing.T) {
	const hook = 1_700_000_001_234 // the Java hook's currentTimeMillis()
	roll := [2]string{message.PropTimerRollTimes, "1"}
	tests := []struct {
		name    string
		props   message.Props
		storeTs int64
		want    int64
	}{
		// Java, not rolled: storeTs (after the hook) + delay.
		{"java ms p1000", javaRelProps(message.PropTimerDelayMs, "2345", javaOut(hook+2345, 1000)), hook + 3, hook + 3 + 2345},
		{"java ms p100", javaRelProps(message.PropTimerDelayMs, "2345", javaOut(hook+2345, 100)), hook, hook + 2345},
		{"java sec p1000", javaRelProps(message.PropTimerDelaySec, "7", javaOut(hook+7000, 1000)), hook + 1, hook + 1 + 7000},
		// The asked time on a boundary: Java writes a whole precision lower.
		{"java ms on boundary", javaRelProps(message.PropTimerDelayMs, "766", javaOut(1_700_000_002_000, 1000)), hook, 1_700_000_002_000},
		// The put queued: storeTs + delay past out+g, so out+g (>= asked).
		{"java put queued", javaRelProps(message.PropTimerDelayMs, "2345", javaOut(hook+2345, 1000)), hook + 5000, 1_700_000_004_000},
		// No store timestamp the hook preceded (duplicationEnable leaves 0).
		{"java storeTs 0", javaRelProps(message.PropTimerDelayMs, "2345", javaOut(hook+2345, 500)), 0, 1_700_000_004_000},
		// Rolled: the store timestamp is the roll's; out + the largest Java
		// precision dividing out.
		{"java rolled p1000", javaRelProps(message.PropTimerDelayMs, "2345", javaOut(hook+2345, 1000), roll), hook + 99_000, 1_700_000_004_000},
		{"java rolled p500", javaRelProps(message.PropTimerDelayMs, "2345", 1_700_000_003_500, roll), hook + 99_000, 1_700_000_004_000},
		{"java rolled p200", javaRelProps(message.PropTimerDelayMs, "2345", 1_700_000_003_400, roll), hook + 99_000, 1_700_000_003_600},
		{"java rolled p100", javaRelProps(message.PropTimerDelayMs, "2345", 1_700_000_003_300, roll), hook + 99_000, 1_700_000_003_400},
		// rmq's own records: TIMER_OUT_MS exact.
		{"rmq off grid", javaRelProps(message.PropTimerDelayMs, "2345", hook+2345), hook + 40, hook + 2345},
		{"rmq off grid rolled", javaRelProps(message.PropTimerDelaySec, "9", hook+9000, roll), hook + 99_000, hook + 9000},
		{"rmq on grid same ms", javaRelProps(message.PropTimerDelayMs, "2766", 1_700_000_004_000), hook, 1_700_000_004_000},
		// Nonsense delays never make a record earlier than out.
		{"negative delay", javaRelProps(message.PropTimerDelayMs, "-5000", 1_700_000_004_000), hook, 1_700_000_005_000},
		{"overflowing delay", javaRelProps(message.PropTimerDelaySec, "9223372036854775807", 1_700_000_004_000), hook, 1_700_000_005_000},
		{"unparsable delay", javaRelProps(message.PropTimerDelayMs, "x", 1_700_000_004_000), hook, 1_700_000_005_000},
		{"out near max", javaRelProps(message.PropTimerDelayMs, "1", math.MaxInt64/1000*1000), hook, math.MaxInt64},
	}
	for _, tc := range tests {
		due, out, err := recordDue(tc.props, tc.storeTs)
		if err != nil || due != tc.want {
			t.Errorf("%s: due %d err %v, want %d", tc.name, due, err, tc.want)
		}
		if wantOut, _ := strconv.ParseInt(tc.props.Get(message.PropTimerOutMs), 10, 64); out != wantOut {
			t.Errorf("%s: out %d, want %d", tc.name, out, wantOut)
		}
	}
}

// Every Java precision, every asked-time phase and every put latency: the
// due time is never before the asked time, and never more than one Java
// precision (or the put latency, when that is less) after it.
func TestRecordDueRelativeNeverEarly(t *testing.T) {
	for _, p := range javaPrecisions {
		for hook := int64(1_700_000_000_000); hook < 1_700_000_002_000; hook += 7 {
			for _, lat := range []int64{0, 1, 3, 250, 5000} {
				const delay = 1234
				d := hook + delay
				props := javaRelProps(message.PropTimerDelayMs, "1234", javaOut(d, p))
				due, _, _ := recordDue(props, hook+lat)
				if due < d || due > d+min(lat, javaGrid(javaOut(d, p))) {
					t.Fatalf("p %d hook %d latency %d: due %d, asked %d", p, hook, lat, due, d)
				}
				rolled := javaRelProps(message.PropTimerDelayMs, "1234", javaOut(d, p), [2]string{message.PropTimerRollTimes, "3"})
				if due, _, _ := recordDue(rolled, hook+1e9); due < d || due > javaOut(d, p)+1000 {
					t.Fatalf("p %d hook %d rolled: due %d, asked %d", p, hook, due, d)
				}
			}
		}
	}
}

func TestRecordDueAllocations(t *testing.T) {
	props := javaRelProps(message.PropTimerDelayMs, "2345", javaOut(1_700_000_003_579, 1000))
	if n := testing.AllocsPerRun(100, func() { recordDue(props, 1_700_000_001_235) }); n != 0 {
		t.Fatalf("recordDue allocates %.1f times", n)
	}
}

// newStoreClockEnv is newEnv whose message store stamps store timestamps from
// the timer's manual clock, as the broker's stores share its message clock.
func newStoreClockEnv(t *testing.T) *env {
	clk := clock.NewManual(epoch)
	e := newEnvStore(t, func(o *store.Options) { o.Clock = clk }, func(o *Options) { o.Clock = clk })
	e.clk = clk
	return e
}

// putJavaRel stores a record as a Java 5.3.3 master's put hook writes it for
// TIMER_DELAY_MS delay asked at the current clock (the hook's
// currentTimeMillis), with precision p, after latency ms (the store
// timestamp is taken then). It returns the asked time.
func putJavaRel(e *env, delay, p int64, latency time.Duration, extra ...[2]string) (asked int64, m *message.Message) {
	e.t.Helper()
	asked = e.nowMs() + delay
	e.advance(latency)
	props := map[string]string{message.PropUniqKey: "JAVA" + strconv.FormatInt(e.seq.Add(1), 10)}
	for k, v := range message.ParseProperties(string(javaRelProps(message.PropTimerDelayMs, strconv.FormatInt(delay, 10), javaOut(asked, p)))) {
		if k != message.PropUniqKey {
			props[k] = v
		}
	}
	for _, kv := range extra {
		props[kv[0]] = kv[1]
	}
	m = &message.Message{Topic: message.TopicWheelTimer, Body: []byte("java"), Properties: props, BornTimestamp: asked - delay}
	if _, err := e.st.PutMessage(m); err != nil {
		e.t.Fatalf("put: %v", err)
	}
	return asked, m
}

// A Java-written relative-delay record delivered here after a failover is
// not delivered before the asked time (before recordDue looked at the store
// timestamp it left at the rounded TIMER_OUT_MS, up to 1 s early).
func TestJavaWrittenRelativeRecordNotEarly(t *testing.T) {
	e := newStoreClockEnv(t)
	e.advance(1234 * time.Millisecond) // the hook reads a clock off any grid
	asked, _ := putJavaRel(e, 2345, 1000, 2*time.Millisecond)
	e.settle()
	for _, at := range []int64{javaOut(asked, 1000), asked - 1} {
		e.clk.Set(time.UnixMilli(at))
		e.settle()
		if got := e.got("Orders"); len(got) != 0 {
			t.Fatalf("delivered at %d, %d ms before the asked %d", at, asked-at, asked)
		}
	}
	e.clk.Set(time.UnixMilli(asked + 2)) // store timestamp + delay
	e.waitCount("Orders", 1)
}

// A rolled Java-written relative-delay record (the store timestamp is the
// roll's) is due one Java precision after its TIMER_OUT_MS, never earlier.
func TestRolledRelativeRecordOnJavaGrid(t *testing.T) {
	e := newStoreClockEnv(t)
	e.advance(1234 * time.Millisecond)
	asked, _ := putJavaRel(e, 2345, 1000, 30*time.Millisecond, [2]string{message.PropTimerRollTimes, "1"})
	e.settle()
	out := javaOut(asked, 1000)
	e.clk.Set(time.UnixMilli(asked))
	e.settle()
	e.clk.Set(time.UnixMilli(out + 999))
	e.settle()
	if got := e.got("Orders"); len(got) != 0 {
		t.Fatalf("a rolled record delivered at %d, before TIMER_OUT_MS %d + 1 s", e.nowMs(), out)
	}
	e.advance(time.Millisecond)
	e.waitCount("Orders", 1)
}

// A recall of a Java-written record names its rounded TIMER_OUT_MS (the
// handle carries it + 1); the record, due later here, is still dropped, also
// when the wheel's read time passed the marker's own slot and the delete set
// was flushed and pruned in between.
func TestRecallJavaWrittenRelativeRecord(t *testing.T) {
	e := newStoreClockEnv(t)
	e.advance(1234 * time.Millisecond)
	asked, m := putJavaRel(e, 2345, 1000, 2*time.Millisecond)
	e.settle()
	out := javaOut(asked, 1000)
	handle := EncodeRecallHandle("Orders", "broker-a", out+1, m.Properties[message.PropUniqKey])
	if _, err := e.ts().Recall("Orders", handle, "pg"); err != nil {
		t.Fatalf("recall: %v", err)
	}
	e.sendAt("Other", out+200) // moves the read time on when delivered
	e.settle()
	e.clk.Set(time.UnixMilli(out + 300)) // past the marker's slot, before the record's
	e.settle()
	e.restart() // a checkpoint flush prunes what it no longer needs
	e.settle()
	wantDropped(e, asked)
}

// A wheel entry linked at a Java-written record's TIMER_OUT_MS (by an rmq
// before recordDue looked past it) still matches its record: delivered, not
// skipped as stale.
func TestEntryAtTimerOutStillMatches(t *testing.T) {
	e := newStoreClockEnv(t)
	props := javaRelProps(message.PropTimerDelayMs, "2345", 1_700_000_003_000)
	ext := &message.MessageExt{Message: message.Message{Topic: message.TopicWheelTimer}, StoreTimestamp: 1_700_000_001_235}
	for _, target := range []int64{1_700_000_003_000, 1_700_000_003_580} {
		if _, ok := e.ts().check(item{pos: 0, target: target}, ext, props); !ok {
			t.Fatalf("entry at %d skipped", target)
		}
	}
	if _, ok := e.ts().check(item{pos: 0, target: 1_700_000_003_100}, ext, props); ok {
		t.Fatal("an entry at neither time matched")
	}
}

// A recall marker a Java master wrote (TIMER_OUT_MS its rounded time, the
// handle's time in TIMER_DELIVER_MS) that this store reads only after its
// read time passed the marker's slot still drops the Java-written record it
// names, which is due later here.
func TestLateJavaMarkerDropsRelativeRecord(t *testing.T) {
	e := newStoreClockEnv(t)
	e.advance(1234 * time.Millisecond)
	asked, m := putJavaRel(e, 2345, 1000, 2*time.Millisecond)
	out := javaOut(asked, 1000)
	e.sendAt("Other", out+200) // moves the read time on when delivered
	e.settle()
	e.clk.Set(time.UnixMilli(out + 300))
	e.settle()
	uk := m.Properties[message.PropUniqKey]
	marker := &message.Message{Topic: message.TopicWheelTimer, Body: []byte("0"), Properties: map[string]string{
		message.PropTimerDelUniqKey: "Orders+" + uk, message.PropUniqKey: uk, message.PropTags: RecallTag,
		message.PropTimerDeliverMs: strconv.FormatInt(out+1, 10), message.PropTimerOutMs: strconv.FormatInt(javaOut(out+1, 1000), 10),
		message.PropRealTopic: "Orders", message.PropRealQueueID: "0",
	}}
	if _, err := e.st.PutMessage(marker); err != nil {
		t.Fatal(err)
	}
	e.settle()
	wantDropped(e, asked)
}

// wantDropped moves the clock past asked by a Java precision and wants the
// one pending record dropped by its marker, not delivered.
func wantDropped(e *env, asked int64) {
	e.t.Helper()
	e.clk.Set(time.UnixMilli(asked + 1000))
	e.settle()
	if got := e.got("Orders"); len(got) != 0 {
		e.t.Fatalf("a recalled Java-written record was delivered: %v", got[0].Properties)
	}
	if st := e.ts().Stats(); st.Deleted != 1 || st.Pending != 0 {
		e.t.Fatalf("stats %+v", st)
	}
}
