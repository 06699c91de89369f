package broker_test

import (
	"fmt"
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/topicgroup"
)

// TestRoutesAfterNameServerRestart: topics are registered as increments
// (only what changed), yet a name server that restarts, and so holds no
// routes, routes every topic as soon as one more is created, not only the
// new one and not only after the next periodic registration.
func TestRoutesAfterNameServerRestart(t *testing.T) {
	port := testutil.FreePort(t)
	start := func() *namesrv.Server {
		o := namesrv.DefaultOptions()
		o.ListenHost = "127.0.0.1"
		o.ListenPort = port
		o.Logger = testlog.New(t)
		ns, err := namesrv.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := ns.Start(); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	ns := start()
	b := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) { o.NamesrvAddr = ns.Addr() }))
	routed := func(ns *namesrv.Server, topics ...string) func() bool {
		return func() bool {
			for _, topic := range topics {
				if ns.Routes().TopicRoute(topic) == nil {
					return false
				}
			}
			return true
		}
	}
	create := func(name string) {
		b.Topics().Update(&topicgroup.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	}
	var topics []string
	for i := range 20 {
		name := fmt.Sprintf("Before%02d", i)
		topics = append(topics, name)
		create(name)
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, routed(ns, topics...), "the topics to be routed")

	ns.Shutdown()
	ns = start()
	t.Cleanup(ns.Shutdown)
	create("After")
	topics = append(topics, "After", message.TopicAutoCreateKey)
	testutil.WaitFor(t, testutil.DefaultTimeout, routed(ns, topics...), "every topic to be routed by the restarted name server")
}
