// Package bench is the load generator behind `rmq bench`. It speaks the
// remoting protocol directly (remoting.Client) so that it measures any
// RocketMQ-compatible broker the same way, the Java broker included.
//
// Sends are pipelined: Connections client connections per broker, each
// with InFlight requests outstanding; a slot sends its next message as soon
// as its answer arrives. Requests are SEND_MESSAGE_V2 with the binary
// (ROCKETMQ) header by default, as the stock benchmark producer sends them.
//
//	produce:  N conns x M in flight --SEND_MESSAGE_V2--> broker(s)
//	consume:  one long poll per queue --PULL_MESSAGE (suspend)--> broker(s)
//	timer:    produce with TIMER_DELIVER_MS = now+delay+U(0,spread)
//	          (or DELAY=level) and consume the topic from its current end;
//	          lateness = receive time - due time
//
// Timer-mode messages carry BENCH_RUN (the run id), BENCH_SEQ (a sequence
// number, to find losses and duplicates) and BENCH_DUE_MS (the due time)
// properties; the consumer ignores other messages on the topic.
//
// A progress line is printed every ReportInterval and Run returns a Summary:
// throughput, latency p50/p99/max, errors by response code and, in timer
// mode, lateness percentiles with the early, lost and duplicate counts.
package bench
