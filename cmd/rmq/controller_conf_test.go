package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/controller"
)

// controllerModeKeys are the broker keys of controller mode the node files
// set (5.3.3 BrokerConfig enableControllerMode, controllerAddr;
// MessageStoreConfig allAckInSyncStateSet).
type controllerModeKeys struct {
	EnableControllerMode bool   `conf:"enableControllerMode"`
	ControllerAddr       string `conf:"controllerAddr"`
	AllAckInSyncStateSet bool   `conf:"allAckInSyncStateSet"`
}

// conf/controller (three controller nodes, broker sets broker-a and
// broker-b of two brokers each) and docker/compose/controller.yaml, checked
// without a Docker daemon: each controller file loads as rmq controller -c
// does, without a warning, and the three name one Raft group; each broker
// file loads as rmq broker -c does, is in controller mode with
// controllerAddr naming the three controllers' remoting ports, and no two
// servers share a port or a store; the compose file runs exactly these
// files from the image, each with its own store volume.
func TestConfController(t *testing.T) {
	dir := filepath.Join("..", "..", "conf", "controller")
	seen := map[int]string{9876: "namesrv"}
	port := func(p int, who string) {
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s both use port %d", other, who, p)
		}
		seen[p] = who
	}
	stores := map[string]bool{}
	var peers string
	var ctlAddrs []string
	for i := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("controller-n%d.conf", i))
		opts, logs := controller.DefaultOptions(), defaultLogSettings()
		warnings, err := conf.LoadFile(path, controllerConfSources(&opts, &logs)...)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s: %v %v", path, err, warnings)
		}
		if i == 0 {
			peers = opts.Peers
		} else if opts.Peers != peers {
			t.Errorf("%s: controllerDLegerPeers %q, n0 has %q", path, opts.Peers, peers)
		}
		if want := fmt.Sprintf("n%d", i); opts.SelfID != want || opts.Group != "group1" {
			t.Errorf("%s: self %q group %q, want %s in group1", path, opts.SelfID, opts.Group, want)
		}
		for _, p := range strings.Split(opts.Peers, ";") {
			id, addr, _ := strings.Cut(p, "-")
			if id == opts.SelfID {
				_, ps, _ := net.SplitHostPort(addr)
				n, _ := strconv.Atoi(ps)
				port(n, path+" (raft)")
			}
		}
		port(opts.ListenPort, path)
		if opts.StorePath == "" || stores[opts.StorePath] {
			t.Errorf("%s: controllerStorePath %q empty or shared", path, opts.StorePath)
		}
		stores[opts.StorePath] = true
		ctlAddrs = append(ctlAddrs, "127.0.0.1:"+strconv.Itoa(opts.ListenPort))
	}
	if n := len(strings.Split(peers, ";")); n != 3 {
		t.Errorf("controllerDLegerPeers %q: %d peers, want 3", peers, n)
	}

	brokers := []string{"broker-a-n0", "broker-a-n1", "broker-b-n0", "broker-b-n1"}
	known := map[string]bool{}
	for _, k := range conf.Describe(defaultBrokerSettings().confSources()...) {
		known[k.Key] = true
	}
	for _, name := range brokers {
		path := filepath.Join(dir, name+".conf")
		var logs bytes.Buffer
		s, err := loadBrokerSettings(brokerFlags{configFile: path}, zerolog.New(&logs).Level(zerolog.WarnLevel))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// brokerId=-1 with brokerRole=SLAVE is refused outside controller
		// mode, so the check waits for the broker to know the key.
		if err := s.check(); err != nil && known["enableControllerMode"] {
			t.Fatalf("%s: check: %v", path, err)
		}
		// Until the broker binds the controller-mode keys it warns about
		// them; any other warning fails.
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			pending := false
			for _, k := range []string{"enableControllerMode", "controllerAddr", "allAckInSyncStateSet"} {
				pending = pending || !known[k] && strings.Contains(l, `unknown key \"`+k+`\"`)
			}
			if l != "" && !pending {
				t.Errorf("%s warns: %s", path, l)
			}
		}
		var cm controllerModeKeys
		if _, err := conf.LoadFile(path, &cm); err != nil {
			t.Fatal(err)
		}
		if !cm.EnableControllerMode || !cm.AllAckInSyncStateSet || cm.ControllerAddr != strings.Join(ctlAddrs, ";") {
			t.Errorf("%s: %+v, want controller mode, all acks in the sync state set, controllerAddr %s", path, cm, strings.Join(ctlAddrs, ";"))
		}
		o := s.opts
		set, _, _ := strings.Cut(strings.TrimPrefix(name, "broker-"), "-")
		if o.BrokerClusterName != "DefaultCluster" || o.BrokerName != "broker-"+set || o.BrokerID != -1 || o.BrokerRole != "SLAVE" ||
			o.NamesrvAddr != "127.0.0.1:9876" || o.BrokerIP1 != "127.0.0.1" {
			t.Errorf("%s: %s/%s id %d %s namesrv %s ip %s", path, o.BrokerClusterName, o.BrokerName, o.BrokerID, o.BrokerRole, o.NamesrvAddr, o.BrokerIP1)
		}
		for _, p := range nodePorts(s) {
			port(p, path)
		}
		if stores[o.StorePathRootDir] {
			t.Errorf("%s: store %s shared", path, o.StorePathRootDir)
		}
		stores[o.StorePathRootDir] = true
	}

	raw, err := os.ReadFile(filepath.Join("..", "..", "docker", "compose", "controller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatal(err)
	}
	ctls := []string{"controller-n0", "controller-n1", "controller-n2"}
	if want := len(ctls) + len(brokers) + 1; len(cf.Services) != want {
		t.Errorf("%d services, want %d", len(cf.Services), want)
	}
	for _, name := range append(slices.Clone(ctls), brokers...) {
		svc, ok := cf.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		want := "sh mqbroker -c ../conf/controller/" + name + ".conf"
		if strings.HasPrefix(name, "controller") {
			want = "rmq controller -c ../conf/controller/" + name + ".conf"
		} else if !slices.Equal(svc.DependsOn, append([]string{"namesrv"}, ctls...)) {
			t.Errorf("%s: depends_on %v, want namesrv and the controllers", name, svc.DependsOn)
		}
		if svc.Command != want || svc.NetworkMode != "host" {
			t.Errorf("%s: command %q network %q, want %q on the host's network", name, svc.Command, svc.NetworkMode, want)
		}
		vol := "store-" + name
		if !slices.Equal(svc.Volumes, []string{vol + ":/home/rocketmq/store"}) {
			t.Errorf("%s: volumes %v, want %s:/home/rocketmq/store", name, svc.Volumes, vol)
		}
		if _, ok := cf.Volumes[vol]; !ok {
			t.Errorf("%s: volume %s not declared", name, vol)
		}
	}
	if ns := cf.Services["namesrv"]; ns.Command != "sh mqnamesrv -c ../conf/namesrv.conf" {
		t.Errorf("namesrv: command %q", ns.Command)
	}
}
