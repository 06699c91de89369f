package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// goal is a row's target on the ratio rmq / Java, or (abs) on the rmq
// value itself.
type goal struct {
	text string
	met  func(ratio, rmq float64) bool
	abs  bool
	// everyRun judges the worst run, not the median: a message lost or
	// delivered early in any run is a miss (runRatios).
	everyRun bool
}

var (
	atLeast = func(k float64) goal {
		return goal{text: fmt.Sprintf("≥ %g×", k), met: func(r, _ float64) bool { return r >= k }}
	}
	atMost = func(k float64) goal {
		return goal{text: fmt.Sprintf("≤ %g×", k), met: func(r, _ float64) bool { return r <= k }}
	}
	// rmqAtLeast and rmqWithin judge the rmq value, not the ratio.
	rmqAtLeast = func(k float64) goal {
		return goal{text: fmt.Sprintf("rmq ≥ %g", k), met: func(_, rmq float64) bool { return rmq >= k }, abs: true}
	}
	rmqAtMost = func(k float64) goal {
		return goal{text: fmt.Sprintf("rmq ≤ %g", k), met: func(_, rmq float64) bool { return rmq <= k }, abs: true}
	}
	rmqWithin = func(lo, hi float64) goal {
		return goal{text: fmt.Sprintf("rmq %g–%g", lo, hi), met: func(_, rmq float64) bool { return rmq >= lo && rmq <= hi }, abs: true}
	}
	zeroRMQ = goal{text: "rmq 0", met: func(_, rmq float64) bool { return rmq == 0 }, abs: true, everyRun: true}
	noGoal  = goal{}
)

// row is one line of the comparison: a metric measured on rmq and on one
// Java broker in the same run.
type row struct {
	workload string
	metric   string
	unit     string
	rmq      float64 // NaN: not measured
	java     float64
	peer     string // which Java broker the java value comes from
	goal     goal
	// key is the measure key of the rmq value ("": computed); the
	// rocketmq-rust column reads the same key (fillRust).
	key string
	// runRatios are the ratios of each run of several (runRatios in
	// runs.go); nil for a single run.
	runRatios  []float64
	runRMQ     []float64 // the rmq value of each run, beside runRatios
	rust       float64   // NaN: not measured
	hasRust    bool      // the table has the rocketmq-rust columns
	rustFailed bool      // rocketmq-rust failed this row's workload
}

// ratio is rmq / Java, NaN when either side is missing or Java is zero;
// over several runs, the median of the runs' own ratios.
func (r row) ratio() float64 {
	if r.runRatios != nil {
		return median(r.runRatios)
	}
	if math.IsNaN(r.rmq) || math.IsNaN(r.java) || r.java == 0 {
		return math.NaN()
	}
	return r.rmq / r.java
}

// verdict is "yes", "NO" or "" (no goal, or not measurable).
func (r row) verdict() string {
	if r.goal.met == nil || math.IsNaN(r.rmq) {
		return ""
	}
	if r.goal.abs {
		if r.goal.met(r.ratio(), r.rmq) {
			return "yes"
		}
		return "NO"
	}
	q := r.ratio()
	if math.IsNaN(q) {
		// Java zero: a lower-is-better metric at 0 for Java cannot be beaten
		// by a ratio; say so rather than divide.
		return ""
	}
	if r.goal.met(q, r.rmq) {
		return "yes"
	}
	return "NO"
}

func fmtValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func fmtRatio(q float64) string {
	if math.IsNaN(q) {
		return "—"
	}
	if q >= 10 || q < 0.01 && q > 0 {
		return fmt.Sprintf("%.3g×", q)
	}
	return fmt.Sprintf("%.2f×", q)
}

// cells returns the columns of r as text.
func (r row) cells() []string {
	metric := r.metric
	if r.unit != "" {
		metric += " (" + r.unit + ")"
	}
	return []string{r.workload, metric, fmtValue(r.rmq), fmtValue(r.java), r.peer, fmtRatio(r.ratio()), r.goal.text, r.verdict()}
}

var tableHeader = []string{"workload", "metric", "rmq", "Java", "Java broker", "rmq/Java", "target", "met"}

// table returns the header and the cells of rows, with the rocketmq-rust
// columns last when it was run.
func table(rows []row) [][]string {
	rust := withRust(rows)
	head := tableHeader
	if rust {
		head = append(slices.Clone(head), rustHeader...)
	}
	all := [][]string{head}
	for _, r := range rows {
		cs := r.cells()
		if rust {
			cs = append(cs, r.rustCells()...)
		}
		all = append(all, cs)
	}
	return all
}

// numeric reports whether column i of the table is right-aligned.
func numeric(i int) bool { return i >= 2 && i <= 3 || i == 5 || i >= len(tableHeader) }

// writeText prints rows as an aligned plain-text table.
func writeText(w io.Writer, rows []row) {
	all := table(rows)
	width := make([]int, len(all[0]))
	for _, cs := range all {
		for i, c := range cs {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for n, cs := range all {
		var b strings.Builder
		for i, c := range cs {
			pad := width[i] - len([]rune(c))
			if numeric(i) {
				b.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", pad))
			}
			if i < len(cs)-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if n == 0 {
			fmt.Fprintln(w, strings.Repeat("-", sum(width)+2*(len(width)-1)))
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// writeMarkdown prints rows as a Markdown table.
func writeMarkdown(w io.Writer, rows []row) {
	all := table(rows)
	fmt.Fprintf(w, "| %s |\n", strings.Join(all[0], " | "))
	seps := make([]string, len(all[0]))
	for i := range seps {
		seps[i] = "---"
		if numeric(i) {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, cs := range all[1:] {
		for i := range cs {
			cs[i] = strings.ReplaceAll(cs[i], "|", "\\|")
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cs, " | "))
	}
}
