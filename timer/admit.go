package timer

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/rmqio/rmq/message"
)

// ErrIllegal is returned (wrapped, with a remark saying why) for a timer
// message the broker must refuse with MESSAGE_ILLEGAL (13).
var ErrIllegal = errors.New("timer: illegal timer message")

// Defaults of the admission limits (MessageStoreConfig).
const (
	// DefaultMaxDelaySec is timerMaxDelaySec: 3 days.
	DefaultMaxDelaySec int64 = 3 * 24 * 3600
)

// Admit decides whether a message with properties props is a timer message and
// when it is due. It is the single admission rule of every entry point (send,
// batch, consumer send-back, recall markers); the caller handles a DELAY level
// first, and a DELAY > 0 wins over all timer properties (stock clears them).
//
//   - timer=false, err=nil: not a timer message: none of TIMER_DELAY_SEC,
//     TIMER_DELAY_MS, TIMER_DELIVER_MS is set, or TIMER_OUT_MS is (the message
//     was admitted before: a re-put).
//   - The first present of TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS
//     decides (stock precedence). Relative delays count from nowMs.
//   - A value that is not a decimal int64, a relative delay whose arithmetic
//     overflows int64, or a time more than maxDelaySec seconds after nowMs is
//     ErrIllegal. An overflow is never taken for "due now".
//   - due=true: the time is at or before nowMs; the message is stored on its
//     own topic at once. A delete marker (TIMER_DEL_UNIQKEY) with such a time
//     is ErrIllegal, as in stock.
//
// deliverMs is the exact requested time; nothing is rounded. maxDelaySec <= 0
// means DefaultMaxDelaySec.
func Admit(props map[string]string, nowMs int64, maxDelaySec int64) (deliverMs int64, timer bool, due bool, err error) {
	return admit(func(k string) (string, bool) { v, ok := props[k]; return v, ok }, nowMs, maxDelaySec)
}

// AdmitText is Admit on a properties text (what Admit of
// message.ParseProperties(props) would answer), for a send path that keeps
// the producer's text.
func AdmitText(props message.Props, nowMs int64, maxDelaySec int64) (deliverMs int64, timer bool, due bool, err error) {
	return admit(props.Lookup, nowMs, maxDelaySec)
}

func admit(lookup func(string) (string, bool), nowMs int64, maxDelaySec int64) (deliverMs int64, timer bool, due bool, err error) {
	if _, ok := lookup(message.PropTimerOutMs); ok {
		return 0, false, false, nil
	}
	key, raw := "", ""
	for _, k := range [...]string{message.PropTimerDelaySec, message.PropTimerDelayMs, message.PropTimerDeliverMs} {
		if v, ok := lookup(k); ok {
			key, raw = k, v
			break
		}
	}
	if key == "" {
		return 0, false, false, nil
	}
	n, perr := strconv.ParseInt(raw, 10, 64)
	if perr != nil {
		return 0, true, false, fmt.Errorf("%w: %s=%q is not a 64-bit decimal integer", ErrIllegal, key, raw)
	}
	switch key {
	case message.PropTimerDelaySec:
		ms, ok := mulExact(n, 1000)
		if ok {
			deliverMs, ok = addExact(nowMs, ms)
		}
		if !ok {
			return 0, true, false, fmt.Errorf("%w: %s=%d overflows a 64-bit millisecond time", ErrIllegal, key, n)
		}
	case message.PropTimerDelayMs:
		var ok bool
		if deliverMs, ok = addExact(nowMs, n); !ok {
			return 0, true, false, fmt.Errorf("%w: %s=%d overflows a 64-bit millisecond time", ErrIllegal, key, n)
		}
	default:
		deliverMs = n
	}
	if deliverMs <= nowMs {
		if _, del := lookup(message.PropTimerDelUniqKey); del {
			return 0, true, false, fmt.Errorf("%w: a delete marker (%s) must have a delivery time after now, got %d <= %d",
				ErrIllegal, message.PropTimerDelUniqKey, deliverMs, nowMs)
		}
		return deliverMs, true, true, nil
	}
	if maxDelaySec <= 0 {
		maxDelaySec = DefaultMaxDelaySec
	}
	maxMs := satMul(maxDelaySec, 1000)
	if delay, ok := subExact(deliverMs, nowMs); !ok || delay > maxMs {
		return 0, true, false, fmt.Errorf("%w: the delay time should not be bigger than the max delay %dms (%s=%s asks for %d ms from now)",
			ErrIllegal, maxMs, key, raw, satSub(deliverMs, nowMs))
	}
	return deliverMs, true, false, nil
}

// The wheel rewrite exists once, here, in the two forms the send pipeline
// stores a message in: Rewrite on a property map, RewriteText on the
// producer's properties text (the broker's text mode, which stores what
// came without building a map). Both set wheelPairs and leave the rest
// alone; the caller moves the message to message.TopicWheelTimer queue 0.

// wheelPairs are the properties the wheel form adds: TIMER_OUT_MS =
// deliverMs and the destination in REAL_TOPIC/REAL_QID.
func wheelPairs(realTopic string, realQueueID int32, deliverMs int64) [3][2]string {
	return [3][2]string{
		{message.PropTimerOutMs, strconv.FormatInt(deliverMs, 10)},
		{message.PropRealTopic, realTopic},
		{message.PropRealQueueID, strconv.FormatInt(int64(realQueueID), 10)},
	}
}

// Rewrite turns an admitted, not yet due message into its wheel form: it is
// stored on message.TopicWheelTimer queue 0 with wheelPairs. The user's
// TIMER_* properties stay (stock keeps them).
func Rewrite(m *message.Message, deliverMs int64) {
	if m.Properties == nil {
		m.Properties = make(map[string]string, 3)
	}
	for _, kv := range wheelPairs(m.Topic, m.QueueID, deliverMs) {
		m.Properties[kv[0]] = kv[1]
	}
	m.Topic = message.TopicWheelTimer
	m.QueueID = 0
}

// RewriteText is Rewrite's properties on a properties text, for a message
// bound for queue realQueueID of realTopic: text less drop, REAL_TOPIC and
// REAL_QID, then set and wheelPairs, which, last, win over a producer's
// own. drop and set are the caller's own edit of the text in the same
// pass (the send path drops WAIT and sets CLUSTER). TIMER_OUT_MS is not
// dropped: a text carrying it is no timer message (Admit).
func RewriteText(text, realTopic string, realQueueID int32, deliverMs int64, drop string, set [2]string) string {
	w := wheelPairs(realTopic, realQueueID, deliverMs)
	return message.EditProperties(text, []string{drop, message.PropRealTopic, message.PropRealQueueID}, set, w[0], w[1], w[2])
}

// AdmitMessage runs Admit on m the way the send path should and rewrites m when
// it is a timer message not yet due. Prepared and rollback transaction records
// are never timer messages (their commit is admitted when it is stored), nor
// are records already on message.TopicWheelTimer. rewritten=false with
// err=nil means "store m as it is" (not a timer message, or due now).
func AdmitMessage(m *message.Message, nowMs, maxDelaySec int64) (deliverMs int64, rewritten bool, err error) {
	if !admissible(m.Topic, m.SysFlag) {
		return 0, false, nil
	}
	deliverMs, timer, due, err := Admit(m.Properties, nowMs, maxDelaySec)
	if err != nil || !timer || due {
		return deliverMs, false, err
	}
	Rewrite(m, deliverMs)
	return deliverMs, true, nil
}

// AdmitMessageText is AdmitMessage's decision for a message on topic with
// sysFlag and properties text props, without the rewrite (RewriteText
// makes the text): wheel=true when it goes into the wheel.
func AdmitMessageText(topic string, sysFlag int32, props message.Props, nowMs, maxDelaySec int64) (deliverMs int64, wheel bool, err error) {
	if !admissible(topic, sysFlag) {
		return 0, false, nil
	}
	deliverMs, timer, due, err := AdmitText(props, nowMs, maxDelaySec)
	if err != nil || !timer || due {
		return deliverMs, false, err
	}
	return deliverMs, true, nil
}

// admissible reports a message that may be a timer message: prepared and
// rollback transaction records are not (their commit is admitted when it
// is stored), nor are records already on message.TopicWheelTimer.
func admissible(topic string, sysFlag int32) bool {
	tt := message.TransactionType(sysFlag)
	return tt != message.TransactionPreparedType && tt != message.TransactionRollbackType && topic != message.TopicWheelTimer
}

// IssueRecallHandle returns the recall handle a SEND response carries for m,
// a message Rewrite put into the wheel (stock: only single sends, and never
// for retry topics). The timestamp is TIMER_OUT_MS+1 as in stock.
func IssueRecallHandle(m *message.Message, brokerName string) (string, bool) {
	if m.Topic != message.TopicWheelTimer {
		return "", false
	}
	out, err := strconv.ParseInt(m.Properties[message.PropTimerOutMs], 10, 64)
	if err != nil {
		return "", false
	}
	return RecallHandleFor(m.Properties[message.PropRealTopic], m.Properties[message.PropUniqKey], out, brokerName)
}

// RecallHandleFor is IssueRecallHandle for a message bound for realTopic
// with UNIQ_KEY uniq that was put into the wheel with TIMER_OUT_MS deliverMs.
func RecallHandleFor(realTopic, uniq string, deliverMs int64, brokerName string) (string, bool) {
	if realTopic == "" || uniq == "" || message.IsRetryTopic(realTopic) || deliverMs == math.MaxInt64 {
		return "", false
	}
	return EncodeRecallHandle(realTopic, brokerName, deliverMs+1, uniq), true
}

func mulExact(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

func addExact(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return 0, false
	}
	return c, true
}

func subExact(a, b int64) (int64, bool) {
	c := a - b
	if (c < a) != (b > 0) {
		return 0, false
	}
	return c, true
}

// satMul multiplies non-negative a by positive b, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	if c, ok := mulExact(a, b); ok {
		return c
	}
	return math.MaxInt64
}

func satSub(a, b int64) int64 {
	if c, ok := subExact(a, b); ok {
		return c
	}
	if b < 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// javaPrecisions are the timerPrecisionMs a 5.3.3 broker can run with,
// largest first: MessageStoreConfig.setTimerPrecisionMs snaps any setting
// to one of them.
var javaPrecisions = [...]int64{1000, 500, 200, 100}

// javaGrid is the largest Java precision out is a multiple of, 0 when none
// is: then no Java broker wrote out, as it only writes multiples of its own.
func javaGrid(out int64) int64 {
	for _, p := range javaPrecisions {
		if out%p == 0 {
			return p
		}
	}
	return 0
}

// recordDue is when a timer-topic record with properties props and store
// timestamp storeTs is due, and its TIMER_OUT_MS (out). rmq writes
// TIMER_OUT_MS as the exact requested time (admit), so due is out on its
// own records. A Java 5.3.3 broker writes it rounded down to its
// timerPrecisionMs p, a whole p lower when already on a boundary
// (HookUtils.transformTimerMessage): the asked time d lies in (out, out+p].
// Java puts the record in slot out and reads a slot only once its
// currWriteTimeMs, the clock rounded down to p, passed it (dequeue,
// maybeMoveWriteTime), or delivers it at once when out is already behind
// that (putMessageToTimerWheel): never before out+p, so never early
// itself. A record it wrote and rmq delivers after a failover in a mixed
// group would leave up to p early by out alone (the failover soak's mixed
// variants saw 18-808 ms). So:
//
//   - TIMER_DELIVER_MS, when it was the asked time (TIMER_DELAY_SEC and
//     TIMER_DELAY_MS win over it, in admit's order as in Java's), is d: due
//     is the later of it and out.
//   - A relative delay (TIMER_DELAY_SEC/MS) carries no absolute time. Java
//     took d = currentTimeMillis() + delay in the put hook, before
//     CommitLog.asyncPutMessage stamps the store timestamp (again under
//     the put lock), so storeTs + delay >= d on the record the hook wrote.
//     A rolled copy (TIMER_ROLL_TIMES, set by Java's TimerMessageStore.convert
//     and by rmq's roll and evacuation) is a later put that keeps the
//     properties, TIMER_OUT_MS included, but not the store timestamp; Java's
//     p is not in the record either, but p divides out and is one of
//     javaPrecisions, so the largest of those dividing out, g >= p, makes
//     out+g >= d. due is out+g, or storeTs + delay when not rolled and
//     within [out, out+g) (storeTs + delay below out is no store timestamp
//     the hook preceded, such as 0 under duplicationEnable). An out no Java
//     precision divides is rmq's: exact.
//
// The cost on rmq's own relative records: the 1 in 100 whose exact time is
// a multiple of 100 ms are due at storeTs + delay, later than asked by the
// time from admission to the store's clock reading under the put lock
// (0 ms unless the put queued), and if rolled at out+g (up to 1 s late).
// Parsing allocates nothing on valid values.
func recordDue(props message.Props, storeTs int64) (due, out int64, err error) {
	out, err = strconv.ParseInt(props.Get(message.PropTimerOutMs), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	if v, ok := props.Lookup(message.PropTimerDelaySec); ok {
		return relativeDue(props, out, v, 1000, storeTs), out, nil
	}
	if v, ok := props.Lookup(message.PropTimerDelayMs); ok {
		return relativeDue(props, out, v, 1, storeTs), out, nil
	}
	if v, ok := props.Lookup(message.PropTimerDeliverMs); ok {
		if asked, err := strconv.ParseInt(v, 10, 64); err == nil && asked > out {
			return asked, out, nil
		}
	}
	return out, out, nil
}

// relativeDue is recordDue for a record of a relative delay raw (in units of
// unit ms) with TIMER_OUT_MS out.
func relativeDue(props message.Props, out int64, raw string, unit, storeTs int64) int64 {
	g := javaGrid(out)
	if g == 0 {
		return out
	}
	bound, ok := addExact(out, g)
	if !ok {
		bound = math.MaxInt64
	}
	if _, rolled := props.Lookup(message.PropTimerRollTimes); rolled {
		return bound
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		if ms, ok := mulExact(n, unit); ok {
			if at, ok := addExact(storeTs, ms); ok && at >= out && at < bound {
				return at
			}
		}
	}
	return bound
}
