package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Readiness lines both implementations print on stdout.
const (
	namesrvReady = "The Name Server boot success"
	brokerReady  = "boot success. serializeType="
)

var errNoJars = errors.New("compare: Java broker jars unavailable")

// target is one broker implementation: how to run its name server and its
// broker from a working directory.
type target struct {
	name    string // column title: "rmq", "Java 4.9.7"
	version string // Java version, "" for rmq
	rmqBin  string // rmq binary
	lib     string // Java: directory of the runtime jars
	timers  bool   // serves 5.x timer messages
	// proxy runs the Java broker inside the stock 5.x proxy in Local mode
	// (workload k): one process serving gRPC on the cluster's grpcPort.
	proxy bool
	rust  string // rocketmq-rust: directory of its binaries (rust.go)
	// conf are extra broker.conf lines of every broker of this target
	// (-rmq-conf).
	conf []string
}

func (t *target) java() bool { return t.version != "" }

// readyLines are the lines the name server and the broker of t print when
// they are ready.
func (t *target) readyLines() (namesrv, broker string) {
	if t.rust != "" {
		return rustNamesrvReady, rustBrokerReady
	}
	return namesrvReady, brokerReady
}

// Flush disk types.
const (
	asyncFlush = "ASYNC_FLUSH"
	syncFlush  = "SYNC_FLUSH"
)

// benchCluster is the brokerClusterName of every broker.
const benchCluster = "DefaultCluster"

// brokerConf is the broker.conf both implementations read: the stock keys
// with the same values, so that only the implementation differs; extra
// lines ("key=value") follow them.
func brokerConf(dir string, nsPort, port int, flush string, javaHome string, extra []string) string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	kv("brokerClusterName", benchCluster)
	kv("brokerName", "broker-a")
	kv("brokerId", "0")
	kv("brokerRole", "ASYNC_MASTER")
	kv("flushDiskType", flush)
	kv("namesrvAddr", fmt.Sprintf("127.0.0.1:%d", nsPort))
	kv("listenPort", fmt.Sprint(port))
	kv("brokerIP1", "127.0.0.1")
	kv("storePathRootDir", filepath.Join(dir, "store"))
	kv("autoCreateTopicEnable", "true")
	kv("deleteWhen", "04")
	kv("fileReservedTime", "48")
	if javaHome != "" {
		kv("storePathCommitLog", filepath.Join(dir, "store", "commitlog"))
		kv("rocketmqHome", javaHome)
	} else if !slices.ContainsFunc(extra, func(l string) bool { return strings.HasPrefix(l, "grpcServerPort=") }) {
		// rmq's gRPC endpoint on an OS-assigned port: the stock 8081 may be
		// held by anything else on the machine, and only workload k (which
		// names its port in extra) uses it.
		kv("grpcServerPort", "0")
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// JVM settings: a modest heap for a 2-core, shared machine (the stock scripts
// ask for 8 GiB with pre-touch), G1 as the scripts use, and the JDK 17 opens
// that 4.9.x's MappedFile cleaner needs.
var (
	jvmOpens = []string{
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
	}
	jvmNamesrv = []string{"-Xms256m", "-Xmx256m", "-XX:+UseG1GC"}
	jvmBroker  = []string{
		"-server", "-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g",
		"-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
		"-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
		"-XX:-OmitStackTraceInFastThrow",
	}
)

// logback is a file-only logback configuration (4.9.x exits without one).
func logback(file string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>` + file + `</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="FILE"/></root>
</configuration>
`
}

// prepareJavaHome writes the ROCKETMQ_HOME the Java processes need under dir.
func prepareJavaHome(dir string) (string, error) {
	home := filepath.Join(dir, "rocketmq-home")
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		return "", err
	}
	for _, n := range []string{"namesrv", "broker", "tools"} {
		f := filepath.Join(home, "conf", "logback_"+n+".xml")
		if err := os.WriteFile(f, []byte(logback(filepath.Join(dir, "logs", n+".log"))), 0o644); err != nil {
			return "", err
		}
	}
	return home, nil
}

// namesrvArgv returns the command line of the name server on port.
func (t *target) namesrvArgv(dir string, port int) ([]string, []string, error) {
	if t.rust != "" {
		argv, env := t.rustNamesrvArgv(dir, port)
		return argv, env, nil
	}
	if !t.java() {
		return []string{t.rmqBin, "namesrv", "--listen-port", fmt.Sprint(port), "--log-level", "warn"}, nil, nil
	}
	home, err := prepareJavaHome(dir)
	if err != nil {
		return nil, nil, err
	}
	conf := filepath.Join(dir, "namesrv.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listenPort=%d\nrocketmqHome=%s\n", port, home)), 0o644); err != nil {
		return nil, nil, err
	}
	argv := append([]string{"java"}, jvmNamesrv...)
	argv = append(argv, "-Duser.home="+dir, "-Drmq.logback.configurationFile=rmq.namesrv.logback.xml",
		"-cp", filepath.Join(t.lib, "*"), "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", conf)
	return argv, []string{"ROCKETMQ_HOME=" + home}, nil
}

// brokerArgv writes broker.conf into dir and returns the broker command line.
func (t *target) brokerArgv(dir string, nsPort, port int, flush string, extra []string) ([]string, []string, error) {
	if t.rust != "" {
		return t.rustBrokerArgv(dir, nsPort, port, flush, append(slices.Clone(t.conf), extra...))
	}
	home := ""
	var env []string
	if t.java() {
		var err error
		if home, err = prepareJavaHome(dir); err != nil {
			return nil, nil, err
		}
		env = []string{"ROCKETMQ_HOME=" + home}
	}
	conf := filepath.Join(dir, "broker.conf")
	if err := os.WriteFile(conf, []byte(brokerConf(dir, nsPort, port, flush, home, append(slices.Clone(t.conf), extra...))), 0o644); err != nil {
		return nil, nil, err
	}
	if !t.java() {
		return []string{t.rmqBin, "broker", "-c", conf, "--log-level", "warn"}, nil, nil
	}
	argv := append([]string{"java"}, jvmBroker...)
	argv = append(argv, jvmOpens...)
	argv = append(argv, "-Duser.home="+dir, "-Drmq.logback.configurationFile=rmq.broker.logback.xml",
		"-cp", filepath.Join(t.lib, "*"), "org.apache.rocketmq.broker.BrokerStartup", "-c", conf)
	return argv, env, nil
}

// fetchJars copies the runtime jars of the Java name server and broker of
// version into lib with Maven, unless a broker jar is already there.
func fetchJars(pom, version, lib string) error {
	return fetchJarsOf(pom, version, lib, "rocketmq-broker")
}

// fetchJarsOf copies the runtime dependencies of pom at version into lib
// with Maven, unless a jar of artifact is already there.
func fetchJarsOf(pom, version, lib, artifact string) error {
	glob := filepath.Join(lib, artifact+"-*.jar")
	if m, _ := filepath.Glob(glob); len(m) > 0 {
		return nil
	}
	cmd := exec.Command("mvn", "-B", "-q", "-f", pom, "-Dstyle.color=never", "-Dpeer.version="+version,
		"org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: mvn copy-dependencies %s: %v\n%s", errNoJars, version, err, out)
	}
	if m, _ := filepath.Glob(glob); len(m) == 0 {
		return fmt.Errorf("%w: no %s jar in %s after Maven ran", errNoJars, artifact, lib)
	}
	return nil
}
