// Package ha holds the replication tests of issue 44: a master and a slave,
// each rmq or the stock Java 4.9.7 broker, in every pairing, driven by the
// stock Go client and read back from the slave directly.
//
// They start two brokers per test (a JVM boots in seconds on a busy 2-core
// machine; the tests restart each end and wait for the slave's 5 s HA
// report), so they are not part of `make test`: `make test-ha` runs them
// (RMQ_HA=1). Pairings with a Java broker skip, saying why, when java or the
// jars are missing. RMQ_HA_PAIRS (e.g. "java-java,rmq-java") selects
// pairings.
package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/integration/harness"
)

var rmqBin string

func TestMain(m *testing.M) {
	if os.Getenv("RMQ_HA") != "1" {
		// Every test skips itself with the reason (see skipUnlessEnabled).
		os.Exit(m.Run())
	}
	rlog.SetLogLevel("error")
	rmqBin = os.Getenv("RMQ_BIN")
	if rmqBin == "" {
		dir, err := os.MkdirTemp("", "rmq-ha-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		if rmqBin, err = harness.BuildRMQ(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	} else if !filepath.IsAbs(rmqBin) {
		rmqBin, _ = filepath.Abs(rmqBin)
	}
	code := m.Run()
	os.Exit(code)
}

// pairing is a master implementation and a slave implementation.
type pairing struct {
	name          string
	master, slave harness.Impl
}

var pairings = []pairing{
	{"java-java", harness.ImplJava, harness.ImplJava}, // validates the harness and the checks
	{"rmq-java", harness.ImplRMQ, harness.ImplJava},
	{"java-rmq", harness.ImplJava, harness.ImplRMQ},
	{"rmq-rmq", harness.ImplRMQ, harness.ImplRMQ},
}

func skipUnlessEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv("RMQ_HA") != "1" {
		t.Skip("replication tests start two brokers per test and take minutes: run them with make test-ha (RMQ_HA=1)")
	}
}

// forEachPairing runs f once per selected pairing, as a subtest, with the
// Java jars when the pairing has a Java broker.
func forEachPairing(t *testing.T, f func(t *testing.T, p pairing, javaLib string)) {
	skipUnlessEnabled(t)
	only := os.Getenv("RMQ_HA_PAIRS")
	for _, p := range pairings {
		t.Run(p.name, func(t *testing.T) {
			if only != "" && !strings.Contains(","+only+",", ","+p.name+",") {
				t.Skipf("not in RMQ_HA_PAIRS=%s", only)
			}
			lib := ""
			if p.master == harness.ImplJava || p.slave == harness.ImplJava {
				var err error
				if lib, err = harness.JavaBrokerLib(); err != nil {
					t.Skipf("pairing %s needs the Java broker: %v", p.name, err)
				}
			}
			f(t, p, lib)
		})
	}
}
