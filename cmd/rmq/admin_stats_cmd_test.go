package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

// TestAdminStatsCommands runs statsAll, brokerConsumeStats and producer
// against a broker whose stats were sampled on a manual clock: 4 messages
// put on StatsT (2 per queue), 1 pulled by StatsG, offset 1 committed on
// queue 1.
func TestAdminStatsCommands(t *testing.T) {
	clk := clock.NewManual(time.Now())
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.Clock = clk })
	c := &adminCluster{ns: tc.NamesrvAddr(), broker: tc.BrokerAddr(), adm: admin.New(admin.Options{NamesrvAddr: tc.NamesrvAddr()})}
	t.Cleanup(c.adm.Close)
	if code, _, errOut := c.runAdmin(t, "updateTopic", "-b", c.broker, "-t", "StatsT", "-r", "2", "-w", "2"); code != 0 {
		t.Fatalf("updateTopic: %s", errOut)
	}
	c.waitRoute(t, "StatsT")
	bc := brokertest.NewClient(t, c.broker)
	for i := range 4 {
		if resp := bc.Send(brokertest.Send{Topic: "StatsT", Body: []byte("stats"), QueueID: int32(i % 2)}); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	tc.Broker.WaitDispatched()
	cli := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(cli.Close)
	joinGroup(t, c, cli, "StatsG", "StatsT")
	hb := remoting.HeartbeatData{ClientID: "127.0.0.1@stats-producer", ProducerDataSet: []*remoting.ProducerData{{GroupName: "StatsPG"}}}
	if resp, err := cli.InvokeTimeout(c.broker, remoting.NewRequest(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), 5*time.Second); err != nil || resp.Code != remoting.Success {
		t.Fatalf("producer heartbeat: %v %v", resp, err)
	}
	pull := brokertest.Pull{Group: "StatsG", Topic: "StatsT", QueueID: 1, Offset: 1, MaxMsgs: 32}
	if resp := bc.Invoke(remoting.PullMessage, pull.Ext(), nil); resp.Code != remoting.Success {
		t.Fatalf("pull: %d %s", resp.Code, resp.Remark)
	}
	tc.Broker.Broker.BrokerStats().Tick(clk.Now())

	code, out, errOut := c.runAdmin(t, "statsAll", "-t", "StatsT")
	if code != 0 {
		t.Fatalf("statsAll: %s", errOut)
	}
	// Accumulation: queue 0 has 2 unconsumed, queue 1 has 1 (offset 1 of 2).
	// In: 4 over the 10 s seed window; out: 1.
	want := fmt.Sprintf("%-32s  %-32s %12s %11s %11s %14s %14s\n", "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour") +
		fmt.Sprintf("%-64s  %-64s %12d %11.2f %11.2f %14d %14d\n", "StatsT", "StatsG", 3, 0.4, 0.1, 4, 1)
	if out != want {
		t.Errorf("statsAll:\n%s\nwant:\n%s", out, want)
	}

	code, out, errOut = c.runAdmin(t, "brokerConsumeStats", "-b", c.broker)
	if code != 0 {
		t.Fatalf("brokerConsumeStats: %s", errOut)
	}
	m := newMasker(c)
	got := trimLineEnds(m.mask(linesWith(out, "#Topic", "StatsT", "Diff Total")))
	wantBCS := "#Topic                            #Group                            #Broker Name                      #QID  #Broker Offset        #Consumer Offset      #Diff                 #LastTime\n" +
		"StatsT                                                            StatsG                            broker-a                          1     2                     1                     1                     <TIME>\n" +
		"Diff Total: 3"
	if got != wantBCS {
		t.Errorf("brokerConsumeStats:\n%s\nwant:\n%s", got, wantBCS)
	}

	code, out, errOut = c.runAdmin(t, "producer", "-b", c.broker)
	if code != 0 {
		t.Fatalf("producer: %s", errOut)
	}
	if got := m.mask(linesWith(out, "StatsPG")); !strings.HasPrefix(got, "producer group (StatsPG) instance : clientId=127.0.0.1@stats-producer,remoteIP=/<HOST>, language=") {
		t.Errorf("producer: %q", out)
	}
	// Unknown stats key: the stock error text.
	if _, err := c.adm.ViewBrokerStatsData(t.Context(), c.broker, "TOPIC_PUT_NUMS", "Nope"); err == nil || !strings.Contains(err.Error(), "The stats <TOPIC_PUT_NUMS> <Nope> not exist") {
		t.Errorf("missing stats item: %v", err)
	}
}
