package namesrvclient_test

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// TestStockGoAdminClient drives the name server with the stock Go client. Its
// route requests carry version 317, so they get bare brokerAddrs keys and go
// through the client's own hand-rolled parser.
func TestStockGoAdminClient(t *testing.T) {
	rlog.SetLogLevel("error")
	s := startServer(t)
	reg := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(reg.Close)
	setup := []struct {
		name string
		req  *remoting.Command
	}{
		{"broker-a master", remoting.NewRequest(remoting.RegisterBroker, registerExt("DefaultCluster", "broker-a", "127.0.0.1:10911", 0),
			registerBody(1, tc("TopicTest", 4, 6), tc("TBW102", 8, 7), tc("Ordered", 4, 6)))},
		{"broker-b master, read-only queues", remoting.NewRequest(remoting.RegisterBroker, registerExt("OtherCluster", "broker-b", "127.0.0.2:10911", 0),
			registerBody(1, tc("TopicTest", 2, 4)))},
		{"broker-c master", remoting.NewRequest(remoting.RegisterBroker, registerExt("DefaultCluster", "broker-c", "127.0.0.3:10911", 0),
			registerBody(1, tc("TopicTest", 3, 6)))},
		{"broker-c slave", remoting.NewRequest(remoting.RegisterBroker, registerExt("DefaultCluster", "broker-c", "127.0.0.4:10911", 1), registerBody(1))},
		// broker-c keeps its queue data but no longer has a master, so
		// producers must skip it; a mis-parsed id would turn the slave into a master.
		{"broker-c master leaves", remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
			"clusterName": "DefaultCluster", "brokerName": "broker-c", "brokerAddr": "127.0.0.3:10911", "brokerId": "0"}, nil)},
		{"order conf", remoting.NewRequest(remoting.PutKVConfig, map[string]string{
			"namespace": namesrv.NamespaceOrderTopicConfig, "key": "Ordered", "value": "broker-a:2;broker-b:1"}, nil)},
	}
	for _, st := range setup {
		r, err := reg.InvokeTimeout(s.Addr(), st.req, 3*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if r.Code != remoting.Success {
			t.Fatalf("%s: %v", st.name, r)
		}
	}

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{s.Addr()})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	if got, want := slices.Sorted(slices.Values(list.TopicList)), []string{"Ordered", "TBW102", "TopicTest"}; !reflect.DeepEqual(got, want) {
		t.Errorf("topics = %v, want %v", got, want)
	}

	queues := []struct {
		topic string
		want  []string // brokerName/queueId
	}{
		{topic: "TopicTest", want: []string{"broker-a/0", "broker-a/1", "broker-a/2", "broker-a/3"}},
		{topic: "TBW102", want: []string{"broker-a/0", "broker-a/1", "broker-a/2", "broker-a/3", "broker-a/4", "broker-a/5", "broker-a/6", "broker-a/7"}},
		{topic: "Ordered", want: []string{"broker-a/0", "broker-a/1", "broker-b/0"}},
	}
	for _, q := range queues {
		mqs, err := adm.FetchPublishMessageQueues(ctx, q.topic)
		if err != nil {
			t.Fatalf("FetchPublishMessageQueues(%s): %v", q.topic, err)
		}
		var got []string
		for _, mq := range mqs {
			if mq.Topic != q.topic {
				t.Errorf("queue of topic %q in %s", mq.Topic, q.topic)
			}
			got = append(got, mq.BrokerName+"/"+strconv.Itoa(mq.QueueId))
		}
		slices.Sort(got)
		if !reflect.DeepEqual(got, q.want) {
			t.Errorf("publish queues of %s = %v, want %v", q.topic, got, q.want)
		}
	}

	clusters, err := adm.FetchClusterList("TopicTest")
	if err != nil {
		t.Fatalf("FetchClusterList: %v", err)
	}
	if got, want := slices.Sorted(slices.Values(clusters)), []string{"DefaultCluster", "OtherCluster"}; !reflect.DeepEqual(got, want) {
		t.Errorf("clusters = %v, want %v", got, want)
	}
	if _, err := adm.FetchClusterList("NoSuchTopic"); err == nil {
		t.Errorf("route of an unknown topic did not fail")
	}
}

// startServer starts a name server on a free loopback port with order
// messages enabled (the route then carries the Ordered topic's order conf).
func startServer(t *testing.T) *namesrv.Server {
	t.Helper()
	opts := namesrv.DefaultOptions()
	opts.ListenHost = "127.0.0.1"
	opts.ListenPort = testutil.FreePort(t)
	opts.OrderMessageEnable = true
	s, err := namesrv.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// registerBody is a REGISTER_BROKER body with the given topics at data
// version counter.
func registerBody(counter int64, tcs ...*topicgroup.TopicConfig) []byte {
	w := remoting.TopicConfigSerializeWrapper{
		DataVersion:      remoting.DataVersion{Counter: counter, Timestamp: 1700000000000 + counter},
		TopicConfigTable: map[string]*topicgroup.TopicConfig{},
	}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc
	}
	return remoting.MarshalBody(remoting.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: w})
}

// registerExt is a REGISTER_BROKER header.
func registerExt(cluster, name, addr string, id int64) map[string]string {
	return map[string]string{
		"clusterName": cluster, "brokerName": name, "brokerAddr": addr, "brokerId": strconv.FormatInt(id, 10),
		"haServerAddr": addr + "-ha", "compressed": "false",
	}
}

func tc(name string, queues, perm int32) *topicgroup.TopicConfig {
	return &topicgroup.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}
