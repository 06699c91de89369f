package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const grpcPort = "8081/tcp"

// TestComposeStyleBrokerConf runs the image as the stock compose files and
// docker run lines of apache/rocketmq-docker do: broker.conf bind-mounted at
// /home/rocketmq/rocketmq-<ver>/conf/broker.conf, the name server given by
// NAMESRV_ADDR, `sh mqbroker -c <that path>`. The broker must take the
// mounted file (its brokerName shows in the name server's cluster list), the
// file must be the one ROCKETMQ_HOME's other names see, and the gRPC port
// must be exposed by the image and answer HTTP/2 through its mapping.
func TestComposeStyleBrokerConf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
	defer cancel()
	setDefaultEnv(t)
	testcontainers.SkipIfProviderIsNotHealthy(t)
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		t.Skipf("container test skipped: no Docker provider: %v", err)
	}
	defer provider.Close()
	inspect, err := provider.Client().ImageInspect(ctx, image())
	if err != nil {
		t.Skipf("container test skipped: image %s not found locally (run make image): %v", image(), err)
	}

	// The stock variables, working directory and ports, from the image.
	cfg := inspect.Config
	env := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ver := env["ROCKETMQ_VERSION"]
	home := "/home/rocketmq/rocketmq-" + ver
	if ver == "" || env["ROCKETMQ_HOME"] != home {
		t.Fatalf("image env ROCKETMQ_VERSION=%q ROCKETMQ_HOME=%q, want ROCKETMQ_HOME=/home/rocketmq/rocketmq-${ROCKETMQ_VERSION}", ver, env["ROCKETMQ_HOME"])
	}
	if cfg.WorkingDir != home+"/bin" {
		t.Errorf("image working directory %q, want %s/bin", cfg.WorkingDir, home)
	}
	var exposed []string
	for p := range cfg.ExposedPorts {
		exposed = append(exposed, p)
	}
	for _, p := range []string{namesrvPort, brokerPort, vipPort, grpcPort} {
		if !slices.Contains(exposed, p) {
			t.Errorf("image exposes %v, not %s", exposed, p)
		}
	}

	// A broker.conf as apache/rocketmq-docker's templates have it, with a
	// brokerName no default would give.
	var nonce [4]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		t.Fatal(err)
	}
	brokerName := "broker-compose-" + hex.EncodeToString(nonce[:])
	conf := filepath.Join(t.TempDir(), "broker.conf")
	body := "brokerClusterName = DefaultCluster\nbrokerName = " + brokerName +
		"\nbrokerId = 0\ndeleteWhen = 04\nfileReservedTime = 48\nbrokerRole = ASYNC_MASTER\nflushDiskType = ASYNC_FLUSH\n"
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mounted := home + "/conf/broker.conf"

	ports := []string{namesrvPort, brokerPort, grpcPort}
	req := testcontainers.ContainerRequest{
		Image:        image(),
		ExposedPorts: ports,
		Env:          map[string]string{"NAMESRV_ADDR": "localhost:9876"},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, conf+":"+mounted+":ro")
			hc.PortBindings = network.PortMap{}
			for _, p := range ports {
				hc.PortBindings[network.MustParsePort(p)] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1")}}
			}
		},
		Cmd: []string{"sh", "-c", "sh mqnamesrv &\nsh mqbroker -c " + mounted},
		WaitingFor: wait.ForAll(
			wait.ForListeningPort(namesrvPort), wait.ForListeningPort(brokerPort), wait.ForListeningPort(grpcPort),
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
	exec := func(cmd string) (int, string) {
		t.Helper()
		code, out, err := c.Exec(ctx, []string{"/bin/sh", "-c", cmd})
		if err != nil {
			t.Fatalf("exec %q: %v", cmd, err)
		}
		b, _ := io.ReadAll(out)
		return code, string(b)
	}

	// The broker registers with the name server right after it starts
	// listening: poll the cluster list until it names the mounted brokerName.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := exec("./mqadmin clusterList -n localhost:9876")
		if code == 0 && strings.Contains(out, brokerName) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clusterList does not name %s (exit %d):\n%s", brokerName, code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every stock name of the tree leads to the mounted file.
	for _, p := range []string{"/home/rocketmq/rmq/conf/broker.conf", "/home/rocketmq/rocketmq-4.9.8/conf/broker.conf",
		"/home/rocketmq/rocketmq-5.3.3/conf/broker.conf", "../conf/broker.conf", "$ROCKETMQ_HOME/conf/broker.conf"} {
		if code, out := exec("cat " + p); code != 0 || !strings.Contains(out, "brokerName = "+brokerName) {
			t.Errorf("cat %s: exit %d:\n%s", p, code, out)
		}
	}

	// The stock distribution's pair configs ship where stock has them
	// ($ROCKETMQ_HOME/conf/2m-2s-{sync,async}; docker/layout.sh).
	for p, want := range map[string]string{
		"$ROCKETMQ_HOME/conf/2m-2s-sync/broker-a-s.properties": "brokerRole=SLAVE",
		"$ROCKETMQ_HOME/conf/2m-2s-async/broker-b.properties":  "brokerRole=ASYNC_MASTER",
	} {
		if code, out := exec("cat " + p); code != 0 || !strings.Contains(out, want) {
			t.Errorf("cat %s: exit %d, want %q:\n%s", p, code, want, out)
		}
	}

	// The gRPC port answers an HTTP/2 connection preface (plaintext, which
	// shares the port with TLS) with a SETTINGS frame through its mapping.
	host, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := c.MappedPort(ctx, grpcPort)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2Settings(net.JoinHostPort(host, strconv.Itoa(int(gp.Num())))); err != nil {
		t.Errorf("gRPC port %s (mapped to %d): %v", grpcPort, gp.Num(), err)
	}
}

// h2Settings sends the HTTP/2 client preface and an empty SETTINGS frame
// and expects the server's first frame to be SETTINGS.
func h2Settings(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	// Preface, then a frame header: length 0, type 4 (SETTINGS), flags 0,
	// stream 0.
	preface := append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)
	if _, err := conn.Write(preface); err != nil {
		return err
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return fmt.Errorf("reading the first frame: %w", err)
	}
	if hdr[3] != 4 || !bytes.Equal(hdr[5:9], []byte{0, 0, 0, 0}) {
		return fmt.Errorf("first frame header %x, want SETTINGS on stream 0", hdr)
	}
	return nil
}
