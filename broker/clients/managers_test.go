package clients

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

var clientTestEpoch = time.Unix(1_700_000_000, 0)

func clSub(topic string, version int64, expr string) *remoting.SubscriptionData {
	return &remoting.SubscriptionData{Topic: topic, SubVersion: version, SubString: expr, ExpressionType: "TAG"}
}

func clConsumerData(group string, subs ...*remoting.SubscriptionData) *remoting.ConsumerData {
	return &remoting.ConsumerData{
		GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", SubscriptionDataSet: subs,
	}
}

func clSameConns(a, b []*remoting.Conn) bool {
	key := func(cs []*remoting.Conn) map[*remoting.Conn]int {
		m := make(map[*remoting.Conn]int)
		for _, c := range cs {
			m[c]++
		}
		return m
	}
	return reflect.DeepEqual(key(a), key(b))
}

func TestConsumerManagerRegisterChanges(t *testing.T) {
	connA, connB := &remoting.Conn{}, &remoting.Conn{}
	type step struct {
		conn        *remoting.Conn
		clientID    string
		subs        []*remoting.SubscriptionData
		wantChanged bool
		wantMembers []*remoting.Conn // when changed
		wantExpr    map[string]string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "first member, then the same heartbeat again",
			steps: []step{
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}, wantExpr: map[string]string{"T": "*"}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: false, wantExpr: map[string]string{"T": "*"}},
			},
		},
		{
			name: "second connection joins",
			steps: []step{
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}},
				{conn: connB, clientID: "B", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA, connB}},
			},
		},
		{
			name: "newer subVersion replaces silently, older is ignored",
			steps: []step{
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 5, "a")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}, wantExpr: map[string]string{"T": "a"}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 6, "b")}, wantChanged: false, wantExpr: map[string]string{"T": "b"}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 4, "c")}, wantChanged: false, wantExpr: map[string]string{"T": "b"}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 6, "d")}, wantChanged: false, wantExpr: map[string]string{"T": "b"}},
			},
		},
		{
			name: "topic added and removed",
			steps: []step{
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*"), clSub("U", 1, "x")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}, wantExpr: map[string]string{"T": "*", "U": "x"}},
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("U", 1, "x")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}, wantExpr: map[string]string{"U": "x"}},
			},
		},
		{
			name: "connection reused by another client id",
			steps: []step{
				{conn: connA, clientID: "A", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}},
				{conn: connA, clientID: "A2", subs: []*remoting.SubscriptionData{clSub("T", 1, "*")}, wantChanged: true, wantMembers: []*remoting.Conn{connA}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewConsumerManager(zerolog.Nop(), clock.NewManual(clientTestEpoch))
			for i, s := range tc.steps {
				changed, members := m.Register(ClientChannel{Conn: s.conn, ClientID: s.clientID, Language: "JAVA", Version: 409}, clConsumerData("G", s.subs...))
				if changed != s.wantChanged {
					t.Fatalf("step %d: changed = %v, want %v", i, changed, s.wantChanged)
				}
				if changed && !clSameConns(members, s.wantMembers) {
					t.Fatalf("step %d: members = %v, want %v", i, members, s.wantMembers)
				}
				for topic, expr := range s.wantExpr {
					got := m.FindSubscription("G", topic)
					if got == nil || got.SubString != expr {
						t.Fatalf("step %d: subscription of %s = %+v, want expression %q", i, topic, got, expr)
					}
				}
				if s.wantExpr != nil && m.SubscriptionCount("G") != len(s.wantExpr) {
					t.Fatalf("step %d: %d subscriptions, want %d", i, m.SubscriptionCount("G"), len(s.wantExpr))
				}
			}
		})
	}
}

func TestConsumerManagerExpiry(t *testing.T) {
	clk := clock.NewManual(clientTestEpoch)
	m := NewConsumerManager(zerolog.Nop(), clk)
	connA, connB, connC := &remoting.Conn{}, &remoting.Conn{}, &remoting.Conn{}
	reg := func(c *remoting.Conn, id, group string) {
		m.Register(ClientChannel{Conn: c, ClientID: id}, clConsumerData(group, clSub("T", 1, "*")))
	}
	reg(connA, "A", "G")
	reg(connB, "B", "G")
	reg(connC, "C", "H")

	clk.Advance(100 * time.Second)
	reg(connA, "A", "G")
	clk.Advance(20 * time.Second) // B and C exactly at the limit: still alive
	if expired, changed := m.ScanExpired(); len(expired) != 0 || len(changed) != 0 {
		t.Fatalf("at 120 s: expired %v changed %v, want none", expired, changed)
	}
	clk.Advance(time.Millisecond)
	expired, changed := m.ScanExpired()
	if !clSameConns(expired, []*remoting.Conn{connB, connC}) {
		t.Fatalf("expired = %v, want B and C", expired)
	}
	if len(changed) != 1 || !clSameConns(changed["G"], []*remoting.Conn{connA}) {
		t.Fatalf("changed = %v, want G → [A] (H emptied: nobody to notify)", changed)
	}
	if got := m.Groups(); !reflect.DeepEqual(got, []string{"G"}) {
		t.Fatalf("groups = %v, want [G]", got)
	}
	if got := m.ClientIDs("G"); !reflect.DeepEqual(got, []string{"A"}) {
		t.Fatalf("G clients = %v, want [A]", got)
	}
}

func TestConsumerManagerLeaving(t *testing.T) {
	connA, connB := &remoting.Conn{}, &remoting.Conn{}
	tests := []struct {
		name        string
		leave       func(m *ConsumerManager) map[string][]*remoting.Conn
		wantChanged map[string][]*remoting.Conn
		wantGroups  []string
	}{
		{
			name:        "connection closed leaves every group",
			leave:       func(m *ConsumerManager) map[string][]*remoting.Conn { return m.ConnClosed(connB) },
			wantChanged: map[string][]*remoting.Conn{"G": {connA}},
			wantGroups:  []string{"G"},
		},
		{
			name: "unregister leaves one group",
			leave: func(m *ConsumerManager) map[string][]*remoting.Conn {
				removed, members := m.Unregister("G", connB)
				if !removed {
					return nil
				}
				return map[string][]*remoting.Conn{"G": members}
			},
			wantChanged: map[string][]*remoting.Conn{"G": {connA}},
			wantGroups:  []string{"G", "H"},
		},
		{
			name: "unregister of a non-member changes nothing",
			leave: func(m *ConsumerManager) map[string][]*remoting.Conn {
				if removed, _ := m.Unregister("H", connA); removed {
					return map[string][]*remoting.Conn{"H": nil}
				}
				return nil
			},
			wantGroups: []string{"G", "H"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewConsumerManager(zerolog.Nop(), clock.NewManual(clientTestEpoch))
			m.Register(ClientChannel{Conn: connA, ClientID: "A"}, clConsumerData("G", clSub("T", 1, "*")))
			m.Register(ClientChannel{Conn: connB, ClientID: "B"}, clConsumerData("G", clSub("T", 1, "*")))
			m.Register(ClientChannel{Conn: connB, ClientID: "B"}, clConsumerData("H", clSub("T", 1, "*")))
			changed := tc.leave(m)
			if len(changed) != len(tc.wantChanged) {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			for g, want := range tc.wantChanged {
				if !clSameConns(changed[g], want) {
					t.Fatalf("changed[%s] = %v, want %v", g, changed[g], want)
				}
			}
			if got := m.Groups(); !reflect.DeepEqual(got, tc.wantGroups) {
				t.Fatalf("groups = %v, want %v", got, tc.wantGroups)
			}
		})
	}
}

func TestConsumerManagerConnectionBody(t *testing.T) {
	m := NewConsumerManager(zerolog.Nop(), clock.NewManual(clientTestEpoch))
	connA, connB := &remoting.Conn{}, &remoting.Conn{}
	m.Register(ClientChannel{Conn: connB, ClientID: "B", Language: "GO", Version: 317}, clConsumerData("G", clSub("T", 1, "*")))
	m.Register(ClientChannel{Conn: connA, ClientID: "A", Language: "JAVA", Version: 409}, clConsumerData("G", clSub("T", 1, "*")))
	cc, ok := m.Connection("G")
	if !ok {
		t.Fatal("group G offline")
	}
	want := &remoting.ConsumerConnection{
		ConnectionSet: []*remoting.Connection{
			{ClientID: "A", Language: "JAVA", Version: 409},
			{ClientID: "B", Language: "GO", Version: 317},
		},
		ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		SubscriptionTable: map[string]*remoting.SubscriptionData{
			"T": {Topic: "T", SubVersion: 1, SubString: "*", ExpressionType: "TAG", CodeSet: []remoting.FlexInt64{}, TagsSet: []string{}},
		},
	}
	if !reflect.DeepEqual(cc, want) {
		t.Fatalf("connection = %s\nwant %s", remoting.MarshalBody(cc), remoting.MarshalBody(want))
	}
	if _, ok := m.Connection("nobody"); ok {
		t.Fatal("unknown group reported online")
	}
	if got := m.GroupsByTopic("T"); !reflect.DeepEqual(got, []string{"G"}) {
		t.Fatalf("GroupsByTopic = %v", got)
	}
	if ch, ok := m.FindChannel("G", "B"); !ok || ch.Conn != connB || ch.Version != 317 {
		t.Fatalf("FindChannel(G, B) = %+v, %v", ch, ok)
	}
}

func TestProducerManager(t *testing.T) {
	clk := clock.NewManual(clientTestEpoch)
	m := NewProducerManager(clk)
	connA, connB := &remoting.Conn{}, &remoting.Conn{}
	m.Register("P", ClientChannel{Conn: connA, ClientID: "A", Language: "JAVA", Version: 409})
	m.Register("P", ClientChannel{Conn: connB, ClientID: "B", Language: "GO", Version: 317})
	m.Register("Q", ClientChannel{Conn: connB, ClientID: "B", Language: "GO", Version: 317})

	if got := m.FindConn("B"); got != connB {
		t.Fatalf("FindConn(B) = %p, want %p", got, connB)
	}
	// Zero Conns share ID 0, so the rotation order is map order here;
	// TestAvailableConnRotates checks it over real connections.
	if c := m.AvailableConn("P"); c != connA && c != connB {
		t.Fatalf("AvailableConn(P) = %p, not a member", c)
	}
	if m.AvailableConn("nobody") != nil {
		t.Fatal("AvailableConn of an unknown group")
	}
	pc, ok := m.Connection("P")
	if !ok || len(pc.ConnectionSet) != 2 || pc.ConnectionSet[0].ClientID != "A" || pc.ConnectionSet[1].Language != "GO" {
		t.Fatalf("Connection(P) = %s, %v", remoting.MarshalBody(pc), ok)
	}

	clk.Advance(90 * time.Second)
	m.Register("P", ClientChannel{Conn: connA, ClientID: "A"})
	clk.Advance(31 * time.Second)
	if expired := m.ScanExpired(); !clSameConns(expired, []*remoting.Conn{connB}) {
		t.Fatalf("expired = %v, want [B] once", expired)
	}
	if got := m.Groups(); !reflect.DeepEqual(got, []string{"P"}) {
		t.Fatalf("groups = %v, want [P]", got)
	}
	if m.FindConn("B") != nil {
		t.Fatal("expired client still found")
	}

	m.Unregister("P", connA, "A")
	if _, ok := m.Connection("P"); ok {
		t.Fatal("emptied group still listed")
	}
	m.Register("P", ClientChannel{Conn: connA, ClientID: "A"})
	m.ConnClosed(connA)
	if len(m.Groups()) != 0 || m.FindConn("A") != nil {
		t.Fatalf("closed connection left groups %v", m.Groups())
	}
}

func TestRebalanceLockManager(t *testing.T) {
	mq := func(q int32) *remoting.MessageQueue {
		return &remoting.MessageQueue{Topic: "T", BrokerName: "b", QueueID: q}
	}
	ids := func(mqs []*remoting.MessageQueue) []int32 {
		out := []int32{}
		for _, m := range mqs {
			out = append(out, m.QueueID)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	type step struct {
		advance time.Duration
		unlock  bool
		client  string
		queues  []int32
		want    []int32 // queues granted (lock steps only)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "held lock blocks others until it lapses",
			steps: []step{
				{client: "A", queues: []int32{0, 1}, want: []int32{0, 1}},
				{client: "B", queues: []int32{0, 1, 2}, want: []int32{2}},
				{advance: 60 * time.Second, client: "B", queues: []int32{0}, want: []int32{}},
				{advance: time.Millisecond, client: "B", queues: []int32{0}, want: []int32{0}},
			},
		},
		{
			name: "renewal keeps the lock",
			steps: []step{
				{client: "A", queues: []int32{0}, want: []int32{0}},
				{advance: 59 * time.Second, client: "A", queues: []int32{0}, want: []int32{0}},
				{advance: 59 * time.Second, client: "B", queues: []int32{0}, want: []int32{}},
				{advance: 2 * time.Second, client: "B", queues: []int32{0}, want: []int32{0}},
			},
		},
		{
			name: "unlock by another client keeps the lock, by the owner frees it",
			steps: []step{
				{client: "A", queues: []int32{0}, want: []int32{0}},
				{unlock: true, client: "B", queues: []int32{0}},
				{client: "B", queues: []int32{0}, want: []int32{}},
				{unlock: true, client: "A", queues: []int32{0}},
				{client: "B", queues: []int32{0}, want: []int32{0}},
			},
		},
		{
			name: "an expired own lock is taken again",
			steps: []step{
				{client: "A", queues: []int32{3}, want: []int32{3}},
				{advance: 5 * time.Minute, client: "A", queues: []int32{3, 3}, want: []int32{3}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(clientTestEpoch)
			m := NewRebalanceLockManager(clk)
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				var mqs []*remoting.MessageQueue
				for _, q := range s.queues {
					mqs = append(mqs, mq(q))
				}
				if s.unlock {
					m.UnlockBatch("G", mqs, s.client)
					continue
				}
				if got := ids(m.TryLockBatch("G", mqs, s.client)); !reflect.DeepEqual(got, s.want) {
					t.Fatalf("step %d: %s locked %v, want %v", i, s.client, got, s.want)
				}
			}
		})
	}

	t.Run("groups are independent", func(t *testing.T) {
		m := NewRebalanceLockManager(clock.NewManual(clientTestEpoch))
		m.TryLockBatch("G1", []*remoting.MessageQueue{mq(0)}, "A")
		if got := m.TryLockBatch("G2", []*remoting.MessageQueue{mq(0)}, "B"); len(got) != 1 {
			t.Fatalf("lock in another group refused: %v", got)
		}
		if holder, ok := m.Holder("G1", mq(0)); !ok || holder != "A" {
			t.Fatalf("Holder(G1) = %q, %v", holder, ok)
		}
	})
}
