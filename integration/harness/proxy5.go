package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The stock 5.3.3 proxy in cluster mode (ProxyStartup -pm cluster): a gRPC
// endpoint of its own that reads routes from the name server and forwards
// every request to the brokers over remoting, so a 5.x SDK reaches brokers
// that have no gRPC endpoint (Java 5.3.3 brokers run none without a local
// proxy). It is the deployment the 5.x documentation gives for a cluster
// with controller-mode groups.

// Proxy5Lib returns the directory of the stock 5.3.3 proxy's runtime jars:
// $RMQ_PROXY5_LIB, else the cache bench-compare fills for its workload k
// (~/.cache/rmq-bench-compare/rocketmq-proxy-5.3.3/lib), fetched there with
// bench/compare/proxy-pom.xml on first use.
func Proxy5Lib() (string, error) {
	return mavenLib("RMQ_PROXY5_LIB", "proxy-"+Java5Version, []string{"rocketmq-proxy"},
		filepath.Join("..", "..", "bench", "compare", "proxy-pom.xml"), "-Dpeer.version="+Java5Version)
}

// Client5Version is the 5.x gRPC SDK (rocketmq-client-java, shaded) the
// soaks' Java sender uses, as integration/java's grpc5 profile.
const Client5Version = "5.0.8"

// Client5Lib returns the directory holding the rocketmq-client-java jar:
// $RMQ_CLIENT5_LIB, else ~/.cache/rmq-bench-compare/rocketmq-client-java-
// 5.0.8/lib, filled with integration/soak/grpcsender/pom.xml on first use.
func Client5Lib() (string, error) {
	return mavenLib("RMQ_CLIENT5_LIB", "client-java-"+Client5Version, []string{"rocketmq-client-java"},
		filepath.Join("..", "soak", "grpcsender", "pom.xml"))
}

// proxyReadyLine is what ProxyStartup.main prints once serving.
const proxyReadyLine = "rocketmq-proxy startup successfully"

// startProxy writes rmq-proxy.json (the stock distribution's keys: the
// cluster, the name server, the ports; the topic message type check off,
// see integration/soak/failover_sdk_test.go) and starts the proxy.
func (g *CtlGroup) startProxy(p *Pair) error {
	if g.cfg.ProxyLib == "" {
		return fmt.Errorf("%w: ProxyLib is required for the proxy", ErrBadConfig)
	}
	gp, err := FreePort()
	if err != nil {
		return err
	}
	rp, err := FreePort()
	if err != nil {
		return err
	}
	n := p.node("proxy", ImplJava5, rp)
	n.GRPCPort = gp
	n.match = func(l string) bool { return strings.Contains(l, proxyReadyLine) }
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	home, err := writeJava5Home(n.Dir)
	if err != nil {
		return err
	}
	conf, err := json.MarshalIndent(map[string]any{
		"rocketMQClusterName":     g.cfg.Cluster,
		"namesrvAddr":             g.Namesrv.Addr(),
		"grpcServerPort":          gp,
		"remotingListenPort":      rp,
		"grpcShutdownTimeSeconds": 3,
		// Typed topics do not survive a 5.3.3 slave's topic sync.
		"enableTopicMessageTypeCheck": false,
	}, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(n.Dir, "rmq-proxy.json")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return err
	}
	n.argv = append(append(append([]string{"java"}, java5JVM...), java5Opens...),
		"-Duser.home="+n.Dir, "-Drmq.logback.configurationFile="+filepath.Join(home, "conf", "rmq.proxy.logback.xml"),
		"-cp", filepath.Join(g.cfg.ProxyLib, "*"), "org.apache.rocketmq.proxy.ProxyStartup",
		"-pm", "cluster", "-pc", path, "-n", g.Namesrv.Addr())
	n.env = []string{"ROCKETMQ_HOME=" + home, "RMQ_PROXY_HOME=" + home}
	g.Proxy = n
	return n.start()
}

// ProcAttr is the process attributes of every child the harness starts
// (on Linux: killed when the test binary dies), for a test's own children.
func ProcAttr() *syscall.SysProcAttr { return procAttr() }

// GRPCAddr is the node's gRPC endpoint, "" without one.
func (n *Node) GRPCAddr() string {
	if n.GRPCPort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(n.GRPCPort)
}
