package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/rmqio/rmq/broker"
)

// loadNode loads a broker file as rmq broker -c does (with nsAddr as -n),
// failing the test on an error or a warning.
func loadNode(t *testing.T, path, nsAddr string) *brokerSettings {
	t.Helper()
	var logs bytes.Buffer
	f := brokerFlags{configFile: path}
	if nsAddr != "" {
		f.namesrvAddr = &nsAddr
	}
	s, err := loadBrokerSettings(f, zerolog.New(&logs).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := s.check(); err != nil {
		t.Fatalf("%s: check: %v", path, err)
	}
	if logs.Len() > 0 {
		t.Errorf("%s warns:\n%s", path, logs.String())
	}
	return s
}

// sameStockKeys compares the keys the stock node files set.
func sameStockKeys(t *testing.T, what string, got, want *brokerSettings) {
	t.Helper()
	g, w := got.opts, want.opts
	if g.BrokerClusterName != w.BrokerClusterName || g.BrokerName != w.BrokerName || g.BrokerID != w.BrokerID ||
		g.BrokerRole != w.BrokerRole || g.FlushDiskType != w.FlushDiskType || g.DeleteWhen != w.DeleteWhen || g.FileReservedTime != w.FileReservedTime {
		t.Errorf("%s: %s/%d %s %s, want the stock file's %s/%d %s %s", what, g.BrokerName, g.BrokerID, g.BrokerRole, g.FlushDiskType,
			w.BrokerName, w.BrokerID, w.BrokerRole, w.FlushDiskType)
	}
}

// nodePorts are the ports a broker listens on: listenPort, the VIP port
// (listenPort - 2), the HA port (4.9.8: listenPort + 1) and gRPC.
func nodePorts(s *brokerSettings) []int {
	p := s.opts.ListenPort
	return []int{p, p - 2, p + 1, s.grpc.Port}
}

// conf/2m-2s-{sync,async} follow the stock distribution's layout: each file
// has the stock file's keys and values (the rocketmq-docker copies in
// testdata are the same) plus what lets the four nodes share one machine,
// so no two nodes share a port or a store.
func TestConfTwoMastersTwoSlaves(t *testing.T) {
	for _, mode := range []string{"2m-2s-async", "2m-2s-sync"} {
		seen := map[int]string{}
		stores := map[string]bool{}
		for _, n := range dockerNodes(mode) {
			path := filepath.Join("..", "..", "conf", mode, n.file)
			s := loadNode(t, path, "127.0.0.1:9876")
			sameStockKeys(t, path, s, loadNode(t, filepath.Join(dockerConfDir, mode, n.file), ""))
			if s.opts.BrokerIP1 != "127.0.0.1" {
				t.Errorf("%s: brokerIP1 %q", path, s.opts.BrokerIP1)
			}
			for _, p := range nodePorts(s) {
				if other, dup := seen[p]; dup {
					t.Errorf("%s and %s both use port %d", other, path, p)
				}
				seen[p] = path
			}
			if stores[s.opts.StorePathRootDir] {
				t.Errorf("%s: store %s shared", path, s.opts.StorePathRootDir)
			}
			stores[s.opts.StorePathRootDir] = true
		}
	}
}

type composeFile struct {
	Services map[string]struct {
		Command     string   `yaml:"command"`
		NetworkMode string   `yaml:"network_mode"`
		Volumes     []string `yaml:"volumes"`
		DependsOn   []string `yaml:"depends_on"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// docker/compose/2m-2s.yaml checked without a Docker daemon: every broker's
// file is rocketmq-docker's 2m-2s-sync node file with REPLACE_IT set, then
// rmq's additions; each loads through rmq broker -c's path with the
// command's -n; the mount lands where -c points in the image; ports and
// stores are not shared; a slave starts after its master.
func TestCompose2m2s(t *testing.T) {
	dir := filepath.Join("..", "..", "docker", "compose")
	raw, err := os.ReadFile(filepath.Join(dir, "2m-2s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatal(err)
	}
	const confDir = "/home/rocketmq/rmq/conf/" // the image's ${ROCKETMQ_HOME}/conf, seen from bin as ../conf
	ns, ok := cf.Services["namesrv"]
	if !ok || ns.Command != "sh mqnamesrv -c ../conf/namesrv.conf" || !slices.Contains(ns.Volumes, "./namesrv.conf:"+confDir+"namesrv.conf:ro") {
		t.Fatalf("namesrv service %+v", ns)
	}
	nsOpts, err := loadNamesrvSettings(namesrvFlags{configFile: filepath.Join(dir, "namesrv.conf")}, zerolog.Nop())
	if err != nil || nsOpts.ListenHost != "127.0.0.1" || nsOpts.ListenPort != 9876 {
		t.Fatalf("namesrv.conf: %v %+v", err, nsOpts)
	}
	seen := map[int]string{nsOpts.ListenPort: "namesrv"}
	for _, n := range dockerNodes("2m-2s-sync") {
		name := strings.TrimSuffix(n.file, ".properties")
		svc, ok := cf.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		args := strings.Fields(svc.Command)
		if len(args) != 6 || args[0] != "sh" || args[1] != "mqbroker" || args[2] != "-n" || args[4] != "-c" || args[5] != "../conf/"+n.file {
			t.Fatalf("%s: command %q", name, svc.Command)
		}
		if svc.NetworkMode != "host" {
			t.Errorf("%s: network_mode %q", name, svc.NetworkMode)
		}
		mount := "./2m-2s/" + n.file + ":" + confDir + n.file + ":ro"
		store := "store-" + strings.TrimPrefix(name, "broker-") + ":/home/rocketmq/store"
		if !slices.Contains(svc.Volumes, mount) || !slices.Contains(svc.Volumes, store) {
			t.Errorf("%s: volumes %v, want %s and %s", name, svc.Volumes, mount, store)
		}
		if _, ok := cf.Volumes[strings.SplitN(store, ":", 2)[0]]; !ok {
			t.Errorf("%s: volume %s not declared", name, store)
		}
		want := "namesrv"
		if n.slave {
			want = n.name
		}
		if !slices.Equal(svc.DependsOn, []string{want}) {
			t.Errorf("%s: depends_on %v, want [%s]", name, svc.DependsOn, want)
		}

		path := filepath.Join(dir, "2m-2s", n.file)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		stock, err := os.ReadFile(filepath.Join(dockerConfDir, "2m-2s-sync", n.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(body, bytes.ReplaceAll(stock, []byte("REPLACE_IT"), []byte("127.0.0.1"))) {
			t.Errorf("%s does not start with rocketmq-docker's file, REPLACE_IT set to 127.0.0.1", path)
		}
		s := loadNode(t, path, args[3])
		sameStockKeys(t, path, s, loadNode(t, filepath.Join(dockerConfDir, "2m-2s-sync", n.file), ""))
		if s.opts.NamesrvAddr != net.JoinHostPort(nsOpts.ListenHost, strconv.Itoa(nsOpts.ListenPort)) || s.opts.ListenHost != "127.0.0.1" || s.opts.BrokerIP1 != "127.0.0.1" ||
			s.opts.StorePathRootDir != "/home/rocketmq/store" {
			t.Errorf("%s: namesrv %s bind %s ip %s store %s", path, s.opts.NamesrvAddr, s.opts.ListenHost, s.opts.BrokerIP1, s.opts.StorePathRootDir)
		}
		for _, p := range nodePorts(s) {
			if other, dup := seen[p]; dup {
				t.Errorf("%s and %s both use port %d", other, path, p)
			}
			seen[p] = path
		}
	}
}

// rmq admin clusterList --replication prints the role table instead of the
// stock one; --json carries role and replicationLagBytes either way.
func TestAdminClusterListReplicationFlag(t *testing.T) {
	c := startAdminClusterWith(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	code, out, errOut := runCLI(t, "admin", "clusterList", "-n", c.ns, "--replication")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "#Role") || !strings.Contains(lines[1], c.broker) ||
		!strings.Contains(lines[1], "SYNC_MASTER") || !strings.HasSuffix(lines[1], " -") {
		t.Fatalf("output:\n%s", out)
	}
	code, out, errOut = runCLI(t, "admin", "clusterList", "-n", c.ns, "--json")
	if code != 0 || !strings.Contains(out, `"role": "SYNC_MASTER"`) || !strings.Contains(out, `"replicationLagBytes": -1`) {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}
