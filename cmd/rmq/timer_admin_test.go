package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"rmq/remoting"
)

// stubTimerBroker is one process acting as name server and broker with
// canned answers: a route and cluster naming itself, runtime info with the
// 5.x timer keys, and a recall that succeeds. It stands in for a broker
// that serves the timer requests, which rmq's broker does not yet.
type stubTimerBroker struct {
	addr string
}

func (s *stubTimerBroker) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	switch req.Code {
	case remoting.GetBrokerClusterInfo:
		resp.Body = []byte(fmt.Sprintf(`{"brokerAddrTable":{"broker-t":{"brokerAddrs":{0:%q},"brokerName":"broker-t","cluster":"TimerCluster"}},"clusterAddrTable":{"TimerCluster":["broker-t"]}}`, s.addr))
	case remoting.GetRouteinfoByTopic:
		resp.Body = []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{0:%q},"brokerName":"broker-t","cluster":"TimerCluster"}],"queueDatas":[{"brokerName":"broker-t","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}`, s.addr))
	case remoting.GetBrokerRuntimeInfo:
		resp.Body = []byte(`{"table":{"timerCongestNum":"1200","timerReadBehind":"2","timerOffsetBehind":"7","timerEnqueueTps":"350.5","timerDequeueTps":"349.0","timerReadBehindMs":"2150","brokerVersionDesc":"V5_3_3"}}`)
	case remoting.RecallMessage:
		resp.SetExt("msgId", "7F0000010000ABCD")
	default:
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
	}
	return resp
}

func startStubTimerBroker(t *testing.T) *stubTimerBroker {
	t.Helper()
	s := &stubTimerBroker{addr: fmt.Sprintf("127.0.0.1:%d", adminFreePort(t))}
	srv, err := remoting.NewServer(s, remoting.ServerOptions{Addrs: []string{s.addr}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return s
}

func TestTimerCommandsGolden(t *testing.T) {
	s := startStubTimerBroker(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "timerStatus of every broker",
			args: []string{"timerStatus"},
			want: `#Broker Name            #Addr                   #Pending      #ReadLag(s)   #EnqueueLag   #EnqueueTPS   #DequeueTPS
broker-t                <ADDR>         1200          2             7             350.50        349.00
<ADDR>          timerReadBehindMs               : 2150
`,
		},
		{
			name: "timerStatus of one broker",
			args: []string{"timerStatus", "-b", s.addr},
			want: `#Broker Name            #Addr                   #Pending      #ReadLag(s)   #EnqueueLag   #EnqueueTPS   #DequeueTPS
broker-t                <ADDR>         1200          2             7             350.50        349.00
<ADDR>          timerReadBehindMs               : 2150
`,
		},
		{
			name: "recallMessage",
			args: []string{"recallMessage", "-t", "T", "-i", "djEgVCBicm9rZXItdCAxNzAwMDAwMDAwMDAwIEFCQw=="}, // v1 T broker-t 1700000000000 ABC
			want: `#Broker Name                      #Addr                   #Recall Result        #MsgId
broker-t                          <ADDR>         RECALL_OK             7F0000010000ABCD
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append(append([]string{"admin"}, tt.args...), "-n", s.addr)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := trimLineEnds(strings.ReplaceAll(out, s.addr, "<ADDR>")); got != trimLineEnds(tt.want) {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestTimerStatusRealBroker: against rmq's broker timerStatus either shows
// the broker's figures or fails naming the broker and the missing keys.
func TestTimerStatusRealBroker(t *testing.T) {
	c := startAdminCluster(t)
	code, out, errOut := c.runAdmin(t, "timerStatus")
	switch code {
	case 0:
		if !regexp.MustCompile(`(?m)^broker-a\s+` + regexp.QuoteMeta(c.broker) + `\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s*$`).MatchString(out) {
			t.Errorf("timerStatus output:\n%s", out)
		}
	case 1:
		want := "rmq: timerStatus: admin: no timer statistics: broker " + c.broker + " answered GET_BROKER_RUNTIME_INFO(28) without the timer keys"
		if !strings.HasPrefix(errOut, want) || !strings.Contains(out, "broker-a") {
			t.Errorf("stderr %q\nwant prefix %q; stdout:\n%s", errOut, want, out)
		}
	default:
		t.Errorf("exit %d: %s", code, errOut)
	}
}
