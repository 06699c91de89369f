package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A replicated pair (issue 44) is one name server and two brokers of the same
// brokerName, a master (brokerId 0) and a slave (brokerId 1), each either rmq
// or the stock Java broker, in any combination:
//
//	rmq namesrv 127.0.0.1:NP
//	   ^ register             ^ register (the answer names the master's HA address)
//	master  127.0.0.1:BP  --- HA (BP+1) --->  slave  127.0.0.1:BP'
//
// Both brokers read the same broker.conf keys (stock names and values, only
// brokerId, brokerRole, the ports and the store differ), so a test compares
// implementations, not settings. Each broker is its own child process with its
// own work directory, killed or restarted on its own.

// Impl is a broker implementation.
type Impl string

const (
	ImplRMQ  Impl = "rmq"
	ImplJava Impl = "java-" + JavaBrokerVersion
)

// JavaBrokerVersion is the stock broker the pairs run: the last 4.9.x whose
// broker jars Maven Central serves (4.9.8's are not published).
const JavaBrokerVersion = "4.9.7"

// Broker roles (the stock brokerRole values).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// HACommitLogFileSize is mappedFileSizeCommitLog on both ends of a pair. Both
// must be equal (file boundaries replicate byte for byte, blank filler
// included), and small, so that a test of a few thousand messages crosses
// file boundaries. 1 MiB: rmq accepts files from 4 KiB, the Java store any
// size that holds a message; HAMaxMessageSize keeps a message well inside a
// file on both.
const (
	HACommitLogFileSize = 1 << 20
	HAMaxMessageSize    = 128 << 10
)

// ErrNoJava is returned when the Java broker cannot be run here.
var ErrNoJava = errors.New("harness: no Java broker")

// JavaBrokerLib returns the directory of the Java broker's runtime jars:
// $RMQ_JAVA_BROKER_LIB, else the cache bench-compare and the soaks share
// (~/.cache/rmq-bench-compare/rocketmq-4.9.7/lib), fetched there with Maven
// (integration/java/oracle-pom.xml) on first use. The error wraps ErrNoJava
// when java or the jars are missing, so tests can skip with the reason.
func JavaBrokerLib() (string, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("%w: java is not on PATH", ErrNoJava)
	}
	return mavenLib("RMQ_JAVA_BROKER_LIB", JavaBrokerVersion, []string{"rocketmq-broker"},
		"oracle-pom.xml", "-Doracle.version="+JavaBrokerVersion)
}

// mavenLib returns the directory of a stock release's runtime jars: $env,
// else ~/.cache/rmq-bench-compare/rocketmq-<version>/lib, filled with
// Maven (integration/java/<pom>, with args) when one of artifacts is
// missing there. The error wraps ErrNoJava when the jars cannot be had.
func mavenLib(env, version string, artifacts []string, pom string, args ...string) (string, error) {
	lib := os.Getenv(env)
	if lib == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoJava, err)
		}
		lib = filepath.Join(home, ".cache", "rmq-bench-compare", "rocketmq-"+version, "lib")
	}
	have := func() bool {
		for _, a := range artifacts {
			if !hasJar(lib, a) {
				return false
			}
		}
		return true
	}
	if have() {
		return lib, nil
	}
	javaFetchMu.Lock()
	defer javaFetchMu.Unlock()
	if have() {
		return lib, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("%w: no %s jars in %s and no mvn to fetch them", ErrNoJava, version, lib)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	argv := append([]string{"-B", "-q", "-f", filepath.Join(root, "integration", "java", pom), "-Dstyle.color=never"}, args...)
	argv = append(argv, "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+lib)
	if out, err := exec.Command("mvn", argv...).CombinedOutput(); err != nil || !have() {
		return "", fmt.Errorf("%w: mvn copy-dependencies %s into %s: %v\n%s", ErrNoJava, version, lib, err, out)
	}
	return lib, nil
}

var javaFetchMu sync.Mutex

func hasJar(dir, artifact string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, artifact+"-*.jar"))
	return len(m) > 0
}

// JVM settings of a pair's Java processes: a small heap (two brokers and the
// tests share a 2-core machine) and the JDK 17 opens 4.9.x's MappedFile
// cleaner needs.
var (
	javaOpens = []string{
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
	}
	javaBrokerJVM = []string{"-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseG1GC",
		"-XX:-OmitStackTraceInFastThrow"}
)

// NodeSpec is one broker of a pair.
type NodeSpec struct {
	Impl Impl
	Role string // RoleAsyncMaster, RoleSyncMaster or RoleSlave
	// Conf are extra broker.conf lines of this broker only.
	Conf []string
}

// PairConfig describes a pair.
type PairConfig struct {
	RMQBin  string // the rmq binary (BuildRMQ); needed for the name server
	JavaLib string // JavaBrokerLib; needed when a broker is Java
	WorkDir string // one subdirectory per process; Start defaults it to t.TempDir()
	// BrokerName and Cluster default to "ha-broker" and "HaCluster".
	BrokerName, Cluster string
	Master, Slave       NodeSpec
	// Conf are extra broker.conf lines of both brokers (before each one's own).
	Conf []string
	// NamesrvAddr, when set, is a running name server (another pair's) the
	// brokers register with instead of one of their own: a second broker
	// group of the same cluster. NoSlave starts the master alone.
	NamesrvAddr string
	NoSlave     bool
	// ReadyTimeout bounds each boot (90 s when zero: a JVM on a busy 2-core
	// machine); StopTimeout each SIGTERM exit (30 s when zero).
	ReadyTimeout, StopTimeout time.Duration
}

// Pair is a running name server, master and slave.
type Pair struct {
	cfg           PairConfig
	Namesrv       *Node
	Master, Slave *Node
}

// Node is one process of a pair: the name server or a broker.
type Node struct {
	*child
	Impl     Impl
	Port     int    // listen port (a broker's HA port is Port+1)
	Dir      string // work directory: broker.conf, store/, logs/
	BrokerID int
	Role     string
	// GRPCPort is the node's gRPC endpoint port (an rmq broker of a
	// controller group, the stock proxy), 0 without one.
	GRPCPort int

	argv, env    []string
	match        func(string) bool // its readiness line
	readyTimeout time.Duration
}

// Addr is the node's remoting address.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// HAAddr is a broker's HA address: listenPort+1, where 4.9.x always listens.
func (n *Node) HAAddr() string { return "127.0.0.1:" + strconv.Itoa(n.Port+1) }

// StoreDir is a broker's storePathRootDir.
func (n *Node) StoreDir() string { return filepath.Join(n.Dir, "store") }

// Restart starts the node again after Stop or Kill with the same ports,
// store and configuration, and waits until it is ready.
func (n *Node) Restart() error {
	if n.Running() {
		return ErrStillRunning
	}
	return n.start()
}

func (n *Node) start() error {
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Dir = n.Dir
	cmd.Env = append(os.Environ(), n.env...)
	w := &lineMatch{match: n.match, ready: make(chan struct{})}
	return n.launch(cmd, w, w.ready, n.readyTimeout)
}

// lineMatch closes ready at the first stdout line match accepts.
type lineMatch struct {
	match func(string) bool
	once  sync.Once
	ready chan struct{}
}

func (w *lineMatch) see(line string) {
	if w.match(line) {
		w.once.Do(func() { close(w.ready) })
	}
}

// brokerReadyLine is the stock "The broker[name, addr] boot success..." line
// both implementations print.
func brokerReadyLine(line string) bool {
	i := strings.Index(line, brokerReadyPrefix)
	return i >= 0 && strings.Contains(line[i:], brokerReadySuffix)
}

// StartPair is LaunchPair for tests: it fails t on error, kills every
// process when the test ends, and logs their output if the test failed.
func StartPair(t testing.TB, cfg PairConfig) *Pair {
	t.Helper()
	return startFor(t, &cfg.WorkDir, func() (*Pair, error) { return LaunchPair(cfg) })
}

// nodeSet is what a Launch function starts (a *Pair, a *CtlGroup).
type nodeSet interface {
	comparable
	Nodes() []*Node
	Close()
}

// startFor runs launch for a test: workDir (the config's WorkDir)
// defaults to t.TempDir(), what was started is closed when the test ends
// (closeAtEnd), and an error fails t.
func startFor[S nodeSet](t testing.TB, workDir *string, launch func() (S, error)) S {
	t.Helper()
	if *workDir == "" {
		*workDir = t.TempDir()
	}
	s, err := launch()
	var none S
	if s != none {
		closeAtEnd(t, s.Nodes, s.Close)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// closeAtEnd makes t's cleanup log the nodes' output if t failed, then close
// them.
func closeAtEnd(t testing.TB, nodes func() []*Node, close func()) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes() {
				t.Logf("%s output (%s):\n%s", n.what, n.Dir, n.tail())
			}
		}
		close()
	})
}

// LaunchPair starts the name server, then the master, then the slave (so
// that the slave's first registration already learns the master's HA
// address, as a stock deployment started in that order does). On error the
// returned pair (when not nil) holds what was started; Close it.
func LaunchPair(cfg PairConfig) (*Pair, error) {
	if cfg.RMQBin == "" || cfg.WorkDir == "" {
		return nil, fmt.Errorf("%w: RMQBin and WorkDir are required", ErrBadConfig)
	}
	if (cfg.Master.Impl == ImplJava || cfg.Slave.Impl == ImplJava) && cfg.JavaLib == "" {
		return nil, fmt.Errorf("%w: JavaLib is required for a Java broker", ErrBadConfig)
	}
	setDefaults(&cfg.BrokerName, &cfg.Cluster, &cfg.ReadyTimeout, "ha-broker", "HaCluster")
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 30 * time.Second
	}
	p := &Pair{cfg: cfg}
	np, mp, err := FreePorts()
	if err != nil {
		return nil, err
	}
	if cfg.NamesrvAddr == "" {
		if p.Namesrv, err = p.namesrv(cfg.RMQBin, np); err != nil {
			return p, err
		}
	}
	p.Master, err = p.broker("master", mp, 0, cfg.Master)
	if err != nil || cfg.NoSlave {
		return p, err
	}
	// FreePorts skips ports in use, so the slave's three ports are clear of
	// the master's (listen, VIP and HA ports, all bound by now).
	_, sp, err := FreePorts()
	if err != nil {
		return p, err
	}
	p.Slave, err = p.broker("slave", sp, 1, cfg.Slave)
	return p, err
}

// setDefaults fills the broker name, the cluster and the boot timeout a
// Launch config left empty.
func setDefaults(brokerName, cluster *string, ready *time.Duration, name, clusterName string) {
	if *brokerName == "" {
		*brokerName = name
	}
	if *cluster == "" {
		*cluster = clusterName
	}
	if *ready <= 0 {
		*ready = 90 * time.Second
	}
}

// namesrv starts an rmq name server on port, the node "namesrv" (returned
// even when it did not start, for Close).
func (p *Pair) namesrv(rmqBin string, port int) (*Node, error) {
	n := p.node("namesrv", ImplRMQ, port)
	n.argv = []string{rmqBin, "namesrv", "--listen-port", strconv.Itoa(port)}
	n.match = func(l string) bool { return strings.Contains(l, NamesrvReadyMarker) }
	return n, n.start()
}

func (p *Pair) node(name string, impl Impl, port int) *Node {
	n := &Node{
		child: &child{what: name + " (" + string(impl) + ")", logs: &logBuffer{}, stopTimeout: p.cfg.StopTimeout,
			cleanExit: func(s *os.ProcessState) bool { return s.Success() }},
		Impl: impl, Port: port, Dir: filepath.Join(p.cfg.WorkDir, name), readyTimeout: p.cfg.ReadyTimeout,
	}
	if impl == ImplJava {
		// A JVM's clean exit after SIGTERM: 128+15, its shutdown hooks run.
		n.cleanExit = func(s *os.ProcessState) bool {
			if s.Success() || s.ExitCode() == 128+int(syscall.SIGTERM) {
				return true
			}
			ws, ok := s.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
		}
	}
	return n
}

// broker writes the broker.conf of one end and starts it.
func (p *Pair) broker(name string, port, id int, spec NodeSpec) (*Node, error) {
	n := p.node(name, spec.Impl, port)
	n.BrokerID, n.Role = id, spec.Role
	if n.Role == "" {
		n.Role = RoleAsyncMaster
		if id > 0 {
			n.Role = RoleSlave
		}
	}
	if err := os.MkdirAll(filepath.Join(n.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	conf := []string{
		"brokerClusterName=" + p.cfg.Cluster,
		"brokerName=" + p.cfg.BrokerName,
		"brokerId=" + strconv.Itoa(id),
		"brokerRole=" + n.Role,
		"flushDiskType=ASYNC_FLUSH",
		"namesrvAddr=" + p.NamesrvAddr(),
		"listenPort=" + strconv.Itoa(port),
		"haListenPort=" + strconv.Itoa(port+1),
		"brokerIP1=127.0.0.1",
		"brokerIP2=127.0.0.1",
		"storePathRootDir=" + n.StoreDir(),
		"storePathCommitLog=" + filepath.Join(n.StoreDir(), "commitlog"),
		"autoCreateTopicEnable=true",
		"mappedFileSizeCommitLog=" + strconv.Itoa(HACommitLogFileSize),
		"maxMessageSize=" + strconv.Itoa(HAMaxMessageSize),
	}
	n.match = brokerReadyLine
	path := filepath.Join(n.Dir, "broker.conf")
	switch spec.Impl {
	case ImplRMQ:
		conf = append(conf, "grpcServerPort=0")
		n.argv = []string{p.cfg.RMQBin, "broker", "-c", path}
	case ImplJava:
		home := filepath.Join(n.Dir, "rocketmq-home")
		if err := writeJavaHome(home, filepath.Join(n.Dir, "logs")); err != nil {
			return nil, err
		}
		conf = append(conf, "rocketmqHome="+home)
		n.argv = append(append(append([]string{"java"}, javaBrokerJVM...), javaOpens...),
			"-Duser.home="+n.Dir, "-cp", filepath.Join(p.cfg.JavaLib, "*"),
			"org.apache.rocketmq.broker.BrokerStartup", "-c", path)
		n.env = []string{"ROCKETMQ_HOME=" + home}
	default:
		return nil, fmt.Errorf("%w: broker implementation %q", ErrBadConfig, spec.Impl)
	}
	conf = append(append(conf, p.cfg.Conf...), spec.Conf...)
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if name == "master" {
		p.Master = n
	} else {
		p.Slave = n
	}
	return n, n.start()
}

// writeJavaHome writes the ROCKETMQ_HOME a 4.9.x broker needs: its logback
// configuration (it exits without one), logging to logs.
func writeJavaHome(home, logs string) error {
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		return err
	}
	xml := `<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>` + filepath.Join(logs, "broker.log") + `</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`
	return os.WriteFile(filepath.Join(home, "conf", "logback_broker.xml"), []byte(xml), 0o644)
}

// Nodes are the started processes: name server, master, slave.
func (p *Pair) Nodes() []*Node {
	var ns []*Node
	for _, n := range []*Node{p.Namesrv, p.Master, p.Slave} {
		if n != nil {
			ns = append(ns, n)
		}
	}
	return ns
}

// NamesrvAddr is the name server address clients use.
func (p *Pair) NamesrvAddr() string {
	if p.Namesrv == nil {
		return p.cfg.NamesrvAddr
	}
	return p.Namesrv.Addr()
}

// BrokerName is the brokerName both brokers share.
func (p *Pair) BrokerName() string { return p.cfg.BrokerName }

// Close kills every process of the pair, the slave first.
func (p *Pair) Close() {
	for _, n := range []*Node{p.Slave, p.Master, p.Namesrv} {
		if n != nil {
			n.Close()
		}
	}
}
