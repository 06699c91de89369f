// Package testbroker starts in-process brokers, alone or registered with an
// in-process name server (StartCluster), for the tests of the broker's
// subpackages and of the packages above it. Package broker's own tests
// cannot import it (it imports broker); they keep their harness in
// broker/testutil_test.go and share the request helpers of brokertest.
package testbroker

import (
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
)

// Broker is a running broker with a client of it.
type Broker struct {
	*broker.Broker
	*brokertest.Client
	T    testing.TB
	Opts broker.Options
}

// Options are broker.DefaultOptions with small store files under
// t.TempDir(), free 127.0.0.1 ports and no name server, and without the
// stock fast failure (brokerFastFailureEnable): on a loaded 2-core runner a
// pooled send can sit 200 ms behind a topic creation, and a test of
// something else would see SYSTEM_BUSY. Tests of back-pressure turn it on
// (or use a manual clock); mutate adjusts them.
func Options(t testing.TB, mutate func(*broker.Options)) broker.Options {
	t.Helper()
	o := broker.DefaultOptions()
	o.StorePathRootDir = t.TempDir()
	o.ListenHost = "127.0.0.1"
	o.BrokerIP1 = "127.0.0.1"
	o.ListenPort = testutil.FreePortPair(t)
	o.MappedFileSizeCommitLog = 1 << 20
	o.MappedFileSizeConsumeQueue = 20 * 1024
	o.MaxMessageSize = 64 << 10
	o.Logger = testlog.New(t)
	o.BrokerFastFailureEnable = false
	if mutate != nil {
		mutate(&o)
	}
	return o
}

// Start starts a broker with exactly o; it stops with the test.
func Start(t testing.TB, o broker.Options) *Broker {
	t.Helper()
	b, err := broker.New(o)
	if err != nil {
		t.Fatalf("testbroker: New: %v", err)
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		t.Fatalf("testbroker: Start: %v", err)
	}
	tb := &Broker{Broker: b, Client: brokertest.NewClient(t, b.Addr()), T: t, Opts: o}
	t.Cleanup(tb.Stop)
	return tb
}

// Stop closes the client and shuts the broker down; calling it again is
// harmless.
func (b *Broker) Stop() {
	b.Client.Close()
	if err := b.Shutdown(); err != nil {
		b.T.Errorf("testbroker: Shutdown: %v", err)
	}
}

// Restart stops the broker and starts a new one on the same store directory
// and port.
func (b *Broker) Restart() *Broker {
	b.T.Helper()
	b.Stop()
	return Start(b.T, b.Opts)
}

// WaitDispatched waits until every stored message is in its consume queue
// (dispatch is asynchronous, as in the stock store).
func (b *Broker) WaitDispatched() {
	b.T.Helper()
	testutil.WaitFor(b.T, testutil.DefaultTimeout, func() bool { return b.Store().DispatchBehind() == 0 }, "dispatch to catch up")
}
