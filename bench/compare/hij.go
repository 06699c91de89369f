package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// issue14Phases runs workloads h and i on rmq and on the Java 4.x broker
// (targets), one broker at a time.
func (r *runner) issue14Phases(ctx context.Context, targets []*target) error {
	for _, t := range targets {
		if r.cfg.has("h") {
			if err := r.sqlPhase(ctx, t); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	if r.cfg.has("i") {
		if err := r.replyPhase(ctx, targets); err != nil {
			return err
		}
	}
	if len(targets) > 1 && r.cfg.has("h") {
		a, b := r.sqlSets[targets[0].name], r.sqlSets[targets[1].name]
		if a != nil && b != nil {
			r.set(targets[0], "wh.setdiff", float64(a.diff(b)))
			r.note("workload h: delivered set digests %s %s, %s %s (SHA-256 of the bitmap of delivered sequence numbers); %d messages delivered by only one of them",
				targets[0].name, a.digest(), targets[1].name, b.digest(), a.diff(b))
		}
	}
	return nil
}

// issueRows are the table rows of workloads h, i and j.
func (r *runner) issueRows(rmq, j4 *target, get func(*target, string) float64,
	same func(wl, metric, unit string, peer *target, k string, g goal),
	val func(wl, metric, unit string, peer *target, rv, jv float64, g goal)) {
	wh := fmt.Sprintf("h SQL92 filter drains a %d-message backlog", r.cfg.sqlBacklog)
	same(wh, "filtered msgs delivered per broker CPU-second", "msg/CPU-s", j4, "wh.tpcpu", atLeast(2))
	same(wh, "delivered per second", "msg/s", j4, "wh.tps", noGoal)
	same(wh, "delivered", "msgs", j4, "wh.delivered", noGoal)
	same(wh, "expected (client-side evaluation)", "msgs", j4, "wh.expected", noGoal)
	same(wh, "delivered not matching the filter", "msgs", j4, "wh.wrong", zeroRMQ)
	same(wh, "duplicates", "msgs", j4, "wh.dups", noGoal)
	val(wh, "delivered by only one broker (set difference)", "msgs", j4, get(rmq, "wh.setdiff"), math.NaN(), zeroRMQ)
	same(wh, "pull requests", "", j4, "wh.pulls", noGoal)
	same(wh, "broker CPU", "s", j4, "wh.cpu", noGoal)
	same(wh, "peak RSS", "MiB", j4, "wh.rss", noGoal)

	wi := fmt.Sprintf("i request-reply at %.0f/s, %d rounds pooled", r.cfg.replyRate, r.cfg.replyRounds)
	same(wi, "round trip p50", "ms", j4, "wi.p50", noGoal)
	same(wi, "round trip p99", "ms", j4, "wi.p99", atMost(0.5))
	for k := range r.cfg.replyRounds {
		same(wi, fmt.Sprintf("round trip p99, round %d alone", k+1), "ms", j4, fmt.Sprintf("wi.%d.p99", k+1), noGoal)
	}
	same(wi, "round trip p99.9", "ms", j4, "wi.p999", noGoal)
	same(wi, "round trip max", "ms", j4, "wi.max", noGoal)
	same(wi, "replies", "", j4, "wi.replied", noGoal)
	same(wi, "requests without reply within "+replyTTL.String(), "", j4, "wi.timeout", zeroRMQ)
	same(wi, "failed sends", "", j4, "wi.failed", noGoal)
	same(wi, "broker CPU", "s", j4, "wi.cpu", noGoal)

	wj := "j workload 1, metrics on (PROM, scraped every " + r.cfg.scrapeEvery.String() + ") vs off"
	same(wj, "throughput, mean of "+strconv.Itoa(r.cfg.metricsRounds)+" runs each", "msg/s", offTarget, "wj.tps", atLeast(0.95))
	same(wj, "msg per broker CPU-second", "msg/CPU-s", offTarget, "wj.tpcpu", atLeast(0.95))
	same(wj, "send p99", "ms", offTarget, "wj.p99", noGoal)
	same(wj, "run-to-run spread of throughput ((max-min)/mean)", "", offTarget, "wj.spread.tps", noGoal)
	same(wj, "run-to-run spread of msg per CPU-second", "", offTarget, "wj.spread.tpcpu", noGoal)
	val(wj, "successful scrapes of /metrics", "", offTarget, get(rmq, "wj.scrapes"), math.NaN(), noGoal)
}
