package testbroker

import (
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/namesrv"
)

// Cluster is an in-process name server and a broker registered with it, for
// the tests of the tools that find the broker through the name server
// (admin and bench commands, stock clients).
type Cluster struct {
	*Broker
	Namesrv *namesrv.Server
}

// NamesrvAddr is the address clients are given.
func (c *Cluster) NamesrvAddr() string { return c.Namesrv.Addr() }

// BrokerAddr is the broker's address, as the name server routes it.
func (c *Cluster) BrokerAddr() string { return c.Broker.Broker.Addr() }

// StartNamesrv starts a name server on a free 127.0.0.1 port; it stops with
// the test.
func StartNamesrv(t testing.TB) *namesrv.Server {
	t.Helper()
	o := namesrv.DefaultOptions()
	o.ListenHost = "127.0.0.1"
	o.ListenPort = testutil.FreePort(t)
	o.Logger = testlog.New(t)
	ns, err := namesrv.New(o)
	if err != nil {
		t.Fatalf("testbroker: namesrv.New: %v", err)
	}
	if err := ns.Start(); err != nil {
		t.Fatalf("testbroker: namesrv Start: %v", err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// StartCluster starts a name server and a broker with Options(t, mutate)
// that registers with it, and waits until the name server routes TBW102.
// The broker stops before the name server when the test ends.
func StartCluster(t testing.TB, mutate func(*broker.Options)) *Cluster {
	t.Helper()
	ns := StartNamesrv(t)
	o := Options(t, func(o *broker.Options) {
		o.NamesrvAddr = ns.Addr()
		if mutate != nil {
			mutate(o)
		}
	})
	c := &Cluster{Broker: Start(t, o), Namesrv: ns}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		return ns.Routes().TopicRoute(message.TopicAutoCreateKey) != nil
	}, "the broker to register "+message.TopicAutoCreateKey)
	return c
}
