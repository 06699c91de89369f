// Package integration holds end-to-end tests (its _test.go files only) that
// drive the stock Go client, github.com/apache/rocketmq-client-go/v2, and raw
// remoting frames against a real `rmq standalone` process run by
// rmq/integration/harness.
//
// TestMain builds ./cmd/rmq once. Most tests share one standalone process,
// started on first use and stopped with SIGTERM at the end (it must exit 0);
// they isolate themselves with unique topic and group names. The restart and
// crash tests start their own process. With -short every test is skipped.
//
//	test ──stock Go client──► name server 127.0.0.1:NP ─┐
//	     ──stock Go client──► broker 127.0.0.1:BP ◄──────┘ (registration)
//	     ──remoting.Client──► NP, BP and BP-2 (raw frames)
//
// The Go client's data race in its orderly consumer (process_queue.go) makes
// -race unusable for this package; the harness package is race-clean.
package integration
