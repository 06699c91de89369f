package admin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/remoting"
)

// FastForwardTimeout is the real-time bound of a fast-forward when the
// caller names none (`rmq admin fastForward` without --timeout): the broker
// answers within it, and the request waits that long plus Options.Timeout.
const FastForwardTimeout = 30 * time.Second

// FastForwardResult is one broker's answer to a fast-forward.
type FastForwardResult struct {
	BrokerAddr string `json:"brokerAddr"`
	// BrokerTime is the broker's message clock once the jump was done (ms).
	BrokerTime int64 `json:"brokerTime"`
	// ClockOffsetMs is how far that clock is now ahead of the wall clock.
	ClockOffsetMs int64 `json:"clockOffsetMs"`
}

// FastForward sends CLOCK_FAST_FORWARD (rmq's own request) to the broker at
// addr, or to every master of cluster, one after the other: each moves its message clock d ahead, delivering
// the delay levels, timers, transaction checks and POP revives due within d
// in due order, and answers once they are stored. within bounds each
// broker's jump in real time (FastForwardTimeout when 0). A broker without
// clockControlEnable=true answers NO_PERMISSION. It returns the answers of
// the brokers that succeeded and stops at the first failure.
func (a *Admin) FastForward(ctx context.Context, addr, cluster string, d, within time.Duration) ([]FastForwardResult, error) {
	if d < 0 {
		return nil, fmt.Errorf("%w: the duration %v is negative: the broker clock only moves ahead", ErrUsage, d)
	}
	if within <= 0 {
		within = FastForwardTimeout
	}
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []FastForwardResult
	withinMs := within.Milliseconds()
	for _, t := range targets {
		req := newRequest(remoting.ClockFastForward, (&remoting.FastForwardRequestHeader{DurationMs: d.Milliseconds(), TimeoutMs: &withinMs}).Fields(), nil)
		// The broker answers within `within`; the usual request timeout on
		// top covers the way there and back.
		resp, err := a.invokeWithin(ctx, roleBroker, t, req, within+a.opts.Timeout)
		if err != nil {
			return done, err
		}
		if resp.Code != remoting.Success {
			return done, &ResponseError{Role: roleBroker, Addr: t, Request: req.Code, Code: resp.Code, Remark: resp.Remark}
		}
		r := FastForwardResult{BrokerAddr: t}
		rh, err := remoting.DecodeHeader[remoting.FastForwardResponseHeader](resp)
		r.BrokerTime, r.ClockOffsetMs = rh.BrokerTime, rh.ClockOffsetMs
		if err != nil {
			return done, fmt.Errorf("%w: broker %s answered %s: %v", ErrBadBody, t, RequestName(req.Code), err)
		}
		done = append(done, r)
	}
	return done, nil
}

// ParseFastForward reads a fast-forward duration as `rmq admin fastForward
// -d` takes it: a Go duration ("30m", "2h", "1h30m", "90s") or a plain
// number of milliseconds ("1800000"). It must not be negative.
func ParseFastForward(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
			return 0, fmt.Errorf("%w: duration %q is too large", ErrUsage, s)
		}
		d = time.Duration(ms) * time.Millisecond
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%w: duration %q is neither a Go duration (30m, 2h) nor milliseconds", ErrUsage, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: duration %q is negative: the broker clock only moves ahead", ErrUsage, s)
	}
	return d, nil
}
