package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// reporter prints one progress line per interval until stopped.
type reporter struct {
	o     *Options
	st    *stats
	start time.Time
	last  struct{ sent, recv, fail int64 }
}

func (r *reporter) run(ctx context.Context) {
	if r.o.Out == nil || r.o.ReportInterval < 0 {
		return
	}
	t := time.NewTicker(r.o.ReportInterval)
	defer t.Stop()
	prev := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.line(now.Sub(prev))
			prev = now
		}
	}
}

func (r *reporter) line(span time.Duration) {
	st, secs := r.st, span.Seconds()
	sent, recv, fail := st.sent.count.Load(), st.recv.count.Load(), st.errorCount()
	sendLat, recvLat := st.sent.rollInterval(), st.recv.rollInterval()
	late := st.lateInterval.Swap(&Histogram{})
	var b strings.Builder
	fmt.Fprintf(&b, "[%5.0fs]", time.Since(r.start).Seconds())
	if r.o.Mode != ModeConsume {
		fmt.Fprintf(&b, " sent %d (%.0f/s)", sent, float64(sent-r.last.sent)/secs)
	}
	if r.o.Mode != ModeProduce {
		n := recv
		if r.o.Mode == ModeTimer {
			n = st.runRecv.Load()
		}
		fmt.Fprintf(&b, " received %d (%.0f/s)", n, float64(recv-r.last.recv)/secs)
	}
	fmt.Fprintf(&b, " errors %d", fail-r.last.fail)
	lat := sendLat
	if r.o.Mode == ModeConsume {
		lat = recvLat
	}
	p := lat.Percentiles()
	fmt.Fprintf(&b, " | latency p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms", p.P50, p.P99, p.P999, p.Max)
	if r.o.Mode == ModeTimer {
		lp := late.Percentiles()
		fmt.Fprintf(&b, " | lateness p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms", lp.P50, lp.P99, lp.P999, lp.Max)
	}
	fmt.Fprintln(r.o.Out, b.String())
	r.last.sent, r.last.recv, r.last.fail = sent, recv, fail
}

// Print writes the final summary.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "=== bench %s: topic %s, %.2f s ===\n", s.Mode, s.Topic, s.ElapsedSec)
	if s.Mode != ModeConsume {
		fmt.Fprintf(w, "%-11s %d ok, %d failed, %.1f msg/s, %.2f MiB/s\n", "sent:", s.Sent, s.SendFailed, s.SendTps, s.SendMiBps)
	}
	if s.Mode != ModeProduce {
		fmt.Fprintf(w, "%-11s %d, %.1f msg/s, %.2f MiB/s\n", "received:", s.Received, s.RecvTps, s.RecvMiBps)
	}
	what := "send"
	if s.Mode == ModeConsume {
		what = "pull"
	}
	fmt.Fprintf(w, "%-11s p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (%s round trip, %d samples)\n", "latency:", s.Latency.P50, s.Latency.P99, s.Latency.P999, s.Latency.Max, what, s.Latency.Count)
	if s.Lateness != nil {
		fmt.Fprintf(w, "%-11s p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (%d samples)\n", "lateness:", s.Lateness.P50, s.Lateness.P99, s.Lateness.P999, s.Lateness.Max, s.Lateness.Count)
		fmt.Fprintf(w, "%-11s %d early (at most %.3f ms), %d lost, %d duplicates\n", "delivery:", s.Early, s.MaxEarlyMs, s.Lost, s.Duplicates)
	}
	if len(s.Errors) == 0 {
		fmt.Fprintf(w, "%-11s none\n", "errors:")
		return
	}
	parts := make([]string, 0, len(s.Errors))
	for _, k := range sortedErrors(s.Errors) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, s.Errors[k]))
	}
	fmt.Fprintf(w, "%-11s %s\n", "errors:", strings.Join(parts, ", "))
}
