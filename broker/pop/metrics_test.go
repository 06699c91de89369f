package pop_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/topicgroup"
)

// noRetryTopics serves topic T and refuses to create the POP retry topic,
// so that a due revive fails and stays due.
type noRetryTopics struct{ fakeTopics }

func (noRetryTopics) Get(topic string) *topicgroup.TopicConfig {
	if topic == "T" {
		return &topicgroup.TopicConfig{TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: topicgroup.PermRead | topicgroup.PermWrite}
	}
	return nil
}

func (t noRetryTopics) CreateSystemTopic(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool) {
	if strings.HasPrefix(topic, message.RetryTopicPrefix) {
		return nil, false
	}
	return t.fakeTopics.CreateSystemTopic(topic, queueNums, perm)
}

// consumingGroups finds groups that may consume.
type consumingGroups struct{}

func (consumingGroups) FindOrCreate(group string) *topicgroup.SubscriptionGroupConfig {
	return &topicgroup.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16}
}

type popCall struct {
	topic, group string
	retry        bool
	msgs, bytes  int
}

// popCalls records the pops the service counts (pop.PopCounter).
type popCalls []popCall

func (c *popCalls) CountPop(topic, group string, retry bool, msgs, bytes int) {
	*c = append(*c, popCall{topic, group, retry, msgs, bytes})
}

// TestPopMetrics: a pop is reported to OnPopped with its messages and
// stored bytes; ck and ack records are counted by group, topic, type and
// put status (5.x rocketmq_pop_revive_in_message_total); Checkpoints are
// the live checkpoints; ReviveBehindMs is how long the oldest due revive
// not done has been due.
func TestPopMetrics(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	st := storetest.TempStore(t, t.TempDir(), nil)
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	calls := &popCalls{}
	svc, err := pop.New(pop.Options{
		Store: st, Put: st, Topics: noRetryTopics{}, Groups: consumingGroups{}, Offsets: persistCounter{},
		ClusterName: "C", BrokerName: "B", StoreHost: host, ConfigDir: t.TempDir(), TimerEnabled: true,
		MaxInvisible: time.Hour, PersistInterval: time.Hour, Clock: clk,
		OnPopped: calls,
	})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start()
	defer svc.Stop()
	for _, b := range []string{"a", "bb", "ccc"} {
		if _, err := st.PutMessage(&message.Message{Topic: "T", Body: []byte(b), BornHost: host, BornTimestamp: clk.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return st.MaxOffsetInQueue("T", 0) == 3 }, "dispatch")
	res, err := svc.Pop(pop.PopRequest{Group: "G", Topic: "T", QueueID: 0, MaxMsgs: 32, Invisible: 1000})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("pop: %v %v", res, err)
	}
	bytes := 0
	for _, m := range res.Messages {
		bytes += len(m.Record)
	}
	if len(*calls) != 1 || (*calls)[0] != (popCall{"T", "G", false, 3, bytes}) {
		t.Fatalf("OnPopped calls %+v, want one of 3 messages and %d bytes", *calls, bytes)
	}
	if err := svc.Ack("G", "T", res.Messages[0].Handle); err != nil {
		t.Fatal(err)
	}
	if err := svc.Ack("G", "T", res.Messages[0].Handle); err != nil { // acked already: no record
		t.Fatal(err)
	}
	in := svc.ReviveIn()
	ck, ack := pop.ReviveInKey{Group: "G", Topic: "T", Type: "CK", Status: "PUT_OK"}, pop.ReviveInKey{Group: "G", Topic: "T", Type: "ACK", Status: "PUT_OK"}
	if len(in) != 2 || in[ck] != 1 || in[ack] != 1 {
		t.Fatalf("revive in %v", in)
	}
	if s := svc.Stats(); s.Checkpoints != 1 || s.InFlight != 2 || s.ReviveBehindMs != 0 {
		t.Fatalf("stats after the pop %+v", s)
	}
	// The trigger went straight to the revive queue (no timer store here):
	// the reader takes it as due at once and fails to revive it.
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		svc.Notify(pop.ReviveTopic("C"), 0)
		return svc.Stats().Due == 1
	}, "the trigger to be read")
	clk.Advance(5 * time.Second) // due at popTime+1 s: 4 s ago
	if s := svc.Stats(); s.ReviveBehindMs != 4000 || s.Checkpoints != 1 {
		t.Fatalf("stats with a revive 4 s overdue %+v", s)
	}
}

// TestPopScanTimes: every pass of the service over its checkpoints (the
// revive log read and the due revives) is timed into the 5.3.3 buckets of
// rocketmq_pop_buffer_scan_time_consume_milliseconds; on a manual clock
// that does not move a pass takes 0 ms.
func TestPopScanTimes(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	st := storetest.TempStore(t, t.TempDir(), nil)
	svc, err := pop.New(pop.Options{
		Store: st, Put: st, Topics: noRetryTopics{}, Groups: consumingGroups{}, Offsets: persistCounter{},
		ClusterName: "C", BrokerName: "B", StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), ConfigDir: t.TempDir(),
		TimerEnabled: true, MaxInvisible: time.Hour, PersistInterval: time.Hour, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := svc.ScanTimes(); s.Count != 0 || !slices.Equal(s.Bounds, []int64{1, 10, 100, 1000, 2000, 3000}) {
		t.Fatalf("before any pass: %+v", s)
	}
	svc.Start()
	defer svc.Stop()
	svc.Notify(pop.ReviveTopic("C"), 0)
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return svc.ScanTimes().Count >= 1 }, "a pass")
	s := svc.ScanTimes()
	if s.Sum != 0 || s.Cumulative[0] != s.Count {
		t.Fatalf("passes on a still clock: %+v, want all in the 1 ms bucket, sum 0", s)
	}
}
