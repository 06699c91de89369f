// Package bench holds end-to-end benchmarks that run an in-process name
// server and broker with the stock Go client. They are not part of
// `go test ./...` (which runs no benchmarks); each benchmark names its command.
//
// BenchmarkDelayLateness measures how late delay-level messages arrive:
//
//	producer ──born──▶ broker: SCHEDULE_TOPIC_XXXX record stored at S (queue level−1)
//	                           due at S + delay ──▶ re-stored on the real topic at D
//	                                                        │ wakes the parked pull
//	consumer ◀──────────────────────────────────────────────┘ received at R
//
//	late  = R − (born + delay)   what the application sees (born ≤ S)
//	sched = D − (S + delay)      the broker's own lateness (one clock)
package bench
