package admin

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// TestBrokerEpochs: getBrokerEpoch asks every broker of the group the
// name server lists for its epoch cache and shows the last entry ending
// at the broker's max offset, as the stock command does.
func TestBrokerEpochs(t *testing.T) {
	p := startPeer(t)
	ci := fmt.Sprintf(`{"brokerAddrTable":{"a":{"brokerAddrs":{0:%q},"brokerName":"a","cluster":"c1"}},"clusterAddrTable":{"c1":["a"]}}`, p.addr)
	p.reply(remoting.GetBrokerClusterInfo, remoting.Success, "", nil, []byte(ci))
	p.reply(remoting.GetBrokerEpochCache, remoting.Success, "", nil,
		[]byte(`{"brokerId":1,"brokerName":"a","clusterName":"c1","epochList":[{"endOffset":100,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":100}],"maxOffset":250}`))
	a := newTestAdmin(t, p.addr)
	for _, args := range [][2]string{{"c1", ""}, {"", "a"}} {
		es, err := a.BrokerEpochs(testCtx(t), args[0], args[1])
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		PrintBrokerEpochs(&b, es)
		want := fmt.Sprintf("\n#clusterName\tc1\n#brokerName\ta\n#brokerAddr\t%s\n#brokerId\t1\n#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=100}\n#Epoch: EpochEntry{epoch=2, startOffset=100, endOffset=250}\n", p.addr)
		if b.String() != want {
			t.Fatalf("%v:\n%q\nwant\n%q", args, b.String(), want)
		}
	}
	if _, err := a.BrokerEpochs(testCtx(t), "nope", ""); err == nil {
		t.Fatal("an unknown cluster answered")
	}
}
