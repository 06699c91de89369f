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
	"runtime"
	"time"
)

// yieldInterval is how long an epoll loop may go without yielding: the one
// change rmq makes to gnet (third_party/gnet/RMQ.md).
//
// Upstream yields (runtime.Gosched) every time a non-blocking epoll_wait finds
// nothing, before the blocking one. With a P idle, every such yield puts the
// loop on the global run queue and wakes an idle M, which takes it while
// this M sleeps: a futex wake and a futex sleep per round trip
// of a paced client, about 15 % of rmq's broker CPU at 10 000 messages a
// second. Never yielding is no better: the runtime's sysmon then sees the
// loop on one scheduling tick for 10 ms, preempts it or retakes its P from
// the epoll_wait, and stays awake at its 20 µs period afterwards. Yielding at
// most once per interval keeps the loop's tick moving well inside sysmon's
// 10 ms and costs a few hundred yields a second instead of one per wake-up.
const yieldInterval = 2 * time.Millisecond

// yielder yields for a loop that is about to block, at most once per
// yieldInterval. The zero value yields at its first call.
type yielder struct {
	last time.Time
	// gosched is runtime.Gosched; tests count the calls.
	gosched func()
}

// beforeBlock is called when a non-blocking poll found no event, with the
// current time (a reading that went back counts as the interval passed).
func (y *yielder) beforeBlock(now time.Time) {
	// The zero last is far enough back: Sub saturates at the maximum.
	if d := now.Sub(y.last); d >= 0 && d < yieldInterval {
		return
	}
	y.last = now
	if y.gosched != nil {
		y.gosched()
		return
	}
	runtime.Gosched()
}
