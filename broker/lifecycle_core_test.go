package broker

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker/brokeradmin"
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

func TestRestartKeepsState(t *testing.T) {
	tb := startBroker(t, nil)
	for i := range 5 {
		tb.mustSend(sendArgs{topic: "Durable", body: []byte("m" + strconv.Itoa(i)), queueID: 1})
	}
	tb.waitDispatched()
	if resp := tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("Created", 2, 6, "SINGLE_TAG"), nil); resp.Code != remoting.Success {
		t.Fatalf("create topic: %d", resp.Code)
	}
	tb.pull(pullArgs{group: "DG", topic: "Durable", queueID: 1, sysFlag: pullFlagSubscription | pullFlagCommitOffset, commitOffset: 3})
	version := tb.Topics().DataVersion()

	tb = tb.restart()
	tb.waitDispatched()
	if got := tb.Topics().Get("Created"); got == nil || got.WriteQueueNums != 2 {
		t.Fatalf("admin topic after restart: %+v", got)
	}
	if got := tb.Topics().Get("Durable"); got == nil {
		t.Fatal("auto-created topic lost")
	}
	if got := tb.Topics().DataVersion(); got != version {
		t.Errorf("data version %+v, want %+v", got, version)
	}
	resp := tb.pull(pullArgs{topic: "Durable", queueID: 1, sysFlag: pullFlagSubscription})
	if resp.Code != remoting.Success {
		t.Fatalf("pull after restart: %d %q", resp.Code, resp.Remark)
	}
	msgs := coreRecords(t, resp.Body)
	if len(msgs) != 5 || string(msgs[4].Body) != "m4" {
		t.Fatalf("%d messages after restart", len(msgs))
	}
	q := tb.invoke(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "DG", "topic": "Durable", "queueId": "1"}, nil)
	if q.Code != remoting.Success || q.ExtFields["offset"] != "3" {
		t.Fatalf("committed offset after restart: %d %v", q.Code, q.ExtFields)
	}
	next := tb.mustSend(sendArgs{topic: "Durable", body: []byte("m5"), queueID: 1})
	if next.ExtFields["queueOffset"] != "5" {
		t.Errorf("queue offset after restart %s, want 5", next.ExtFields["queueOffset"])
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Options)
		// wantKey, when set, must appear in the error: the conf key at fault.
		wantKey string
	}{
		{name: "empty broker name", mutate: func(o *Options) { o.BrokerName = "" }, wantKey: "brokerName"},
		{name: "IPv6 brokerIP1", mutate: func(o *Options) { o.BrokerIP1 = "::1" }},
		{name: "unresolvable brokerIP1", mutate: func(o *Options) { o.BrokerIP1 = "no-such-host.invalid" }, wantKey: "brokerIP1"}, // a name that resolves is taken, as stock (TestBrokerIP1HostNameAtStart)
		{name: "consume-queue file size 0", mutate: func(o *Options) { o.MappedFileSizeConsumeQueue = 0 }, wantKey: "mappedFileSizeConsumeQueue"},
		{name: "bad flush type", mutate: func(o *Options) { o.FlushDiskType = "SOMETIMES" }},
		{name: "port too small", mutate: func(o *Options) { o.ListenPort = 2 }, wantKey: "listenPort"},
		{name: "bad delay level unit", mutate: func(o *Options) { o.MessageDelayLevel = "1s 5x" }, wantKey: "messageDelayLevel"},
		{name: "empty delay levels", mutate: func(o *Options) { o.MessageDelayLevel = "" }, wantKey: "messageDelayLevel"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.StorePathRootDir = t.TempDir()
			tc.mutate(&o)
			b, err := New(o)
			if !errors.Is(err, ErrOptions) {
				if b != nil {
					_ = b.Shutdown()
				}
				t.Fatalf("New: %v, want ErrOptions", err)
			}
			if tc.wantKey != "" && !strings.Contains(err.Error(), tc.wantKey) {
				t.Fatalf("New: %v, want it to name %s", err, tc.wantKey)
			}
		})
	}
}

func TestShutdownRefusesLateRequests(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "Late", body: []byte("x")})
	if err := tb.Shutdown(); err != nil {
		t.Fatal(err)
	}
	resp := tb.ServeRemoting(nil, remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "Late", "queueId": "0"}, nil))
	if resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("after shutdown: %d %q", resp.Code, resp.Remark)
	}
	if err := tb.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestStartFailsOnBusyPort(t *testing.T) {
	o := coreTestOptions(t, nil)
	busy, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.ListenPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil {
		t.Fatal("Start succeeded on a busy port")
	}
	if err := b.Shutdown(); err != nil {
		t.Fatalf("Shutdown after a failed Start: %v", err)
	}
}

// TestProcessorCodesDisjoint: a request code served by two processor sets
// would silently lose one handler in registerHandlers.
func TestProcessorCodesDisjoint(t *testing.T) {
	b := &Broker{services: services{clients: &clients.Service{}, tx: &transaction.Service{}, admin: &brokeradmin.Service{}}}
	sets := map[string]map[int32]HandlerFunc{"core": b.coreProcessors(), "clients": {}, "transaction": {}, "admin": {}, "retention": {}, "clock": b.clockProcessors()}
	for code, h := range b.clients.Processors() {
		sets["clients"][code] = h
	}
	for code, h := range b.tx.Processors() {
		sets["transaction"][code] = h
	}
	for code, h := range b.admin.Processors() {
		sets["admin"][code] = h
	}
	for code, h := range b.admin.RetentionProcessors() {
		sets["retention"][code] = h
	}
	owner := map[int32]string{}
	for name, set := range sets {
		for code := range set {
			if other, dup := owner[code]; dup {
				t.Errorf("code %d is served by both the %s and the %s processors", code, other, name)
			}
			owner[code] = name
		}
	}
}
