package container

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	namesrvPort = "9876/tcp"
	brokerPort  = "10911/tcp"
	vipPort     = "10909/tcp"
	// startTimeout bounds the container start and each client phase.
	startTimeout = 2 * time.Minute
)

// recipeCommand is the command of the Testcontainers recipe, verbatim: its
// first line is a shebang that sh -c reads as a comment.
const recipeCommand = "#!/bin/bash\n./mqnamesrv &\n./mqbroker -n localhost:9876"

func image() string {
	if img := os.Getenv("RMQ_IMAGE"); img != "" {
		return img
	}
	return "rmq:latest"
}

// setDefaultEnv sets what testcontainers-go reads from the environment,
// unless the caller did: no Ryuk (it would be pulled from a registry), and
// the host the loopback-published ports are reached on (where /.dockerenv
// exists testcontainers-go would take the bridge gateway instead).
func setDefaultEnv(t *testing.T) {
	for k, v := range map[string]string{
		"TESTCONTAINERS_RYUK_DISABLED": "true",
		"TESTCONTAINERS_HOST_OVERRIDE": "localhost",
	} {
		if _, ok := os.LookupEnv(k); !ok {
			t.Setenv(k, v)
		}
	}
}

// startRecipe starts the image as the recipe does and runs its
// updateBrokerConfig calls; it returns the name server address as the host
// sees it and the mapped broker port.
func startRecipe(t *testing.T, ctx context.Context) (namesrv string, host string, mappedBroker int) {
	t.Helper()
	setDefaultEnv(t)
	testcontainers.SkipIfProviderIsNotHealthy(t)
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		t.Skipf("container test skipped: no Docker provider: %v", err)
	}
	defer provider.Close()
	if _, err := provider.Client().ImageInspect(ctx, image()); err != nil {
		t.Skipf("container test skipped: image %s not found locally (run make image): %v", image(), err)
	}

	req := testcontainers.ContainerRequest{
		Image:        image(),
		ExposedPorts: []string{namesrvPort, brokerPort, vipPort},
		// Published on loopback only, each on a port Docker picks.
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{}
			for _, p := range []string{namesrvPort, brokerPort, vipPort} {
				hc.PortBindings[network.MustParsePort(p)] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1")}}
			}
		},
		Cmd: []string{"sh", "-c", recipeCommand},
		WaitingFor: wait.ForAll(
			wait.ForListeningPort(namesrvPort), wait.ForListeningPort(brokerPort), wait.ForListeningPort(vipPort),
		).WithDeadline(startTimeout),
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start %s: %v", image(), err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if logs, err := c.Logs(context.Background()); err == nil {
			b, _ := io.ReadAll(logs)
			t.Logf("container log:\n%s", b)
		}
	})

	host, err = c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := c.MappedPort(ctx, namesrvPort)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := c.MappedPort(ctx, brokerPort)
	if err != nil {
		t.Fatal(err)
	}
	update := func(key string, value any) string {
		return fmt.Sprintf("./mqadmin updateBrokerConfig -b localhost:10911 -k %s -v %v", key, value)
	}
	cmd := strings.Join([]string{update("brokerIP1", host), update("listenPort", int(bp.Num())), update("brokerPermission", 6)}, " && ")
	code, out, err := c.Exec(ctx, []string{"/bin/sh", "-c", cmd})
	if err != nil {
		t.Fatalf("exec updateBrokerConfig: %v", err)
	}
	if code != 0 {
		b, _ := io.ReadAll(out)
		t.Fatalf("updateBrokerConfig exited %d:\n%s", code, b)
	}
	// The Go client takes name server addresses as IP:port only.
	nsHost := host
	if ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", host); err == nil && len(ips) > 0 {
		nsHost = ips[0].String()
	}
	return net.JoinHostPort(nsHost, strconv.Itoa(int(ns.Num()))), host, int(bp.Num())
}

// offsetMsgIDHost decodes the store host of an offsetMsgId (16 bytes in
// hex: IPv4 address, port, commitlog offset).
func offsetMsgIDHost(t *testing.T, id string) string {
	t.Helper()
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		t.Fatalf("offsetMsgId %q: %v", id, err)
	}
	return net.JoinHostPort(net.IP(b[:4]).String(), strconv.Itoa(int(binary.BigEndian.Uint32(b[4:8]))))
}

func TestRecipeProduceConsume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*startTimeout)
	defer cancel()
	namesrv, host, mappedBroker := startRecipe(t, ctx)
	rlog.SetLogLevel("error")
	ns := primitive.NewPassthroughResolver([]string{namesrv})
	const topic, count = "ContainerGoTopic", 20

	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("container_go_producer"),
		producer.WithInstanceName("container-go-producer"), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	want := make(map[string]bool)
	for i := range count {
		body := fmt.Sprintf("container-go-%d", i)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v", i, res)
		}
		// The store host is the advertised address: brokerIP1 resolved in
		// the container (localhost is 127.0.0.1 there too) and the mapped port.
		if got := offsetMsgIDHost(t, res.OffsetMsgID); !strings.HasSuffix(got, ":"+strconv.Itoa(mappedBroker)) {
			t.Fatalf("offsetMsgId %s carries %s, want the mapped port %d (host %s)", res.OffsetMsgID, got, mappedBroker, host)
		}
		want[body] = true
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		got  = make(map[string]bool)
		done = make(chan struct{})
	)
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("container_go_consumer"),
		consumer.WithInstance("container-go-consumer"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = true
		}
		if len(got) == count {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("consumed %d of %d messages through %s", len(got), count, namesrv)
	}
	mu.Lock()
	defer mu.Unlock()
	for body := range want {
		if !got[body] {
			t.Errorf("message %q not consumed", body)
		}
	}
}
