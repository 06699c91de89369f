package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

const (
	// routeDropTimeout bounds how long the name server keeps routing a dead
	// master: it drops it when the broker's connection closes (stock
	// onChannelDestroy), and at worst when its registration expires.
	routeDropTimeout = 60 * time.Second
	// maxFailedAfterKill bounds the sends that fail once A's master is gone.
	// The Go client v2 has no latency-fault tolerance: a send whose queue is
	// on A fails to connect and is retried (WithRetry(2)) on the other broker
	// name (the round-robin selector skips lastBrokerName), so none should
	// fail. The one window left is a route refresh between the queue choice
	// and the address lookup (FindBrokerAddrByName answers "" and the send
	// returns without a retry); it can cost a send, not many.
	maxFailedAfterKill = 2
)

// TestFailoverSend is issue 44's stock-client check: with a group's master
// down, a producer's sends move to another broker name of the cluster. Group A
// is an rmq master and slave, group B an rmq master alone, both registered on
// A's name server, the topic on both. Before the kill the stock Go producer
// spreads its sends over A and B; after kill -9 of A's master every send
// succeeds (at most maxFailedAfterKill fail) and lands on B, before and after
// the name server drops A's master from the route, and a producer started
// after that sends to B alone; A's slave still serves the messages A
// acknowledged before the kill.
func TestFailoverSend(t *testing.T) {
	skipUnlessEnabled(t)
	a := harness.StartPair(t, harness.PairConfig{
		RMQBin: rmqBin, BrokerName: "ha-broker-a",
		Master: harness.NodeSpec{Impl: harness.ImplRMQ},
		Slave:  harness.NodeSpec{Impl: harness.ImplRMQ, Role: harness.RoleSlave},
		Conf:   []string{"slaveReadEnable=true"},
	})
	b := harness.StartPair(t, harness.PairConfig{
		RMQBin: rmqBin, BrokerName: "ha-broker-b", NamesrvAddr: a.NamesrvAddr(), NoSlave: true,
		Master: harness.NodeSpec{Impl: harness.ImplRMQ},
	})
	topic := uniqueName("failover")
	cl := rawClient(t)
	for _, addr := range []string{a.Master.Addr(), b.Master.Addr()} {
		if err := harness.CreateTopic(cl, addr, topic, queues); err != nil {
			t.Fatal(err)
		}
	}
	waitRoute(t, cl, a.NamesrvAddr(), topic, "routes both groups", func(r *remoting.TopicRouteData) bool {
		return masterOf(r, a.BrokerName()) != "" && masterOf(r, b.BrokerName()) != "" && len(r.QueueDatas) == 2
	})

	prod := newProducer(t, a.NamesrvAddr())
	before, beforeA := sendCounting(t, prod, topic, "up", 40, a.BrokerName())
	if before.failed > 0 || before.on[a.BrokerName()] == 0 || before.on[b.BrokerName()] == 0 {
		t.Fatalf("both groups up: %s; want every send to succeed, on both broker names", before)
	}
	// Everything A acknowledged is on A's slave before the kill (async
	// replication: an acknowledged message may otherwise be lost with the
	// master, which is not what this test checks).
	if _, err := harness.WaitCaughtUp(cl, a.Master.Addr(), a.Slave.Addr(), topic, queues, catchUpTimeout); err != nil {
		t.Fatal(err)
	}
	// A slave serves a topic once it has copied the master's topic config
	// (every 10 s, stock SlaveSynchronize); until then a pull answers
	// TOPIC_NOT_EXIST, and a master killed sooner leaves it unable to.
	harness.WaitFor(t, 30*time.Second, func() error {
		_, err := readIDs(cl, a.Slave.Addr(), topic)
		return err
	})

	if err := a.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The producer learns the new route only on its next poll (every 30 s),
	// so both runs of sends below still pick A's queues half of the time and
	// exercise the retry on the other broker name: with WithRetry(0) half of
	// each run fails ("connection refused"; checked by hand).
	early, _ := sendCounting(t, prod, topic, "down", 40, "")
	dropped := waitRoute(t, cl, a.NamesrvAddr(), topic, "drops A's master", func(r *remoting.TopicRouteData) bool {
		return masterOf(r, a.BrokerName()) == "" && masterOf(r, b.BrokerName()) != ""
	})
	late, _ := sendCounting(t, prod, topic, "after", 40, "")
	// A producer started now reads a route without A's master: the Go
	// client leaves out the queues of a broker name with no master
	// (routeData2PublishInfo), so it never tries A.
	fresh, _ := sendCounting(t, newProducer(t, a.NamesrvAddr()), topic, "fresh", 40, "")
	t.Logf("up: %s; A's master killed: %s; name server dropped it %v after the kill; then: %s; a new producer: %s",
		before, early, dropped.Sub(killed).Round(time.Millisecond), late, fresh)
	if fresh.failed > 0 {
		t.Errorf("a producer started after the route dropped A's master: %d sends failed: %v", fresh.failed, fresh.firstErr)
	}
	for _, c := range []counts{early, late, fresh} {
		if c.on[a.BrokerName()] > 0 {
			t.Errorf("%s: sends acknowledged by broker name %s, whose master is dead", c, a.BrokerName())
		}
	}
	if early.failed+late.failed > maxFailedAfterKill {
		t.Errorf("%d sends failed after the kill, want at most %d (first error: %v)",
			early.failed+late.failed, maxFailedAfterKill, firstErr(early, late))
	}

	// A's slave still serves what A acknowledged before the kill.
	got, err := readIDs(cl, a.Slave.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for q, ids := range beforeA {
		for _, id := range ids {
			if gq, ok := got[id]; !ok || gq != q {
				t.Errorf("%s (acknowledged by A's master on queue %d) is not in that queue on A's slave", id, q)
			}
		}
	}
}

// counts are the outcomes of a run of sends: successes per broker name.
type counts struct {
	on       map[string]int
	failed   int
	firstErr error
}

func (c counts) String() string {
	ok := 0
	for _, n := range c.on {
		ok += n
	}
	return fmt.Sprintf("%d ok by broker name %v, %d failed", ok, c.on, c.failed)
}

func firstErr(cs ...counts) error {
	for _, c := range cs {
		if c.firstErr != nil {
			return c.firstErr
		}
	}
	return nil
}

// sendCounting sends n messages one by one and counts where each landed (the
// SendResult's MessageQueue.BrokerName) or that it failed. It also returns the
// ids acknowledged by broker name keep, per queue.
func sendCounting(t *testing.T, p rocketmq.Producer, topic, prefix string, n int, keep string) (counts, map[int][]string) {
	t.Helper()
	c := counts{on: map[string]int{}}
	onA := map[int][]string{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		m := primitive.NewMessage(topic, []byte(id))
		m.WithProperty(idProp, id)
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err == nil && r.Status != primitive.SendOK {
			err = fmt.Errorf("status %d", r.Status)
		}
		if err != nil {
			c.failed++
			if c.firstErr == nil {
				c.firstErr = fmt.Errorf("send %s: %w", id, err)
			}
			continue
		}
		c.on[r.MessageQueue.BrokerName]++
		if r.MessageQueue.BrokerName == keep {
			onA[r.MessageQueue.QueueId] = append(onA[r.MessageQueue.QueueId], id)
		}
	}
	return c, onA
}

// waitRoute polls the name server's route of topic until ok accepts it and
// returns when it did.
func waitRoute(t *testing.T, cl *remoting.Client, ns, topic, what string, ok func(*remoting.TopicRouteData) bool) time.Time {
	t.Helper()
	harness.WaitFor(t, routeDropTimeout, func() error {
		req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
		resp, err := cl.InvokeTimeout(ns, req, 3*time.Second)
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("route of %s: code %d %q", topic, resp.Code, resp.Remark)
		}
		var r remoting.TopicRouteData
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			return fmt.Errorf("route of %s: %w", topic, err)
		}
		if !ok(&r) {
			return fmt.Errorf("the route of %s never %s: %s", topic, what, resp.Body)
		}
		return nil
	})
	return time.Now()
}

// masterOf is the master address the route gives broker name, or "".
func masterOf(r *remoting.TopicRouteData, name string) string {
	for _, bd := range r.BrokerDatas {
		if bd.BrokerName == name {
			return bd.BrokerAddrs[0]
		}
	}
	return ""
}

// readIDs reads every queue of topic at addr and returns the idProp values,
// each with its queue.
func readIDs(cl *remoting.Client, addr, topic string) (map[string]int, error) {
	ids := map[string]int{}
	for q := 0; q < queues; q++ {
		end, err := harness.MaxOffset(cl, addr, topic, q)
		if err != nil {
			return nil, err
		}
		recs, err := harness.ReadQueue(cl, addr, uniqueName("reader"), topic, q, end)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			m, err := message.DecodeRecord(rec)
			if err != nil {
				return nil, err
			}
			ids[m.Properties[idProp]] = q
		}
	}
	return ids, nil
}
