package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

// Time limits of the process life cycle.
const (
	namesrvBootTimeout = 60 * time.Second
	brokerBootTimeout  = 180 * time.Second // a Java restart over a big store
	stopGrace          = 60 * time.Second
	routeTimeout       = 60 * time.Second
)

var errRoute = errors.New("compare: broker never appeared in the name server's routes")

// cluster is one name server and one broker of a target, on fresh ports, in
// their own directory.
type cluster struct {
	t     *target
	dir   string
	flush string
	extra []string // broker.conf lines after the common ones
	// grpcPort is the gRPC endpoint of workload k (the proxy's for a proxy
	// target), 0 elsewhere.
	grpcPort int
	nsPort   int
	port     int
	ns       *process
	broker   *process
	adm      *admin.Admin
}

func (c *cluster) nsAddr() string     { return fmt.Sprintf("127.0.0.1:%d", c.nsPort) }
func (c *cluster) brokerAddr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// startCluster starts the name server, then the broker, and returns with the
// broker's boot time (process start to its readiness line).
func startCluster(ctx context.Context, t *target, dir, flush string) (*cluster, time.Duration, error) {
	return startClusterConf(ctx, t, dir, flush, nil)
}

// startClusterConf is startCluster with extra broker.conf lines
// ("key=value").
func startClusterConf(ctx context.Context, t *target, dir, flush string, extra []string) (*cluster, time.Duration, error) {
	return startClusterOf(ctx, &cluster{t: t, dir: dir, flush: flush, extra: extra})
}

// startClusterOf starts c's name server and broker in a fresh c.dir.
func startClusterOf(ctx context.Context, c *cluster) (*cluster, time.Duration, error) {
	t, dir := c.t, c.dir
	if err := os.RemoveAll(dir); err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, 0, err
	}
	var err error
	if c.nsPort, err = freePort(); err != nil {
		return nil, 0, err
	}
	if c.port, err = brokerPorts(); err != nil {
		return nil, 0, err
	}
	argv, env, err := t.namesrvArgv(dir, c.nsPort)
	if err != nil {
		return nil, 0, err
	}
	if c.ns, err = startProcess(t.name+" name server", argv, env, dir, filepath.Join(dir, "logs", "namesrv")); err != nil {
		return nil, 0, err
	}
	nsReady, _ := t.readyLines()
	if _, err := c.ns.waitReady(ctx, nsReady, namesrvBootTimeout); err != nil {
		c.close()
		return nil, 0, err
	}
	c.adm = admin.New(admin.Options{NamesrvAddr: c.nsAddr(), Timeout: 10 * time.Second})
	boot, err := c.startBroker(ctx)
	if err != nil {
		c.close()
		return nil, 0, err
	}
	return c, boot, nil
}

// startBroker starts the broker over the existing store and waits for its
// readiness line, then for its registration with the name server.
func (c *cluster) startBroker(ctx context.Context) (time.Duration, error) {
	argv, env, err := c.t.brokerArgv(c.dir, c.nsPort, c.port, c.flush, c.extra)
	_, ready := c.t.readyLines()
	if c.t.proxy {
		argv, env, err = c.t.proxyArgv(c.dir, c.nsPort, c.port, c.grpcPort, c.flush, c.extra)
		ready = proxyReady
	}
	if err != nil {
		return 0, err
	}
	if c.broker, err = startProcess(c.t.name+" broker", argv, env, c.dir, filepath.Join(c.dir, "logs", "broker")); err != nil {
		return 0, err
	}
	boot, err := c.broker.waitReady(ctx, ready, brokerBootTimeout)
	if err != nil {
		return 0, err
	}
	return boot, c.waitRegistered(ctx)
}

// waitRegistered polls the name server until it lists the broker.
func (c *cluster) waitRegistered(ctx context.Context) error {
	deadline := time.Now().Add(routeTimeout)
	for time.Now().Before(deadline) {
		ci, err := c.adm.ClusterInfo(ctx)
		if err == nil {
			for _, bd := range ci.BrokerAddrTable {
				for _, a := range bd.BrokerAddrs {
					if a == c.brokerAddr() {
						return nil
					}
				}
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %s", errRoute, c.brokerAddr())
}

// restartBroker stops the broker with SIGTERM and starts it again over the
// same store; it returns the stop and the boot time.
func (c *cluster) restartBroker(ctx context.Context) (stop, boot time.Duration, err error) {
	stop = c.broker.stop(stopGrace)
	boot, err = c.startBroker(ctx)
	return stop, boot, err
}

// createTopic creates topic with 8 read and write queues on the broker and
// waits until the name server routes it.
func (c *cluster) createTopic(ctx context.Context, topic string) error {
	spec := admin.TopicSpec{TopicName: topic, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
	if _, err := c.adm.UpdateTopic(ctx, spec, c.brokerAddr(), ""); err != nil {
		return fmt.Errorf("compare: create topic %s on %s: %w", topic, c.t.name, err)
	}
	deadline := time.Now().Add(routeTimeout)
	for {
		rd, err := c.adm.Route(ctx, topic)
		if err == nil && len(admin.PublishQueues(topic, rd)) == 8 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: topic %s: %v", errRoute, topic, err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// route returns the queues of topic.
func (c *cluster) route(ctx context.Context, topic string) ([]admin.QueueAddr, error) {
	rd, err := c.adm.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	return admin.PublishQueues(topic, rd), nil
}

// stored is the number of messages topic's queues hold: their max offsets
// summed.
func (c *cluster) stored(ctx context.Context, topic string) (int64, error) {
	queues, err := c.route(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range queues {
		m, err := c.adm.MaxOffset(ctx, q)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

func (c *cluster) close() {
	if c.adm != nil {
		c.adm.Close()
	}
	if c.broker != nil {
		c.broker.stop(stopGrace)
	}
	if c.ns != nil {
		c.ns.stop(stopGrace)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// serialize is the header type the in-process driver sends with: the binary
// type, as the stock benchmark tools and `rmq bench` use.
const serialize = remoting.SerializeRocketMQ
