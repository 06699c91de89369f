package namesrv

import (
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

func TestRegisterBroker(t *testing.T) {
	const (
		cluster = "DefaultCluster"
		a0      = "10.0.0.1:10911"
		a1      = "10.0.0.2:10911"
	)
	master := func(addr string, w *remoting.TopicConfigSerializeWrapper) BrokerRegistration {
		return BrokerRegistration{ClusterName: cluster, BrokerAddr: addr, BrokerName: "broker-a", BrokerID: 0, HAServerAddr: addr + "-ha", Topics: w}
	}
	slave := func(addr string, id int64, w *remoting.TopicConfigSerializeWrapper) BrokerRegistration {
		return BrokerRegistration{ClusterName: cluster, BrokerAddr: addr, BrokerName: "broker-a", BrokerID: id, HAServerAddr: addr + "-ha", Topics: w}
	}
	tests := []struct {
		name       string
		regs       []BrokerRegistration
		topic      string
		wantQueues []*remoting.QueueData // nil: TopicRoute must be nil
		wantAddrs  map[int64]string
		wantResult RegisterResult // of the last registration
	}{
		{
			name:       "master registers its topics",
			regs:       []BrokerRegistration{master(a0, topics(1, tc("T", 4, 6), tc("TBW102", 8, 7)))},
			topic:      "TBW102",
			wantQueues: []*remoting.QueueData{qd("broker-a", 8, 7)},
			wantAddrs:  map[int64]string{0: a0},
		},
		{
			name:  "slave topics are ignored",
			regs:  []BrokerRegistration{slave(a1, 1, topics(1, tc("T", 4, 6)))},
			topic: "T",
		},
		{
			name:  "registration without a body has no topics",
			regs:  []BrokerRegistration{master(a0, nil)},
			topic: "T",
		},
		{
			name:       "slave is told the live master and the master's HA address",
			regs:       []BrokerRegistration{master(a0, topics(1, tc("T", 4, 6))), slave(a1, 1, topics(1))},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 4, 6)},
			wantAddrs:  map[int64]string{0: a0, 1: a1},
			wantResult: RegisterResult{MasterAddr: a0, HAServerAddr: a0 + "-ha"},
		},
		{
			name:       "master is told nothing",
			regs:       []BrokerRegistration{slave(a1, 1, topics(1)), master(a0, topics(1, tc("T", 4, 6)))},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 4, 6)},
			wantAddrs:  map[int64]string{0: a0, 1: a1},
		},
		{
			name:       "same data version keeps the old queue data",
			regs:       []BrokerRegistration{master(a0, topics(1, tc("T", 4, 6))), master(a0, topics(1, tc("T", 8, 6)))},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 4, 6)},
			wantAddrs:  map[int64]string{0: a0},
		},
		{
			name:       "changed data version replaces the queue data",
			regs:       []BrokerRegistration{master(a0, topics(1, tc("T", 4, 6))), master(a0, topics(2, tc("T", 8, 2)))},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 8, 2)},
			wantAddrs:  map[int64]string{0: a0},
		},
		{
			name: "slave promoted to master moves to id 0 and writes topics",
			regs: []BrokerRegistration{
				slave(a1, 1, topics(5, tc("T", 4, 6))),
				master(a1, topics(5, tc("T", 4, 6))),
			},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 4, 6)},
			wantAddrs:  map[int64]string{0: a1},
		},
		{
			name: "re-registration under a new id drops the old id entry",
			regs: []BrokerRegistration{
				master(a0, topics(1, tc("T", 4, 6))),
				slave(a0, 2, topics(1)),
			},
			topic:      "T",
			wantQueues: []*remoting.QueueData{qd("broker-a", 4, 6)},
			wantAddrs:  map[int64]string{2: a0},
			// The master id is gone, so there is no master to report.
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
			var res RegisterResult
			for _, r := range tt.regs {
				res = m.RegisterBroker(r)
			}
			if res != tt.wantResult {
				t.Errorf("result = %+v, want %+v", res, tt.wantResult)
			}
			rd := m.TopicRoute(tt.topic)
			if tt.wantQueues == nil {
				if rd != nil {
					t.Fatalf("route of %s = %+v, want none", tt.topic, rd)
				}
			} else {
				if rd == nil {
					t.Fatalf("no route for %s", tt.topic)
				}
				if !reflect.DeepEqual(rd.QueueDatas, tt.wantQueues) {
					t.Errorf("queueDatas = %v, want %v", rd.QueueDatas, tt.wantQueues)
				}
			}
			ci := m.ClusterInfo()
			if got := ci.BrokerAddrTable["broker-a"].BrokerAddrs; !reflect.DeepEqual(got, orEmpty(tt.wantAddrs)) && tt.wantAddrs != nil {
				t.Errorf("brokerAddrs = %v, want %v", got, tt.wantAddrs)
			}
			if got := ci.ClusterAddrTable[cluster]; !reflect.DeepEqual(got, []string{"broker-a"}) {
				t.Errorf("cluster %s = %v", cluster, got)
			}
		})
	}
}

func orEmpty(m map[int64]string) map[int64]string {
	if m == nil {
		return map[int64]string{}
	}
	return m
}

func TestTopicRouteIsACopyWithSortedBrokers(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	for _, name := range []string{"broker-c", "broker-a", "broker-b"} {
		m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: name + ":1", BrokerName: name, Topics: topics(1, tc("T", 2, 6))})
	}
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "broker-a:2", BrokerName: "broker-a", BrokerID: 1, FilterServerList: []string{"fs:1"}})
	rd := m.TopicRoute("T")
	var names []string
	for i, bd := range rd.BrokerDatas {
		names = append(names, bd.BrokerName)
		if rd.QueueDatas[i].BrokerName != bd.BrokerName {
			t.Errorf("queueDatas[%d] = %s, brokerDatas[%d] = %s", i, rd.QueueDatas[i].BrokerName, i, bd.BrokerName)
		}
	}
	if !reflect.DeepEqual(names, []string{"broker-a", "broker-b", "broker-c"}) {
		t.Errorf("broker order = %v", names)
	}
	if !reflect.DeepEqual(rd.FilterServerTable, map[string][]string{"broker-a:2": {"fs:1"}}) {
		t.Errorf("filterServerTable = %v", rd.FilterServerTable)
	}
	rd.BrokerDatas[0].BrokerAddrs[0] = "mutated"
	rd.QueueDatas[0].Perm = 0
	again := m.TopicRoute("T")
	if again.BrokerDatas[0].BrokerAddrs[0] != "broker-a:1" || again.QueueDatas[0].Perm != 6 {
		t.Errorf("route table changed through a returned copy: %+v %+v", again.BrokerDatas[0], again.QueueDatas[0])
	}
}

func TestScanNotActiveBroker(t *testing.T) {
	tests := []struct {
		name        string
		timeout     time.Duration // per-broker override
		renewAfter  time.Duration // re-register after this long (0 = never)
		advance     time.Duration // total time from first registration to the scan
		wantExpired bool
	}{
		{name: "fresh broker stays", advance: 119 * time.Second},
		{name: "exactly 120 s stays (strictly older expires)", advance: 120 * time.Second},
		{name: "older than 120 s expires", advance: 120*time.Second + time.Millisecond, wantExpired: true},
		{name: "re-registration renews", renewAfter: 100 * time.Second, advance: 200 * time.Second},
		{name: "own shorter timeout", timeout: 10 * time.Second, advance: 11 * time.Second, wantExpired: true},
		{name: "own longer timeout", timeout: 300 * time.Second, advance: 200 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			m := NewRouteInfoManager(clk.Now, zerolog.Nop())
			reg := BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6)), ConnID: 42, Timeout: tt.timeout}
			m.RegisterBroker(reg)
			m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "other:1", BrokerName: "other", Topics: topics(1, tc("T", 4, 6)), Timeout: time.Hour})
			if tt.renewAfter > 0 {
				clk.Advance(tt.renewAfter)
				m.RegisterBroker(reg)
				clk.Advance(tt.advance - tt.renewAfter)
			} else {
				clk.Advance(tt.advance)
			}
			got := m.ScanNotActiveBroker(120 * time.Second)
			if tt.wantExpired {
				if want := []ExpiredBroker{{Addr: "a:1", ConnID: 42}}; !reflect.DeepEqual(got, want) {
					t.Fatalf("expired = %v, want %v", got, want)
				}
				rd := m.TopicRoute("T")
				if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "other" {
					t.Errorf("route after expiry = %+v", rd.QueueDatas)
				}
				if _, ok := m.ClusterInfo().BrokerAddrTable["b"]; ok {
					t.Errorf("expired broker still in the broker table")
				}
				if _, ok := m.BrokerDataVersion("a:1"); ok {
					t.Errorf("expired broker still live")
				}
			} else if len(got) != 0 {
				t.Fatalf("expired = %v, want none", got)
			}
		})
	}
}

func TestTouchBrokerRenews(t *testing.T) {
	clk := newFakeClock()
	m := NewRouteInfoManager(clk.Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "b", Topics: topics(3)})
	clk.Advance(100 * time.Second)
	m.TouchBroker("a:1")
	m.TouchBroker("unknown:1")
	clk.Advance(100 * time.Second)
	if got := m.ScanNotActiveBroker(120 * time.Second); len(got) != 0 {
		t.Fatalf("touched broker expired: %v", got)
	}
	if dv, ok := m.BrokerDataVersion("a:1"); !ok || dv != topics(3).DataVersion {
		t.Errorf("data version = %+v %v", dv, ok)
	}
	if m.IsBrokerTopicConfigChanged("a:1", topics(3).DataVersion) {
		t.Errorf("same version reported as changed")
	}
	if !m.IsBrokerTopicConfigChanged("a:1", topics(4).DataVersion) || !m.IsBrokerTopicConfigChanged("x:1", topics(3).DataVersion) {
		t.Errorf("changed or unknown version reported as unchanged")
	}
}

func TestUnregisterBroker(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "m:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6))})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "s:1", BrokerName: "b", BrokerID: 1, Topics: topics(1)})

	m.UnregisterBroker("C", "s:1", "b", 1)
	rd := m.TopicRoute("T")
	if rd == nil || !reflect.DeepEqual(rd.BrokerDatas[0].BrokerAddrs, map[int64]string{0: "m:1"}) {
		t.Fatalf("after slave left: %+v", rd)
	}
	m.UnregisterBroker("C", "m:1", "b", 0)
	if rd := m.TopicRoute("T"); rd != nil {
		t.Fatalf("route survives its last broker: %+v", rd)
	}
	ci := m.ClusterInfo()
	if len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Errorf("cluster info not empty: %+v", ci)
	}
	if got := m.AllTopics(); len(got) != 0 {
		t.Errorf("topics left: %v", got)
	}
	m.UnregisterBroker("C", "m:1", "b", 0) // unknown now: no panic, no change
}

func TestConnClosed(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "a", Topics: topics(1, tc("T", 4, 6)), ConnID: 7})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "b:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6)), ConnID: 8})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "c:1", BrokerName: "c", Topics: topics(1, tc("U", 4, 6)), ConnID: 7})
	// b reconnected: its old connection closing later must not remove it.
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "b:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6)), ConnID: 9})

	tests := []struct {
		name       string
		conn       uint64
		wantGone   []string
		wantBroker []string // brokers left in T's route
	}{
		{name: "unknown connection", conn: 99, wantBroker: []string{"a", "b"}},
		{name: "no connection id", conn: 0, wantBroker: []string{"a", "b"}},
		{name: "stale connection of a re-registered broker", conn: 8, wantBroker: []string{"a", "b"}},
		{name: "connection of two brokers", conn: 7, wantGone: []string{"a:1", "c:1"}, wantBroker: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gone := m.ConnClosed(tt.conn)
			if !reflect.DeepEqual(gone, tt.wantGone) {
				t.Errorf("gone = %v, want %v", gone, tt.wantGone)
			}
			var names []string
			for _, bd := range m.TopicRoute("T").BrokerDatas {
				names = append(names, bd.BrokerName)
			}
			if !reflect.DeepEqual(names, tt.wantBroker) {
				t.Errorf("route brokers = %v, want %v", names, tt.wantBroker)
			}
		})
	}
	if rd := m.TopicRoute("U"); rd != nil {
		t.Errorf("topic U of a closed broker still routed: %+v", rd)
	}
}

func TestDeleteTopic(t *testing.T) {
	setup := func() *RouteInfoManager {
		m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
		m.RegisterBroker(BrokerRegistration{ClusterName: "C1", BrokerAddr: "a:1", BrokerName: "a", Topics: topics(1, tc("T", 4, 6), tc("K", 1, 6))})
		m.RegisterBroker(BrokerRegistration{ClusterName: "C2", BrokerAddr: "b:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6))})
		return m
	}
	tests := []struct {
		name       string
		topic      string
		cluster    string
		wantBroker []string // brokers left in the route, nil = topic gone
		wantTopics []string
	}{
		{name: "everywhere", topic: "T", wantTopics: []string{"K"}},
		{name: "one cluster", topic: "T", cluster: "C1", wantBroker: []string{"b"}, wantTopics: []string{"K", "T"}},
		{name: "last cluster removes the topic", topic: "K", cluster: "C1", wantTopics: []string{"T"}},
		{name: "cluster without the topic", topic: "K", cluster: "C2", wantBroker: []string{"a"}, wantTopics: []string{"K", "T"}},
		{name: "unknown cluster", topic: "T", cluster: "nope", wantBroker: []string{"a", "b"}, wantTopics: []string{"K", "T"}},
		{name: "unknown topic", topic: "X", wantTopics: []string{"K", "T"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := setup()
			m.DeleteTopic(tt.topic, tt.cluster)
			rd := m.TopicRoute(tt.topic)
			var names []string
			if rd != nil {
				for _, q := range rd.QueueDatas {
					names = append(names, q.BrokerName)
				}
			}
			if !reflect.DeepEqual(names, tt.wantBroker) {
				t.Errorf("brokers of %s = %v, want %v", tt.topic, names, tt.wantBroker)
			}
			if got := m.AllTopics(); !reflect.DeepEqual(got, tt.wantTopics) {
				t.Errorf("topics = %v, want %v", got, tt.wantTopics)
			}
		})
	}
}

func TestClusterQueries(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C1", BrokerAddr: "a0:1", BrokerName: "a", Topics: topics(1, tc("T", 4, 6), tc("C1", 1, 7), tc("a", 1, 7))})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C1", BrokerAddr: "a1:1", BrokerName: "a", BrokerID: 1})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C2", BrokerAddr: "b0:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6), tc("U", 2, 6))})

	ci := m.ClusterInfo()
	want := &remoting.ClusterInfo{
		BrokerAddrTable: map[string]*remoting.BrokerData{
			"a": {BrokerName: "a", Cluster: "C1", BrokerAddrs: map[int64]string{0: "a0:1", 1: "a1:1"}},
			"b": {BrokerName: "b", Cluster: "C2", BrokerAddrs: map[int64]string{0: "b0:1"}},
		},
		ClusterAddrTable: map[string][]string{"C1": {"a"}, "C2": {"b"}},
	}
	if !reflect.DeepEqual(ci, want) {
		t.Errorf("cluster info = %s, want %s", remoting.MarshalBody(ci), remoting.MarshalBody(want))
	}
	byCluster := []struct {
		cluster string
		want    []string
	}{
		{cluster: "C1", want: []string{"C1", "T", "a"}},
		{cluster: "C2", want: []string{"T", "U"}},
		{cluster: "none", want: []string{}},
	}
	for _, tt := range byCluster {
		if got := m.TopicsByCluster(tt.cluster); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("topics of %s = %v, want %v", tt.cluster, got, tt.want)
		}
	}
	sys, addr := m.SystemTopics()
	if !reflect.DeepEqual(sys, []string{"C1", "C2", "a", "b"}) || addr != "a0:1" {
		t.Errorf("system topics = %v %q", sys, addr)
	}
	if got := m.AllTopics(); !reflect.DeepEqual(got, []string{"C1", "T", "U", "a"}) {
		t.Errorf("all topics = %v", got)
	}
}

func TestWritePerm(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "a", Topics: topics(1, tc("T", 4, 6), tc("TBW102", 8, 7))})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "b:1", BrokerName: "b", Topics: topics(1, tc("T", 4, 6))})
	steps := []struct {
		name     string
		op       func(string) int
		broker   string
		wantN    int
		wantPerm map[string]int32 // topic → perm of broker a
	}{
		{name: "wipe clears the write bit", op: m.WipeWritePerm, broker: "a", wantN: 2, wantPerm: map[string]int32{"T": 4, "TBW102": 5}},
		{name: "add sets read|write", op: m.AddWritePerm, broker: "a", wantN: 2, wantPerm: map[string]int32{"T": 6, "TBW102": 6}},
		{name: "unknown broker", op: m.WipeWritePerm, broker: "zz", wantN: 0, wantPerm: map[string]int32{"T": 6, "TBW102": 6}},
	}
	for _, st := range steps {
		if n := st.op(st.broker); n != st.wantN {
			t.Errorf("%s: count = %d, want %d", st.name, n, st.wantN)
		}
		for topic, perm := range st.wantPerm {
			for _, q := range m.TopicRoute(topic).QueueDatas {
				if q.BrokerName == "a" && q.Perm != perm {
					t.Errorf("%s: %s perm = %d, want %d", st.name, topic, q.Perm, perm)
				}
				if q.BrokerName == "b" && q.Perm != 6 {
					t.Errorf("%s: other broker's perm changed to %d", st.name, q.Perm)
				}
			}
		}
	}
}

func TestRegisterTopic(t *testing.T) {
	m := NewRouteInfoManager(newFakeClock().Now, zerolog.Nop())
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "a:1", BrokerName: "a"})
	m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: "b:1", BrokerName: "b"})
	tests := []struct {
		name      string
		qds       []*remoting.QueueData
		wantErr   error
		wantRoute []*remoting.QueueData
	}{
		{name: "empty is a no-op", wantRoute: nil},
		{name: "unknown broker changes nothing", qds: []*remoting.QueueData{qd("a", 4, 6), qd("zz", 4, 6)}, wantErr: ErrUnknownBroker},
		{name: "known brokers", qds: []*remoting.QueueData{qd("a", 4, 6)}, wantRoute: []*remoting.QueueData{qd("a", 4, 6)}},
		{name: "adds and replaces", qds: []*remoting.QueueData{qd("a", 2, 4), qd("b", 1, 6)}, wantRoute: []*remoting.QueueData{qd("a", 2, 4), qd("b", 1, 6)}},
	}
	for _, tt := range tests {
		err := m.RegisterTopic("R", tt.qds)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		}
		rd := m.TopicRoute("R")
		var got []*remoting.QueueData
		if rd != nil {
			got = rd.QueueDatas
		}
		if !reflect.DeepEqual(got, tt.wantRoute) {
			t.Errorf("%s: route = %v, want %v", tt.name, got, tt.wantRoute)
		}
	}
}

// TestRouteInfoManagerConcurrent is for -race: registrations, expiry and reads
// from many goroutines must not race or panic.
func TestRouteInfoManagerConcurrent(t *testing.T) {
	clk := newFakeClock()
	m := NewRouteInfoManager(clk.Now, zerolog.Nop())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			name := "b" + strconv.Itoa(g%4)
			for i := 0; i < 200; i++ {
				m.RegisterBroker(BrokerRegistration{ClusterName: "C", BrokerAddr: name + ":" + strconv.Itoa(g), BrokerName: name,
					BrokerID: int64(g / 4), Topics: topics(int64(i), tc("T", 4, 6)), ConnID: uint64(g + 1)})
				_ = m.TopicRoute("T")
				_ = m.ClusterInfo()
				if i%50 == 0 {
					clk.Advance(time.Minute)
					m.ScanNotActiveBroker(120 * time.Second)
					m.ConnClosed(uint64(g + 1))
					m.WipeWritePerm(name)
				}
			}
		}(g)
	}
	wg.Wait()
}
