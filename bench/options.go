package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Mode selects what Run measures.
type Mode string

// Modes.
const (
	// ModeProduce sends as fast as the in-flight window allows.
	ModeProduce Mode = "produce"
	// ModeConsume long-polls every queue of the topic.
	ModeConsume Mode = "consume"
	// ModeTimer sends timer messages (TIMER_DELIVER_MS) or delay-level
	// messages (DELAY) and consumes them to measure delivery lateness.
	ModeTimer Mode = "timer"
)

// DefaultDelayLevels is the stock messageDelayLevel.
const DefaultDelayLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// Options configures a run.
type Options struct {
	Mode        Mode
	NamesrvAddr string
	Topic       string // default BenchmarkTest
	// Connections is the number of TCP connections to each broker, and
	// InFlight the number of requests kept outstanding on each.
	Connections int // default 2
	InFlight    int // default 64
	MessageSize int // body bytes, default 128
	// Duration bounds the send phase (produce, timer) or the whole run
	// (consume); Count, when set, ends it after that many messages.
	Duration time.Duration // default 10 s
	Count    int64
	// SerializeType of the request headers; the stock benchmark tools use
	// the binary ROCKETMQ type, which is the default here too.
	SerializeType byte
	// TLS, when set, speaks TLS to name servers and brokers (--tls).
	TLS *tls.Config
	// JSONHeader sends JSON headers instead (as the Go client does).
	JSONHeader bool
	// V1Header sends SEND_MESSAGE (10) with long header names instead of
	// SEND_MESSAGE_V2 (310).
	V1Header bool
	// Timer mode: a message is due TimerDelay plus a uniform share of
	// TimerSpread after it is sent (TIMER_DELIVER_MS) — or, when DelayLevel
	// is set, after that level's delay from DelayLevels (DELAY).
	TimerDelay  time.Duration // default 1 s
	TimerSpread time.Duration
	DelayLevel  int
	DelayLevels string // default DefaultDelayLevels
	// Grace is how long the timer mode keeps consuming after the last send
	// for messages not yet due or late (default: the longest delay + 30 s).
	Grace time.Duration
	// Consume mode: the group, and where to start: "max" (only messages
	// sent from now on) or "min" (everything stored).
	Group string // default rmq_bench_consumer
	From  string // default max
	// SendTimeout bounds each send (default 3 s, the clients' sendMsgTimeout).
	SendTimeout time.Duration
	// ReportInterval is the period of progress lines (default 1 s; < 0: none).
	ReportInterval time.Duration
	Out            io.Writer // progress lines; nil: none
	Now            func() time.Time
	Logger         zerolog.Logger
}

// ErrOptions wraps invalid options.
var ErrOptions = errors.New("bench: invalid options")

func (o *Options) normalize() error {
	if o.Topic == "" {
		o.Topic = message.TopicBenchmark
	}
	if o.Connections <= 0 {
		o.Connections = 2
	}
	if o.InFlight <= 0 {
		o.InFlight = 64
	}
	if o.MessageSize <= 0 {
		o.MessageSize = 128
	}
	if o.Duration <= 0 && o.Count <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.TimerDelay <= 0 {
		o.TimerDelay = time.Second
	}
	if o.DelayLevels == "" {
		o.DelayLevels = DefaultDelayLevels
	}
	if o.Group == "" {
		o.Group = "rmq_bench_consumer"
	}
	if o.From == "" {
		o.From = "max"
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 3 * time.Second
	}
	if o.ReportInterval == 0 {
		o.ReportInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SerializeType == remoting.SerializeJSON && !o.JSONHeader {
		o.SerializeType = remoting.SerializeRocketMQ
	}
	if o.JSONHeader {
		o.SerializeType = remoting.SerializeJSON
	}
	var errs []error
	switch o.Mode {
	case ModeProduce, ModeConsume, ModeTimer:
	default:
		errs = append(errs, fmt.Errorf("mode %q is none of produce, consume, timer", o.Mode))
	}
	if o.From != "max" && o.From != "min" {
		errs = append(errs, fmt.Errorf("from %q is neither min nor max", o.From))
	}
	if o.TimerSpread < 0 {
		errs = append(errs, fmt.Errorf("timer spread %v is negative", o.TimerSpread))
	}
	if o.MessageSize > 4<<20 {
		errs = append(errs, fmt.Errorf("message size %d exceeds 4 MiB", o.MessageSize))
	}
	if o.DelayLevel != 0 {
		levels, err := ParseDelayLevels(o.DelayLevels)
		if err != nil {
			errs = append(errs, err)
		} else if o.DelayLevel < 1 || o.DelayLevel > len(levels) {
			errs = append(errs, fmt.Errorf("delay level %d outside 1..%d", o.DelayLevel, len(levels)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}

// dueAfter is how long after sending a timer-mode message is due, at most.
func (o *Options) maxDelay() time.Duration {
	if o.DelayLevel > 0 {
		levels, _ := ParseDelayLevels(o.DelayLevels)
		return levels[o.DelayLevel-1]
	}
	return o.TimerDelay + o.TimerSpread
}

// ParseDelayLevels reads a messageDelayLevel string such as "1s 5s 1m 2h";
// units are s, m, h and d.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: delay level %q", ErrOptions, f)
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if unit == 0 || err != nil || n < 0 {
			return nil, fmt.Errorf("%w: delay level %q", ErrOptions, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no delay levels in %q", ErrOptions, s)
	}
	return out, nil
}
