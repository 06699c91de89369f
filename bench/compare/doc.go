// Command compare runs rmq and the stock Java broker side by side on this
// machine and prints one table: metric, rmq, Java, rmq/Java, target, met
// (`make bench-compare`; docs/benchmarks.md has the workloads, settings and
// the last results, which the run rewrites between its markers).
//
// One broker runs at a time, on loopback, on fresh random ports, each with its
// own name server and store directory, from the same broker.conf:
//
//	rmq namesrv + rmq broker ──┐          ┌── Java 4.9.7 namesrv + broker   workloads 1-4, startup
//	                           ├─ load ───┤
//	rmq namesrv + rmq broker ──┘          └── Java 5.3.3 namesrv + broker   workloads 5-7 (timers)
//
//	load:   `rmq bench produce` (separate process)        workloads 1, 2
//	        in-process driver (driver.go): paced or        workloads 3-6
//	        saturating sends with CMP_RUN/CMP_SEQ/CMP_DUE_US,
//	        long-polling consumer, lateness = receipt - due
//	rmq broker (grpcapi) ─ Go 5.x SDK ─ Java 5.3.3 proxy, Local mode    workload k (gRPC)
//	                                    (namesrv + one JVM: broker + proxy)
//	probe:  /proc/<broker pid>/stat (utime+stime) and /status (VmRSS,
//	        RssAnon) every 200 ms over each workload
//
// The Java jars come from Maven Central through peer-pom.xml into
// ~/.cache/rmq-bench-compare/rocketmq-<version>/lib, the proxy's through
// proxy-pom.xml into rocketmq-proxy-<version>/lib. The in-process
// BenchmarkBroker (profile_test.go) runs the load generator against an
// in-process broker for `go test -cpuprofile`.
package main
