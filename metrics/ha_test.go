package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// haGauges gathers reg and returns the rmq_ha_* samples as
// "name{slave}" → value.
func haGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "rmq_ha_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == labelSlave {
					key += "{" + l.GetValue() + "}"
				}
			}
			out[key] = gaugeValue(m)
		}
	}
	return out
}

func gaugeValue(m *dto.Metric) float64 { return m.GetGauge().GetValue() }

// A master serves its slaves' connection count and lag, a slave its
// connection and replicated offset; each serves only its own side's series.
func TestReplicationSeries(t *testing.T) {
	m := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) { o.BrokerRole = "ASYNC_MASTER" }))
	s := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) {
		o.BrokerRole = "SLAVE"
		o.BrokerID = 1
		o.ListenPort = testutil.FreePortPair(t, m.Opts.ListenPort)
	}))
	mreg, sreg := Registry(m.Broker, nil), Registry(s.Broker, nil)
	if g := haGauges(t, mreg); g[nameHASlaves] != 0 || g[nameHAFallBehind] != 0 || len(g) != 2 {
		t.Fatalf("master without a slave: %v", g)
	}
	if g := haGauges(t, sreg); g[nameHAMasterConnected] != 0 || len(g) != 2 {
		t.Fatalf("slave without a master: %v", g)
	}
	for i := range 3 {
		if r := m.Client.Send(brokertest.Send{Topic: "HaMetrics", Body: []byte("0123456789"), QueueID: 0}); r.Code != remoting.Success {
			t.Fatalf("send %d: %d %q", i, r.Code, r.Remark)
		}
	}
	end := float64(m.Store().MaxPhyOffset())
	s.SetHAMasterAddress(m.HAAddr())
	var g map[string]float64
	testutil.WaitFor(t, 10*time.Second, func() bool {
		g = haGauges(t, sreg)
		return g[nameHAMasterConnected] == 1 && g[nameHAReplicated] == end
	}, "the slave to catch up")
	testutil.WaitFor(t, 10*time.Second, func() bool {
		g = haGauges(t, mreg)
		return g[nameHASlaves] == 1 && g[nameHAFallBehind] == 0 && len(g) == 3
	}, "the master to see the ack")
	for k, v := range g {
		if strings.HasPrefix(k, nameHASlaveLag+"{127.0.0.1:") && v != 0 {
			t.Fatalf("%s = %v", k, v)
		}
	}
	// The slave gone: the master's lag series go with it.
	s.Stop()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		g = haGauges(t, mreg)
		return g[nameHASlaves] == 0 && len(g) == 2
	}, "the master to drop the slave")
}
