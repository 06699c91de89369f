package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Repeated runs (-runs N). The selected workloads run N times, each run
// rmq then Java as in a single run, every run on fresh brokers. Each run's
// measures are kept apart; the table shows, per metric and broker, the
// median of the N values. Targets are "ratios in one run; each must hold at
// the median of three runs, not at the best one" (issue 18): a row's ratio
// is the median of the N ratios each run makes of its own rmq and Java
// values (runRatios), not the ratio of the two medians, which would divide
// one run's rmq figure by another run's Java figure; a value computed from
// several measures (e's cost at 1 M over at 1 k pending) is likewise the
// median of each run's own. The report's details list the N raw values
// beside each median, and the N ratios of every row with a target.

// beginRun starts run i (from 0) of n: measures and notes made from now on
// belong to it.
func (r *runner) beginRun(i, n int) {
	if n > 1 {
		r.logf("run %d of %d", i+1, n)
	}
	r.m = map[string]measures{}
	r.runNotes = len(r.notes)
}

// endRun keeps the measures of run i of n and, when there are several
// runs, marks the notes the run made with its number.
func (r *runner) endRun(i, n int) {
	r.runs = append(r.runs, r.m)
	if n > 1 {
		for k := r.runNotes; k < len(r.notes); k++ {
			r.notes[k] = fmt.Sprintf("run %d: %s", i+1, r.notes[k])
		}
	}
}

// aggregateRuns makes r.m the medians of the runs' measures.
func (r *runner) aggregateRuns() {
	r.m = medianMeasures(r.runs)
}

// medianMeasures is, for every target and key measured in any run, the
// median of the values of the runs that measured it.
func medianMeasures(runs []map[string]measures) map[string]measures {
	out := map[string]measures{}
	for name, keys := range runValues(runs) {
		out[name] = measures{}
		for k, vs := range keys {
			out[name][k] = median(vs)
		}
	}
	return out
}

// runValues gathers each target's and key's values run by run; a run that
// did not measure a key has NaN in its place.
func runValues(runs []map[string]measures) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	for i, run := range runs {
		for name, ms := range run {
			if out[name] == nil {
				out[name] = map[string][]float64{}
			}
			for k, v := range ms {
				vs := out[name][k]
				if vs == nil {
					vs = make([]float64, len(runs))
					for j := range vs {
						vs[j] = math.NaN()
					}
					out[name][k] = vs
				}
				vs[i] = v
			}
		}
	}
	return out
}

// runRatios makes rows, the table of the medians, judge each target on the
// runs' own ratios. build makes the table from r.m, which it sets to each
// run's measures in turn. A row keeps the runs' ratios and rmq values (NaN
// for a run without it); a computed row (no measure key) takes the medians
// of the values each run computed, and a row that must hold in every run (a
// count of lost or early messages: goal.everyRun) the worst run's value.
// Rows are matched by workload, metric and peer.
func (r *runner) runRatios(rows []row, build func() []row) {
	if len(r.runs) < 2 {
		return
	}
	type id struct {
		workload, metric, peer string
		n                      int // occurrence of the same names
	}
	ids := func(rs []row) []id {
		seen := map[id]int{}
		out := make([]id, len(rs))
		for i, x := range rs {
			k := id{x.workload, x.metric, x.peer, 0}
			out[i] = id{x.workload, x.metric, x.peer, seen[k]}
			seen[k]++
		}
		return out
	}
	medians := r.m
	defer func() { r.m = medians }()
	perRun := make([]map[id]row, len(r.runs))
	for i, run := range r.runs {
		r.m = run
		rs := build()
		perRun[i] = make(map[id]row, len(rs))
		for j, k := range ids(rs) {
			perRun[i][k] = rs[j]
		}
	}
	for j, k := range ids(rows) {
		ratios := make([]float64, len(r.runs))
		rv, jv := make([]float64, len(r.runs)), make([]float64, len(r.runs))
		for i := range r.runs {
			ratios[i], rv[i], jv[i] = math.NaN(), math.NaN(), math.NaN()
			if x, ok := perRun[i][k]; ok {
				ratios[i], rv[i], jv[i] = x.ratio(), x.rmq, x.java
			}
		}
		rows[j].runRatios, rows[j].runRMQ = ratios, rv
		if rows[j].key == "" {
			rows[j].rmq, rows[j].java = median(rv), median(jv)
		}
		if rows[j].goal.everyRun {
			rows[j].rmq = worst(rv)
		}
	}
}

// worst is the largest of the values that are not NaN (NaN when there are
// none): a count that must be zero in every run.
func worst(vs []float64) float64 {
	out := math.NaN()
	for _, v := range vs {
		if !math.IsNaN(v) && (math.IsNaN(out) || v > out) {
			out = v
		}
	}
	return out
}

// runRatioLines lists, for the report, the runs' ratios of every row with
// a target ("" for a single run).
func runRatioLines(rows []row) string {
	var b strings.Builder
	for _, x := range rows {
		if x.runRatios == nil || x.goal.met == nil {
			continue
		}
		// A target on rmq's own value lists that value, else the ratio.
		vs, format, mid := x.runRatios, fmtRatio, x.ratio()
		if x.goal.abs {
			vs, format, mid = x.runRMQ, fmtValue, x.rmq
		}
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = format(v)
		}
		fmt.Fprintf(&b, "%s | %s: %s, median %s (%s)\n", x.workload, x.metric, strings.Join(parts, ", "), format(mid), x.verdict())
	}
	return b.String()
}

// median is the middle of the values that are not NaN (the mean of the two
// middle ones for an even count), NaN when there are none.
func median(vs []float64) float64 {
	xs := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	mid := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[mid]
	}
	return (xs[mid-1] + xs[mid]) / 2
}

// rawRunValues is the list of a key's values, run by run, for the report
// ("" for a single run).
func (r *runner) rawRunValues(name, key string) string {
	if len(r.runs) < 2 {
		return ""
	}
	vs := runValues(r.runs)[name][key]
	parts := make([]string, len(vs))
	for i, v := range vs {
		if math.IsNaN(v) {
			parts[i] = "—"
		} else {
			parts[i] = fmt.Sprintf("%.4g", v)
		}
	}
	return "runs: " + strings.Join(parts, ", ")
}

// runsLine describes -runs for the report's header ("" for a single run).
func (r *runner) runsLine() string {
	if len(r.runs) < 2 {
		return ""
	}
	return fmt.Sprintf("- Runs: %d of every workload (rmq and Java interleaved, fresh brokers each); each value in the table is the median of the %d; each ratio is the median of the %d runs' own ratios (rmq over Java of the same run), and targets are judged on it; every run's value and ratio is in the raw numbers below\n",
		len(r.runs), len(r.runs), len(r.runs))
}
