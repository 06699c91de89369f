package main

import (
	"context"
	"sync"
	"time"

	"github.com/rmqio/rmq/admin"
)

// The stock Consumer prints one TPS figure per 10-second window, the first
// of which holds its JVM start and first rebalance. Once a drain of the
// backlog fits in about one window on both brokers, its best window says
// little more than "backlog / 10 s". The drain is therefore also timed from
// the broker side: the push consumer reports its consumed offset in every
// pull (the commitOffset of the pull header), and GET_CONSUME_STATS returns
// those offsets, so sampling it often gives the drain's progress to a
// fraction of a second, the same way on both brokers.

// drainProbePeriod is how often the group's offsets are sampled.
const drainProbePeriod = 100 * time.Millisecond

// offsetSample is a group's progress at one moment: the messages it has
// consumed (committed offsets summed over the queues) and those stored
// (the queues' max offsets summed).
type offsetSample struct {
	at               time.Time
	consumed, stored int64
}

// probeOffsets samples group's consume stats on topic every period until
// the returned stop is called; stop returns the samples. A failed sample
// (the group not yet known to the broker) is skipped.
func probeOffsets(ctx context.Context, adm *admin.Admin, group, topic string, period time.Duration) (stop func() []offsetSample) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		samples []offsetSample
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			cs, err := adm.ConsumeStats(ctx, group, topic)
			if err != nil {
				continue
			}
			s := offsetSample{at: time.Now()}
			for _, q := range cs.Queues {
				s.consumed += q.ConsumerOffset
				s.stored += q.BrokerOffset
			}
			samples = append(samples, s)
		}
	}()
	return func() []offsetSample {
		cancel()
		wg.Wait()
		return samples
	}
}

// drainRate is the rate, in messages per second, at which the consumed
// count went from the fraction lo to the fraction hi of what was stored:
// between the first samples at or past each mark, which leaves out the
// start (rebalance, first pulls) and the tail (the last commits). ok is
// false when the samples do not reach both marks at different times.
func drainRate(samples []offsetSample, lo, hi float64) (rate float64, ok bool) {
	if len(samples) == 0 {
		return 0, false
	}
	total := samples[len(samples)-1].stored
	var from, to *offsetSample
	for i := range samples {
		s := &samples[i]
		if from == nil && float64(s.consumed) >= lo*float64(total) {
			from = s
		}
		if float64(s.consumed) >= hi*float64(total) {
			to = s
			break
		}
	}
	if total <= 0 || from == nil || to == nil || !to.at.After(from.at) {
		return 0, false
	}
	return float64(to.consumed-from.consumed) / to.at.Sub(from.at).Seconds(), true
}
