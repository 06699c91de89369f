package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Workload j (issue 17): workload 1 on rmq with the Prometheus endpoint on
// (metricsExporterType=PROM) and scraped every -scrape-interval, against
// the same load with metrics off, in the same run. Each round runs one
// broker of each kind, in the order off, on, then on, off, ... (ABBA), so
// that a drift of the machine's load falls on both sides alike; the spread
// of the off runs is the noise the on/off ratio is read against.

// offTarget is the metrics-off side of workload j in the table and the raw
// numbers (the rmq column is the metrics-on side).
var offTarget = &target{name: "rmq, metrics off"}

// scrapeTimeout bounds one scrape (Prometheus's default scrape_timeout).
const scrapeTimeout = 10 * time.Second

// scraper GETs url every period, as a Prometheus server does.
type scraper struct {
	ok, failed, bytes atomic.Int64
	stop              context.CancelFunc
	done              sync.WaitGroup
}

func startScraper(ctx context.Context, url string, period time.Duration) *scraper {
	sctx, cancel := context.WithCancel(ctx)
	s := &scraper{stop: cancel}
	cl := &http.Client{Timeout: scrapeTimeout}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			s.scrape(sctx, cl, url)
			if sleepCtx(sctx, period) != nil {
				return
			}
		}
	}()
	return s
}

func (s *scraper) scrape(ctx context.Context, cl *http.Client, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		s.failed.Add(1)
		return
	}
	resp, err := cl.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.failed.Add(1)
		}
		return
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.failed.Add(1)
		return
	}
	s.ok.Add(1)
	s.bytes.Add(n)
}

func (s *scraper) close() {
	s.stop()
	s.done.Wait()
}

// sendRound is one measured run of workload j.
type sendRound struct {
	metrics     bool
	tps, tpcpu  float64
	p99         float64
	scrapes     int64
	scrapeFails int64
	scrapeBytes int64
}

// metricsPhase runs workload j: -metrics-rounds rounds of one broker with
// metrics off and one with them on.
func (r *runner) metricsPhase(ctx context.Context, rmq *target) error {
	var rounds []sendRound
	for i := range r.cfg.metricsRounds {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, on := range order {
			sr, err := r.metricsRound(ctx, rmq, on)
			if err != nil {
				return err
			}
			rounds = append(rounds, sr)
		}
	}
	var on, off []sendRound
	for _, sr := range rounds {
		if sr.metrics {
			on = append(on, sr)
		} else {
			off = append(off, sr)
		}
	}
	mean := func(rs []sendRound, f func(sendRound) float64) float64 {
		var sum float64
		for _, sr := range rs {
			sum += f(sr)
		}
		return sum / float64(len(rs))
	}
	// spread is (max - min) / mean of a side's runs.
	spread := func(rs []sendRound, f func(sendRound) float64) float64 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, sr := range rs {
			lo, hi = min(lo, f(sr)), max(hi, f(sr))
		}
		return (hi - lo) / mean(rs, f)
	}
	tps := func(sr sendRound) float64 { return sr.tps }
	tpcpu := func(sr sendRound) float64 { return sr.tpcpu }
	p99 := func(sr sendRound) float64 { return sr.p99 }
	for _, side := range []struct {
		t  *target
		rs []sendRound
	}{{rmq, on}, {offTarget, off}} {
		r.set(side.t, "wj.tps", mean(side.rs, tps))
		r.set(side.t, "wj.tpcpu", mean(side.rs, tpcpu))
		r.set(side.t, "wj.p99", mean(side.rs, p99))
		r.set(side.t, "wj.spread.tps", spread(side.rs, tps))
		r.set(side.t, "wj.spread.tpcpu", spread(side.rs, tpcpu))
		for i, sr := range side.rs {
			r.set(side.t, fmt.Sprintf("wj.%d.tps", i+1), sr.tps)
			r.set(side.t, fmt.Sprintf("wj.%d.tpcpu", i+1), sr.tpcpu)
		}
	}
	var scrapes, fails int64
	for _, sr := range on {
		scrapes += sr.scrapes
		fails += sr.scrapeFails
	}
	r.set(rmq, "wj.scrapes", float64(scrapes))
	r.set(rmq, "wj.scrapefail", float64(fails))
	r.logf("metrics on/off: throughput %.0f / %.0f msg/s (%.3f×), %.0f / %.0f msg per CPU-s (%.3f×); off runs spread %.1f %% (throughput), %.1f %% (per CPU-s); %d scrapes, %d failed",
		mean(on, tps), mean(off, tps), mean(on, tps)/mean(off, tps), mean(on, tpcpu), mean(off, tpcpu), mean(on, tpcpu)/mean(off, tpcpu),
		100*spread(off, tps), 100*spread(off, tpcpu), scrapes, fails)
	return nil
}

// metricsRound runs workload 1's load on a fresh rmq broker with metrics on
// or off.
func (r *runner) metricsRound(ctx context.Context, rmq *target, on bool) (sendRound, error) {
	sr := sendRound{metrics: on}
	name := "off"
	var extra []string
	port := 0
	if on {
		name = "on"
		var err error
		if port, err = freePort(); err != nil {
			return sr, err
		}
		extra = []string{"metricsExporterType=PROM", "metricsPromExporterHost=127.0.0.1", fmt.Sprintf("metricsPromExporterPort=%d", port)}
	}
	dir := filepath.Join(r.cfg.workDir, "rmq-metrics-"+name)
	c, _, err := startClusterConf(ctx, rmq, dir, asyncFlush, extra)
	if err != nil {
		return sr, err
	}
	defer func() {
		c.close()
		os.RemoveAll(filepath.Join(dir, "store"))
	}()
	if err := c.createTopic(ctx, topicSend); err != nil {
		return sr, err
	}
	var sc *scraper
	if on {
		sc = startScraper(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), r.cfg.scrapeEvery)
	}
	s, u, err := r.warmProduce(ctx, c)
	if sc != nil {
		sc.close()
		sr.scrapes, sr.scrapeFails, sr.scrapeBytes = sc.ok.Load(), sc.failed.Load(), sc.bytes.Load()
	}
	if err != nil {
		return sr, err
	}
	sr.tps, sr.p99 = s.SendTps, s.Latency.P99
	if u.CPU > 0 {
		sr.tpcpu = float64(s.Sent) / u.CPU.Seconds()
	}
	r.logf("rmq metrics %s: %.0f msg/s, broker CPU %.1f s, %.0f msg per CPU-s, p99 %.2f ms, %d failed; %d scrapes (%d failed, %d KiB each)",
		name, sr.tps, u.CPU.Seconds(), sr.tpcpu, sr.p99, s.SendFailed, sr.scrapes, sr.scrapeFails, sr.scrapeBytes/max(sr.scrapes, 1)>>10)
	if on && sr.scrapes == 0 {
		return sr, fmt.Errorf("compare: workload j: no successful scrape of the metrics endpoint on port %d", port)
	}
	return sr, nil
}
