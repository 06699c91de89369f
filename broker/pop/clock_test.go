package pop_test

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/topicgroup"
)

type fakeTopics struct{}

func (fakeTopics) Get(string) *topicgroup.TopicConfig { return nil }
func (fakeTopics) CreateSystemTopic(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool) {
	return &topicgroup.TopicConfig{TopicName: topic, ReadQueueNums: queueNums, WriteQueueNums: queueNums, Perm: perm}, true
}

type fakeGroups struct{}

func (fakeGroups) FindOrCreate(group string) *topicgroup.SubscriptionGroupConfig {
	return &topicgroup.SubscriptionGroupConfig{GroupName: group}
}

// persistCounter reports each Persist, which the service's persist timer
// calls.
type persistCounter struct{ ch chan struct{} }

func (persistCounter) Query(string, string, int32) (int64, bool) { return 0, false }
func (persistCounter) Commit(string, string, int32, int64)       {}
func (p persistCounter) Persist() error {
	select {
	case p.ch <- struct{}{}:
	default:
	}
	return nil
}

// The revive reader's persist timer fires when the clock reaches its
// deadline even when the clock moved between the reader's reading of it
// and the making of the timer (as schedule's runLevel, commit 2ac4612):
// a timer made from the stale reading would wait the slip past the
// deadline. The reader also revives on that timer.
func TestPersistTimerMadeWhileTheClockMovesFiresOnTime(t *testing.T) {
	const interval = 10 * time.Second
	clk := clock.NewSlipping(time.UnixMilli(1_700_000_000_000))
	st := storetest.TempStore(t, t.TempDir(), nil)
	persisted := persistCounter{ch: make(chan struct{}, 1)}
	svc, err := pop.New(pop.Options{
		Store: st, Put: st, Topics: fakeTopics{}, Groups: fakeGroups{}, Offsets: persisted,
		ClusterName: "C", BrokerName: "B", ConfigDir: t.TempDir(), PersistInterval: interval, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start()
	defer svc.Stop()
	testutil.WaitFor(t, 10*time.Second, func() bool { return clk.Pending() == 1 }, "the persist timer")
	t0 := clk.Now()
	// The next timer is made after the clock moved on by 3 s.
	clk.Slip(3 * time.Second)
	clk.Set(t0.Add(interval))
	wait := func(what string) {
		t.Helper()
		select {
		case <-persisted.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no persist (clock %v, %d timers pending)", what, clk.Now().Sub(t0), clk.Pending())
		}
	}
	wait("the first interval")
	testutil.WaitFor(t, 10*time.Second, func() bool { return clk.Slipped() && clk.Pending() == 1 }, "the next persist timer")
	clk.Set(t0.Add(2 * interval))
	wait("the clock at the second deadline (the timer made while the clock moved 3 s)")
}
