package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
)

// The 5.3.3 wire forms of the timer state a slave copies from its master
// (SlaveSynchronize.syncTimerCheckPoint / syncTimerMetrics):
//
//   - GET_TIMER_CHECK_POINT (60) answers TimerCheckpoint.encode: seven
//     big-endian int64, 56 bytes —
//
//     0 lastReadTimeMs          every timer slot before it is delivered
//     8 lastTimerLogFlushPos    TimerLog bytes made durable
//     16 lastTimerQueueOffset   min(queue offset read, masterTimerQueueOffset)
//     24 masterTimerQueueOffset the master's next timer-queue offset to read
//     32 dataVersion.stateVersion
//     40 dataVersion.timestamp
//     48 dataVersion.counter
//
//     TimerCheckpoint.decode reads the first four and the version only when
//     bytes remain (files of older brokers hold 32 bytes).
//   - GET_TIMER_METRICS (61) answers TimerMetricsSerializeWrapper as JSON:
//     {"dataVersion":{"counter":…,"stateVersion":…,"timestamp":…},
//     "timingCount":{"<real topic>":{"count":…,"timeStamp":…},…}}, the timer
//     messages in the wheel per real topic.
//
// testdata/java-5.3.3 holds both as the 5.3.3 jar writes them (Gen.java.txt).

// StockCheckpointSize is the length of an encoded TimerCheckpoint; a body of
// stockCheckpointV1Size (no data version) is accepted as decode does.
const (
	StockCheckpointSize   = 56
	stockCheckpointV1Size = 32
)

// DataVersion is 5.x's DataVersion (stateVersion added to 4.x's).
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// StockCheckpoint is 5.3.3's TimerCheckpoint.
type StockCheckpoint struct {
	LastReadTimeMs         int64
	LastTimerLogFlushPos   int64
	LastTimerQueueOffset   int64
	MasterTimerQueueOffset int64
	DataVersion            DataVersion
}

// ErrBadStockState wraps every refusal of a malformed 60/61 body.
var ErrBadStockState = errors.New("timer: malformed timer state")

// Encode is TimerCheckpoint.encode.
func (c StockCheckpoint) Encode() []byte {
	b := make([]byte, 0, StockCheckpointSize)
	for _, v := range [...]int64{c.LastReadTimeMs, c.LastTimerLogFlushPos, c.LastTimerQueueOffset, c.MasterTimerQueueOffset,
		c.DataVersion.StateVersion, c.DataVersion.Timestamp, c.DataVersion.Counter} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// DecodeStockCheckpoint is TimerCheckpoint.decode: 32 bytes (no version)
// or at least 56 (bytes past them are ignored, as Java's buffer reads
// leave them); anything else is what Java fails on with a
// BufferUnderflowException.
func DecodeStockCheckpoint(b []byte) (StockCheckpoint, error) {
	if len(b) != stockCheckpointV1Size && len(b) < StockCheckpointSize {
		return StockCheckpoint{}, fmt.Errorf("%w: checkpoint of %d bytes (want 32 or 56)", ErrBadStockState, len(b))
	}
	at := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[8*i:])) }
	c := StockCheckpoint{LastReadTimeMs: at(0), LastTimerLogFlushPos: at(1), LastTimerQueueOffset: at(2), MasterTimerQueueOffset: at(3)}
	if len(b) >= StockCheckpointSize {
		c.DataVersion = DataVersion{StateVersion: at(4), Timestamp: at(5), Counter: at(6)}
	}
	return c, nil
}

// TopicCount is a TimerMetrics.Metric: the timer messages of one real topic
// in the wheel and when that count last changed.
type TopicCount struct {
	Count     int64 `json:"count"`
	TimeStamp int64 `json:"timeStamp"`
}

// StockMetrics is TimerMetrics.TimerMetricsSerializeWrapper.
type StockMetrics struct {
	DataVersion DataVersion           `json:"dataVersion"`
	TimingCount map[string]TopicCount `json:"timingCount"`
}

// maxStockMetricsTopics bounds the topics a 61 body may name (a master has
// at most its topic count; stock cleans entries of deleted topics).
const maxStockMetricsTopics = 1 << 20

// Encode writes the JSON as fastjson does (fields sorted by name; the
// topics sorted too, where Java writes its hash order).
func (m *StockMetrics) Encode() []byte {
	b := []byte(`{"dataVersion":`)
	b = appendDataVersion(b, m.DataVersion)
	b = append(b, `,"timingCount":{`...)
	for i, t := range slices.Sorted(maps.Keys(m.TimingCount)) {
		if i > 0 {
			b = append(b, ',')
		}
		c := m.TimingCount[t]
		b = fastjson.AppendString(b, t)
		b = append(b, `:{"count":`...)
		b = strconv.AppendInt(b, c.Count, 10)
		b = append(b, `,"timeStamp":`...)
		b = strconv.AppendInt(b, c.TimeStamp, 10)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

func appendDataVersion(b []byte, v DataVersion) []byte {
	b = append(b, `{"counter":`...)
	b = strconv.AppendInt(b, v.Counter, 10)
	b = append(b, `,"stateVersion":`...)
	b = strconv.AppendInt(b, v.StateVersion, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, v.Timestamp, 10)
	return append(b, '}')
}

// DecodeStockMetrics reads a 61 body (fastjson's leniencies accepted, depth
// and size bounded by fastjson.Unmarshal and maxStockMetricsTopics).
func DecodeStockMetrics(b []byte) (*StockMetrics, error) {
	var m StockMetrics
	if err := fastjson.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadStockState, err)
	}
	if len(m.TimingCount) > maxStockMetricsTopics {
		return nil, fmt.Errorf("%w: %d topics", ErrBadStockState, len(m.TimingCount))
	}
	if m.TimingCount == nil {
		m.TimingCount = map[string]TopicCount{}
	}
	return &m, nil
}
