// Copyright (c) 2026 The rmq authors
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//go:build linux

package netpoll

import (
	"testing"
	"time"
)

// TestYielderYieldsOncePerInterval drives the yielder with a clock that
// advances by hand: one yield at the first empty poll, none while the
// interval runs, one again when it has passed, so a loop woken every 100 µs
// yields once per interval instead of at every wake-up.
func TestYielderYieldsOncePerInterval(t *testing.T) {
	yields := 0
	y := yielder{gosched: func() { yields++ }}
	now := time.Unix(1_700_000_000, 0)
	y.beforeBlock(now)
	if yields != 1 {
		t.Fatalf("first empty poll: %d yields, want 1", yields)
	}
	for i := 0; i < 19; i++ { // 100 µs apart: 1.9 ms
		now = now.Add(100 * time.Microsecond)
		y.beforeBlock(now)
	}
	if yields != 1 {
		t.Fatalf("within the interval: %d yields, want 1", yields)
	}
	now = now.Add(100 * time.Microsecond) // 2 ms since the yield
	y.beforeBlock(now)
	if yields != 2 {
		t.Fatalf("after the interval: %d yields, want 2", yields)
	}
	// A loop woken every 100 µs for a second yields 500 times, not 10 000.
	for i := 0; i < 10_000; i++ {
		now = now.Add(100 * time.Microsecond)
		y.beforeBlock(now)
	}
	if yields != 2+500 {
		t.Fatalf("a second of wake-ups every 100 µs: %d yields, want 502", yields)
	}
	// A reading that went back (a wall clock stepped) yields at once rather
	// than waiting for the clock to catch up with the last yield.
	now = now.Add(-time.Second)
	y.beforeBlock(now)
	if yields != 2+500+1 {
		t.Fatalf("after a step back: %d yields, want 503", yields)
	}
}
