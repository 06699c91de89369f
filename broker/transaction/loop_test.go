package transaction

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// The check loop's timer fires at its slot even when the clock moved between
// the loop's reading of it and the making of the timer. rmqtest's FastForward
// can advance the message clock at that instant: the loop armed its timer the
// advance past the slot while NextCheck already named the slot as due, and
// TestFastForwardDelayLevelAndTimer (rmqtest, under -race) waited its 30 s
// settle timeout on "busy: transaction check".
func TestCheckTimerMadeWhileTheClockMovesFiresOnTime(t *testing.T) {
	const interval = 10 * time.Second
	clk := clock.NewSlipping(time.UnixMilli(1_700_000_000_000))
	st := storetest.TempStore(t, t.TempDir(), nil)
	s, err := New(Options{
		Store: st, Put: st, Topics: noTopics{}, Offsets: memOffsets{}, Producers: noProducers{},
		CheckInterval: interval, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	s.Start()
	defer s.Stop()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return clk.Pending() == 1 }, "the first pass's timer")
	// The timer after the first pass is made after the clock moved on 3 s.
	clk.Slip(3 * time.Second)
	clk.Set(t0.Add(interval))
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return s.Stats().Passes == 1 }, "the first pass")
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return clk.Slipped() && clk.Pending() == 1 }, "the second pass's timer")
	if next, _ := s.NextCheck(); !next.Equal(t0.Add(2 * interval)) {
		t.Fatalf("NextCheck names %v, want the second slot %v", next, t0.Add(2*interval))
	}
	clk.Set(t0.Add(2 * interval))
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return s.Stats().Passes == 2 },
		"the second pass at its slot (its timer made while the clock moved 3 s)")
}

type noTopics struct{}

func (noTopics) CreateSystemTopic(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool) {
	return &topicgroup.TopicConfig{TopicName: topic, ReadQueueNums: queueNums, WriteQueueNums: queueNums, Perm: perm}, true
}

type noProducers struct{}

func (noProducers) AvailableConn(string) *remoting.Conn { return nil }
