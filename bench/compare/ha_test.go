package main

import "testing"

// Workload l needs replication on both sides, so it runs (and shows in the
// table) only when -only names it.
func TestHAWorkloadOptIn(t *testing.T) {
	for _, tc := range []struct {
		only     string
		wantRows int
	}{{"", 0}, {"1,2", 0}, {"l", 7}, {"1,l", 7}} {
		cfg, err := parseFlags([]string{"-only", tc.only})
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{cfg: cfg}
		n := 0
		r.haRows(nil, func(wl, metric, unit string, peer *target, k string, g goal) { n++ })
		if n != tc.wantRows {
			t.Errorf("-only %q: %d workload l rows, want %d", tc.only, n, tc.wantRows)
		}
	}
}
