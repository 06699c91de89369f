package main

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/namesrv"
)

// TestStandaloneAnnouncesNothingWhenBrokerFails: in standalone the name
// server starts first, but its readiness line must wait for the broker, so a
// broker that then fails to start leaves stdout without any "boot success".
func TestStandaloneAnnouncesNothingWhenBrokerFails(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// run applies the server runtime settings; undo them for the other tests.
	prevPercent, prevLimit, prevProcs := debug.SetGCPercent(100), debug.SetMemoryLimit(-1), runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
		runtime.GOMAXPROCS(prevProcs)
	})
	nsOpts := namesrv.DefaultOptions()
	nsOpts.ListenHost, nsOpts.ListenPort = "127.0.0.1", 0
	nsOpts.KVConfigPath = t.TempDir() + "/kvConfig.json"
	bOpts := broker.DefaultOptions()
	bOpts.StorePathRootDir = t.TempDir()
	bOpts.ListenHost = "127.0.0.1"
	bOpts.ListenPort = l.Addr().(*net.TCPAddr).Port // taken
	bOpts.MappedFileSizeCommitLog = 8 << 20
	bOpts.MappedFileSizeConsumeQueue = 6000
	var stdout, stderr bytes.Buffer
	s := &servers{stdout: &stdout, stderr: &stderr, log: zerolog.Nop()}
	err = s.run(context.Background(), func() {}, &nsOpts, &bOpts)
	if err == nil {
		t.Fatal("run succeeded although the broker port is taken")
	}
	if strings.Contains(stdout.String(), "boot success") {
		t.Fatalf("stdout announced a start that failed:\n%s", stdout.String())
	}
	if stderr.Len() != 0 {
		t.Fatalf("address block printed for a start that failed:\n%s", stderr.String())
	}
}

func TestPrintAddresses(t *testing.T) {
	tests := []struct {
		name        string
		grpc        string
		metrics     string
		console     bool
		want, notIn []string
	}{
		{name: "metrics off", want: []string{"name server  127.0.0.1:9876", "broker       127.0.0.1:10911", "VIP port     127.0.0.1:10909", "store        .run/store"}, notIn: []string{"metrics", "console", "gRPC"}},
		{name: "gRPC on", grpc: "127.0.0.1:8081", want: []string{"gRPC         127.0.0.1:8081"}},
		{name: "metrics on wildcard", metrics: "0.0.0.0:5557", want: []string{"metrics      http://127.0.0.1:5557/metrics"}, notIn: []string{"console"}},
		{name: "metrics and console", metrics: "127.0.0.1:5557", console: true, want: []string{"metrics      http://127.0.0.1:5557/metrics", "console      http://127.0.0.1:5557/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := &servers{stderr: &out}
			s.printAddresses("127.0.0.1:9876", "127.0.0.1:10911", "127.0.0.1:10909", tc.grpc, tc.metrics, tc.console, ".run/store")
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("block lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tc.notIn {
				if strings.Contains(out.String(), n) {
					t.Errorf("block has %q:\n%s", n, out.String())
				}
			}
		})
	}
}
