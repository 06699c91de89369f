package grpcapi

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/topicgroup"
)

// defaultRetryLevels is CustomizedRetryPolicy's default next: the retry
// delays of a group without a policy of its own (1s 5s 10s 30s 1m-10m 20m
// 30m 1h 2h, the delay levels from 1s on).
var defaultRetryLevels = []int64{
	1000, 5000, 10000, 30000,
	60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000, 540000, 600000,
	1200000, 1800000, 3600000, 7200000,
}

// ExponentialRetryPolicy's defaults.
var defaultExponentialRetry = topicgroup.ExponentialRetryPolicy{Initial: 5000, Max: 7200000, Multiplier: 2}

// retryPolicy is a group's GroupRetryPolicy resolved: exponential when exp
// is set, else the customized levels next.
type retryPolicy struct {
	exp  *topicgroup.ExponentialRetryPolicy
	next []int64
}

// groupRetryPolicy is GroupRetryPolicy.getRetryPolicy of cfg's policy (nil
// cfg or policy: the default customized one).
func groupRetryPolicy(cfg *topicgroup.SubscriptionGroupConfig) retryPolicy {
	var p *topicgroup.GroupRetryPolicy
	if cfg != nil {
		p = cfg.GroupRetryPolicy
	}
	switch {
	case p == nil:
		return retryPolicy{next: defaultRetryLevels}
	case p.Type == "EXPONENTIAL":
		if p.Exponential == nil {
			e := defaultExponentialRetry
			return retryPolicy{exp: &e}
		}
		return retryPolicy{exp: p.Exponential}
	case p.Customized == nil:
		return retryPolicy{next: defaultRetryLevels}
	default:
		return retryPolicy{next: p.Customized.Next}
	}
}

// nextDelay is RetryPolicy.nextDelayDuration: the delay before the retry of
// a message consumed reconsumeTimes times before. Customized levels are
// indexed from reconsumeTimes+2 (the old delay levels started at 1 and
// retries at level 3); false when a customized policy lists no level (the
// proxy fails there and leaves the message as it is).
func (p retryPolicy) nextDelay(reconsumeTimes int32) (time.Duration, bool) {
	reconsumeTimes = max(reconsumeTimes, 0)
	if p.exp != nil {
		d := p.exp.Initial
		for range min(reconsumeTimes, 32) {
			if d >= p.exp.Max {
				break
			}
			d *= p.exp.Multiplier
		}
		return time.Duration(min(d, p.exp.Max)) * time.Millisecond, true
	}
	if len(p.next) == 0 {
		return 0, false
	}
	i := min(int(reconsumeTimes)+2, len(p.next)-1)
	return time.Duration(p.next[i]) * time.Millisecond, true
}

// backoff is the consumer backoff the Settings answer carries for the group
// (GrpcClientSettingsManager.mergeSubscriptionData): maxAttempts, then the
// policy as ExponentialBackoff or CustomizedBackoff.
func (p retryPolicy) backoff(maxAttempts int32) *v2.RetryPolicy {
	ms := func(v int64) *durationpb.Duration { return durationpb.New(time.Duration(v) * time.Millisecond) }
	if p.exp != nil {
		return &v2.RetryPolicy{MaxAttempts: maxAttempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: ms(p.exp.Initial), Max: ms(p.exp.Max), Multiplier: float32(p.exp.Multiplier)},
		}}
	}
	next := make([]*durationpb.Duration, len(p.next))
	for i, v := range p.next {
		next[i] = ms(v)
	}
	return &v2.RetryPolicy{MaxAttempts: maxAttempts, Strategy: &v2.RetryPolicy_CustomizedBackoff{
		CustomizedBackoff: &v2.CustomizedBackoff{Next: next},
	}}
}
