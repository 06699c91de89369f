package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A controller-mode broker group (issue 45, RIP-44) is one name server, a
// controller (the stock rocketmq-controller 5.3.3 or rmq controller nodes)
// and brokers of one brokerName that all start as brokerId=-1 SLAVE with
// enableControllerMode=true: the controller elects one of them master and
// keeps the others in the sync state set.
//
//	rmq namesrv 127.0.0.1:NP  <- register (each broker)
//	controller  127.0.0.1:CP  <- register, heartbeat, elect (each broker)
//	broker-1..n 127.0.0.1:BPi --- AutoSwitch HA (BPi+1) --- master
//
// Every broker reads the same broker.conf keys whatever its implementation
// (only ports and store differ), so a run compares implementations.

// ImplJava5 is the stock 5.3.3 broker, the one Java broker with controller
// mode.
const ImplJava5 Impl = "java-" + Java5Version

// Java5Version is the stock 5.3.3 release whose broker, name server and
// controller jars the controller runs use.
const Java5Version = "5.3.3"

// Controller implementations.
const (
	ControllerStock = "stock" // rocketmq-controller 5.3.3, one DLedger peer
	ControllerRMQ   = "rmq"   // rmq controller nodes (raft)
)

// Java5Lib returns the directory of the stock 5.3.3 runtime jars (broker,
// name server, controller): $RMQ_JAVA5_LIB, else the cache bench-compare
// fills (~/.cache/rmq-bench-compare/rocketmq-5.3.3/lib), fetched there with
// Maven (integration/java/controller-oracle-pom.xml) on first use. The
// error wraps ErrNoJava when java or the jars are missing.
func Java5Lib() (string, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("%w: java is not on PATH", ErrNoJava)
	}
	return mavenLib("RMQ_JAVA5_LIB", Java5Version, []string{"rocketmq-broker", "rocketmq-controller"}, "controller-oracle-pom.xml")
}

// JVM options of the 5.3.3 processes: the opens 5.x needs on JDK 17 (the
// controller's hessian serializer reflects into java.lang and java.util,
// see integration/java/controller-oracle.sh) and a small heap.
var (
	java5Opens = append([]string{
		"--add-opens", "java.base/java.lang=ALL-UNNAMED",
		"--add-opens", "java.base/java.util=ALL-UNNAMED",
	}, javaOpens...)
	java5JVM = []string{"-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseG1GC",
		"-XX:-OmitStackTraceInFastThrow"}
)

// CtlGroupConfig describes a controller-mode broker group.
type CtlGroupConfig struct {
	RMQBin  string // the rmq binary: the name server, rmq controllers and rmq brokers
	JavaLib string // Java5Lib; needed for the stock controller or a Java broker
	WorkDir string // one subdirectory per process; StartCtlGroup defaults it to t.TempDir()
	// Controller is ControllerStock or ControllerRMQ; Controllers the rmq
	// node count (1 when zero; the stock controller is always one peer).
	Controller  string
	Controllers int
	// Brokers are the implementations of the group's brokers, started in
	// this order (the first is elected master).
	Brokers []Impl
	// BrokerName and Cluster default to "fo-broker" and "FoCluster".
	BrokerName, Cluster string
	// Conf are extra broker.conf lines of every broker.
	Conf []string
	// ReadyTimeout bounds each boot (90 s when zero).
	ReadyTimeout time.Duration
	// Proxy starts the stock 5.3.3 proxy in cluster mode after the brokers
	// (ProxyLib its jars): the gRPC endpoint of a group whose brokers have
	// none of their own (Java 5.3.3 brokers).
	Proxy    bool
	ProxyLib string
}

// CtlGroup is a running name server, controller nodes and brokers.
type CtlGroup struct {
	cfg         CtlGroupConfig
	Namesrv     *Node
	Controllers []*Node
	Brokers     []*Node
	Proxy       *Node // the stock proxy, when CtlGroupConfig.Proxy
	// CtlAddrs are the controllers' remoting addresses, the broker's
	// controllerAddr (";"-separated).
	CtlAddrs []string
}

// StartCtlGroup is LaunchCtlGroup for tests: it fails t on error, kills
// every process when the test ends, and logs their output if it failed.
func StartCtlGroup(t testing.TB, cfg CtlGroupConfig) *CtlGroup {
	t.Helper()
	return startFor(t, &cfg.WorkDir, func() (*CtlGroup, error) { return LaunchCtlGroup(cfg) })
}

// LaunchCtlGroup starts the name server, the controller nodes, then the
// brokers in order, each once the previous is ready (its boot line; the
// election is the caller's to wait for). On error the returned group (when
// not nil) holds what was started; Close it.
func LaunchCtlGroup(cfg CtlGroupConfig) (*CtlGroup, error) {
	if cfg.RMQBin == "" || cfg.WorkDir == "" {
		return nil, fmt.Errorf("%w: RMQBin and WorkDir are required", ErrBadConfig)
	}
	needJava := cfg.Controller == ControllerStock
	for _, b := range cfg.Brokers {
		needJava = needJava || b == ImplJava5
	}
	if needJava && cfg.JavaLib == "" {
		return nil, fmt.Errorf("%w: JavaLib (5.3.3) is required for the stock controller or a Java broker", ErrBadConfig)
	}
	setDefaults(&cfg.BrokerName, &cfg.Cluster, &cfg.ReadyTimeout, "fo-broker", "FoCluster")
	if cfg.Controllers <= 0 || cfg.Controller == ControllerStock {
		cfg.Controllers = 1
	}
	g := &CtlGroup{cfg: cfg}
	p := &Pair{cfg: PairConfig{WorkDir: cfg.WorkDir, ReadyTimeout: cfg.ReadyTimeout, StopTimeout: 30 * time.Second}}
	np, err := FreePort()
	if err != nil {
		return nil, err
	}
	if g.Namesrv, err = p.namesrv(cfg.RMQBin, np); err != nil {
		return g, err
	}
	if err := g.startControllers(p); err != nil {
		return g, err
	}
	for i, impl := range cfg.Brokers {
		n, err := g.startBroker(p, i, impl)
		if n != nil {
			g.Brokers = append(g.Brokers, n)
		}
		if err != nil {
			return g, err
		}
	}
	if cfg.Proxy {
		if err := g.startProxy(p); err != nil {
			return g, err
		}
	}
	return g, nil
}

// controllerReady is the line both controllers print once serving ("The
// ControllerManager boot success" from the stock one, rmq's own).
func controllerReady(l string) bool { return strings.Contains(l, "boot success") }

func (g *CtlGroup) startControllers(p *Pair) error {
	cfg := g.cfg
	n := cfg.Controllers
	peerPorts, listenPorts := make([]int, n), make([]int, n)
	var peers []string
	for i := range n {
		var err error
		if peerPorts[i], err = FreePort(); err != nil {
			return err
		}
		if listenPorts[i], err = FreePort(); err != nil {
			return err
		}
		peers = append(peers, fmt.Sprintf("n%d-127.0.0.1:%d", i, peerPorts[i]))
	}
	for i := range n {
		impl := ImplRMQ
		if cfg.Controller == ControllerStock {
			impl = ImplJava5
		}
		node := p.node(fmt.Sprintf("controller%d", i), impl, listenPorts[i])
		node.match = controllerReady
		if err := os.MkdirAll(node.Dir, 0o755); err != nil {
			return err
		}
		conf := []string{
			"controllerDLegerGroup=group1",
			"controllerDLegerPeers=" + strings.Join(peers, ";"),
			fmt.Sprintf("controllerDLegerSelfId=n%d", i),
			"controllerStorePath=" + filepath.Join(node.Dir, "store"),
		}
		path := filepath.Join(node.Dir, "controller.conf")
		switch cfg.Controller {
		case ControllerStock:
			// The stock controller's remoting server is its DLedger peer
			// (DLedgerController), so brokers dial the peer port.
			node.Port = peerPorts[i]
			home, err := writeJava5Home(node.Dir)
			if err != nil {
				return err
			}
			conf = append(conf, "rocketmqHome="+home)
			node.argv = g.javaArgv(node.Dir, "org.apache.rocketmq.controller.ControllerStartup", "-c", path)
			node.env = []string{"ROCKETMQ_HOME=" + home}
		case ControllerRMQ:
			conf = append(conf, "listenPort="+strconv.Itoa(listenPorts[i]), "bindAddress=127.0.0.1")
			node.argv = []string{cfg.RMQBin, "controller", "-c", path, "--log-level", "warn"}
		default:
			return fmt.Errorf("%w: controller %q (stock or rmq)", ErrBadConfig, cfg.Controller)
		}
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		g.Controllers = append(g.Controllers, node)
		g.CtlAddrs = append(g.CtlAddrs, node.Addr())
	}
	// Raft nodes wait for their peers: start them all, then wait for each.
	for _, node := range g.Controllers {
		if err := node.start(); err != nil {
			return err
		}
	}
	return nil
}

func (g *CtlGroup) javaArgv(dir string, main string, args ...string) []string {
	argv := append(append(append([]string{"java"}, java5JVM...), java5Opens...),
		"-Duser.home="+dir, "-Drocketmq.client.logRoot="+filepath.Join(dir, "logs"),
		"-cp", filepath.Join(g.cfg.JavaLib, "*"), main)
	return append(argv, args...)
}

// writeJava5Home writes a ROCKETMQ_HOME whose logback configurations (5.3.3
// looks for rmq.<role>.logback.xml) print warnings to the console.
func writeJava5Home(dir string) (string, error) {
	home := filepath.Join(dir, "rocketmq-home")
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		return "", err
	}
	xml := `<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
`
	for _, f := range []string{"logback.xml", "rmq_controller_logback.xml", "rmq.controller.logback.xml",
		"rmq.namesrv.logback.xml", "rmq.broker.logback.xml", "rmq.tools.logback.xml", "rmq.proxy.logback.xml"} {
		if err := os.WriteFile(filepath.Join(home, "conf", f), []byte(xml), 0o644); err != nil {
			return "", err
		}
	}
	return home, nil
}

// startBroker writes broker i's broker.conf (the stock controller-mode keys
// of distribution/conf/controller/quick-start/broker-n0.conf) and starts it.
func (g *CtlGroup) startBroker(p *Pair, i int, impl Impl) (*Node, error) {
	cfg := g.cfg
	_, port, err := FreePorts()
	if err != nil {
		return nil, err
	}
	n := p.node(fmt.Sprintf("broker%d", i+1), impl, port)
	n.BrokerID, n.Role = -1, RoleSlave
	n.match = brokerReadyLine
	if err := os.MkdirAll(filepath.Join(n.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	conf := []string{
		"brokerClusterName=" + cfg.Cluster,
		"brokerName=" + cfg.BrokerName,
		"brokerId=-1",
		"brokerRole=SLAVE",
		"enableControllerMode=true",
		"controllerAddr=" + strings.Join(g.CtlAddrs, ";"),
		"allAckInSyncStateSet=true",
		"flushDiskType=ASYNC_FLUSH",
		"namesrvAddr=" + g.Namesrv.Addr(),
		"listenPort=" + strconv.Itoa(port),
		"haListenPort=" + strconv.Itoa(port+1),
		"brokerIP1=127.0.0.1",
		"storePathRootDir=" + n.StoreDir(),
		"storePathCommitLog=" + filepath.Join(n.StoreDir(), "commitlog"),
		"autoCreateTopicEnable=true",
		"mappedFileSizeCommitLog=" + strconv.Itoa(HACommitLogFileSize),
		"maxMessageSize=" + strconv.Itoa(HAMaxMessageSize),
	}
	path := filepath.Join(n.Dir, "broker.conf")
	switch impl {
	case ImplRMQ:
		// A fixed gRPC port, kept across restarts: a 5.x SDK is handed
		// every broker's endpoint once.
		if n.GRPCPort, err = FreePort(); err != nil {
			return nil, err
		}
		conf = append(conf, "grpcServerPort="+strconv.Itoa(n.GRPCPort))
		n.argv = []string{cfg.RMQBin, "broker", "-c", path}
	case ImplJava5:
		home, err := writeJava5Home(n.Dir)
		if err != nil {
			return nil, err
		}
		conf = append(conf, "rocketmqHome="+home)
		n.argv = g.javaArgv(n.Dir, "org.apache.rocketmq.broker.BrokerStartup", "-c", path)
		n.env = []string{"ROCKETMQ_HOME=" + home}
	default:
		return nil, fmt.Errorf("%w: broker implementation %q (rmq or %s)", ErrBadConfig, impl, ImplJava5)
	}
	conf = append(conf, cfg.Conf...)
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return n, n.start()
}

// EpochFile is a broker's epoch file (5.3.3 storePathEpochFile default:
// <storePathRootDir>/epochFileCheckpoint).
func (n *Node) EpochFile() string { return filepath.Join(n.StoreDir(), "epochFileCheckpoint") }

// Nodes are the started processes: name server, controllers, brokers.
func (g *CtlGroup) Nodes() []*Node {
	var ns []*Node
	if g.Namesrv != nil {
		ns = append(ns, g.Namesrv)
	}
	ns = append(ns, g.Controllers...)
	ns = append(ns, g.Brokers...)
	if g.Proxy != nil {
		ns = append(ns, g.Proxy)
	}
	return ns
}

// BrokerName is the group's brokerName.
func (g *CtlGroup) BrokerName() string { return g.cfg.BrokerName }

// Broker returns the broker listening at addr, nil if none.
func (g *CtlGroup) Broker(addr string) *Node {
	for _, b := range g.Brokers {
		if b.Addr() == addr {
			return b
		}
	}
	return nil
}

// Close kills every process: brokers, controllers, name server.
func (g *CtlGroup) Close() {
	ns := g.Nodes()
	for i := len(ns) - 1; i >= 0; i-- {
		ns[i].Close()
	}
}
