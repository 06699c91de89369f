package testbroker

import (
	"testing"

	"github.com/rmqio/rmq/message"
)

func TestStartClusterRoutesToTheBroker(t *testing.T) {
	c := StartCluster(t, nil)
	rd := c.Namesrv.Routes().TopicRoute(message.TopicAutoCreateKey)
	if rd == nil || len(rd.BrokerDatas) != 1 {
		t.Fatalf("route of %s = %+v, want one broker", message.TopicAutoCreateKey, rd)
	}
	if got := rd.BrokerDatas[0].BrokerAddrs[0]; got != c.BrokerAddr() {
		t.Fatalf("routed master = %s, want %s", got, c.BrokerAddr())
	}
	if c.Opts.NamesrvAddr != c.NamesrvAddr() {
		t.Fatalf("broker's name server = %s, want %s", c.Opts.NamesrvAddr, c.NamesrvAddr())
	}
}
