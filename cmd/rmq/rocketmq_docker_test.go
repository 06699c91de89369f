package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// testdata/rocketmq-docker holds apache/rocketmq-docker's
// product/conf/2m-2s-{async,sync} node files byte for byte (commit
// 29a9cd596292598019f83c89d382b671e13c7d77), license header, REPLACE_IT
// placeholders and the slaves' trailing blanks after brokerIP1 and
// brokerIP2 included.
const dockerConfDir = "testdata/rocketmq-docker"

type dockerNode struct {
	file, name, role string
	id               int64
	slave            bool
}

func dockerNodes(mode string) []dockerNode {
	master := "ASYNC_MASTER"
	if mode == "2m-2s-sync" {
		master = "SYNC_MASTER"
	}
	return []dockerNode{
		{"broker-a.properties", "broker-a", master, 0, false},
		{"broker-a-s.properties", "broker-a", "SLAVE", 1, true},
		{"broker-b.properties", "broker-b", master, 0, false},
		{"broker-b-s.properties", "broker-b", "SLAVE", 1, true},
	}
}

// Every node file loads through rmq broker -c's path (loadBrokerSettings,
// then check) without a warning, as the stock broker reads it. The one
// difference: conf trims the slaves' trailing blank after brokerIP1 and
// brokerIP2 (conf/doc.go), where Java keeps it and registers
// "<ip> :10911", an address no client resolves.
func TestRocketMQDockerNodeFilesLoad(t *testing.T) {
	for _, mode := range []string{"2m-2s-async", "2m-2s-sync"} {
		for _, n := range dockerNodes(mode) {
			path := filepath.Join(dockerConfDir, mode, n.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n.slave != strings.Contains(string(raw), "brokerIP1=REPLACE_IT \n") {
				t.Fatalf("%s: the test data lost rocketmq-docker's trailing blank (or gained one)", path)
			}
			var logs bytes.Buffer
			s, err := loadBrokerSettings(brokerFlags{configFile: path}, zerolog.New(&logs).Level(zerolog.WarnLevel))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if err := s.check(); err != nil {
				t.Fatalf("%s: check: %v", path, err)
			}
			if logs.Len() > 0 {
				t.Errorf("%s warns:\n%s", path, logs.String())
			}
			o := s.opts
			if o.BrokerClusterName != "DefaultCluster" || o.BrokerName != n.name || o.BrokerID != n.id || o.BrokerRole != n.role ||
				o.FlushDiskType != "ASYNC_FLUSH" || o.DeleteWhen != "04" || o.FileReservedTime != 48 ||
				o.BrokerIP1 != "REPLACE_IT" || o.BrokerIP2 != "REPLACE_IT" {
				t.Errorf("%s: cluster %q name %q id %d role %q flush %q deleteWhen %q fileReservedTime %d ip1 %q ip2 %q", path,
					o.BrokerClusterName, o.BrokerName, o.BrokerID, o.BrokerRole, o.FlushDiskType, o.DeleteWhen, o.FileReservedTime, o.BrokerIP1, o.BrokerIP2)
			}
		}
	}
}

// Each mode's broker-a pair starts from its two node files with only the
// edit rocketmq-docker asks for (REPLACE_IT → the host's IP, trailing blanks
// kept) and the flags start-broker.sh's hosts make unnecessary (name server,
// port, store dir: one host here): the slave learns its master from the
// name server and replicates; a SYNC_MASTER's SEND_OK means the slave has
// the message.
func TestRocketMQDockerPairStarts(t *testing.T) {
	for _, mode := range []string{"2m-2s-async", "2m-2s-sync"} {
		t.Run(mode, func(t *testing.T) {
			ns := testbroker.StartNamesrv(t)
			nodes := dockerNodes(mode)
			var started []*testbroker.Broker
			for _, n := range nodes[:2] {
				raw, err := os.ReadFile(filepath.Join(dockerConfDir, mode, n.file))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), n.file)
				if err := os.WriteFile(path, bytes.ReplaceAll(raw, []byte("REPLACE_IT"), []byte("127.0.0.1")), 0o644); err != nil {
					t.Fatal(err)
				}
				avoid := []int{}
				for _, b := range started {
					avoid = append(avoid, b.Opts.ListenPort)
				}
				nsAddr, store, small, port := ns.Addr(), t.TempDir(), true, testutil.FreePortPair(t, avoid...)
				s, err := loadBrokerSettings(brokerFlags{configFile: path, namesrvAddr: &nsAddr, storeDir: &store, smallStore: &small, listenPort: &port}, zerolog.Nop())
				if err != nil {
					t.Fatal(err)
				}
				if err := s.check(); err != nil {
					t.Fatal(err)
				}
				if s.opts.BrokerIP1 != "127.0.0.1" {
					t.Fatalf("brokerIP1 %q", s.opts.BrokerIP1)
				}
				s.opts.Logger = testlog.New(t)
				started = append(started, testbroker.Start(t, s.opts))
			}
			m, sl := started[0], started[1]
			testutil.WaitFor(t, 20*time.Second, func() bool { st, _ := m.Broker.HAMasterStats(); return st.Connections == 1 },
				"the slave to find its master through the name server")
			for i := range 5 {
				if r := m.Client.Send(brokertest.Send{Topic: "TBW102", Body: []byte("2m-2s"), QueueID: int32(i % 2)}); r.Code != remoting.Success {
					t.Fatalf("send %d: %d %q", i, r.Code, r.Remark)
				}
			}
			testutil.WaitFor(t, 10*time.Second, func() bool {
				return sl.Broker.Store().MaxPhyOffset() == m.Broker.Store().MaxPhyOffset()
			}, "the slave to replicate")
			if r := sl.Client.Send(brokertest.Send{Topic: "TBW102", Body: []byte("to the slave")}); r.Code == remoting.Success {
				t.Fatalf("the slave took a send")
			}
		})
	}
}
