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
//
// integration/ is a module of its own (integration/go.mod, with rmq replaced
// by the checkout), as are bench/compare and integration/container: a user's
// module graph takes in every requirement of rmq's go.mod, test-only ones
// too, so the stock clients, the 5.x SDK and what they pull in are required
// here and not there. The client tests of other packages live here for the
// same reason: namesrvclient (namesrv with the stock admin client),
// rmqtestclient (rmqtest with the stock client) and apiv2sdk (grpcapi/apiv2
// beside the SDK's generated code). `make test` runs every module
// (the Makefile's GO_MODULES); internal/archtest checks that importing
// rmqtest leaves a user's client version alone.
package integration
