package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

func lmqOptions(dir string) Options {
	o := testOptions(dir)
	o.EnableMultiDispatch, o.EnableLmq = true, true
	return o
}

// lmqMessage is testMessage i with INNER_MULTI_DISPATCH set to queues.
func lmqMessage(topic string, qid int32, i int, queues string) *message.Message {
	m := testMessage(topic, qid, i)
	m.Properties[message.PropInnerMultiDispatch] = queues
	m.Properties[message.PropWait] = "true"
	return m
}

// queueBodies reads a queue's messages: each body and its
// INNER_MULTI_QUEUE_OFFSET.
func queueBodies(t *testing.T, s *Store, topic string, qid int32) (bodies, offs []string) {
	t.Helper()
	for _, m := range readQueue(t, s, topic, qid) {
		bodies = append(bodies, string(m.Body))
		offs = append(offs, m.Properties[message.PropInnerMultiQueueOffset])
	}
	return bodies, offs
}

func TestLmqMultiDispatch(t *testing.T) {
	s := openStore(t, lmqOptions(t.TempDir()))
	// Messages 0..5 on Src/2: even ones to %LMQ%a and %LMQ%b, odd ones to
	// %LMQ%a only; plain messages between them take no LMQ offset.
	for i := range 6 {
		q := "%LMQ%a,%LMQ%b"
		if i%2 == 1 {
			q = "%LMQ%a"
		}
		r := mustPut(t, s, lmqMessage("Src", 2, i, q))
		if r.QueueOffset != int64(2*i) {
			t.Fatalf("message %d: queue offset %d, want %d", i, r.QueueOffset, 2*i)
		}
		mustPut(t, s, testMessage("Src", 2, 100+i))
	}
	waitDispatched(t, s)
	a, aOffs := queueBodies(t, s, "%LMQ%a", 0)
	b, bOffs := queueBodies(t, s, "%LMQ%b", 0)
	if len(a) != 6 || len(b) != 3 {
		t.Fatalf("%%LMQ%%a holds %d, %%LMQ%%b %d; want 6 and 3", len(a), len(b))
	}
	wantA := []string{"0,0", "1", "2,1", "3", "4,2", "5"}
	for i := range a {
		if want := string(testMessage("Src", 2, i).Body); a[i] != want {
			t.Fatalf("%%LMQ%%a[%d] = %q, want %q", i, a[i], want)
		}
		if aOffs[i] != wantA[i] {
			t.Fatalf("%%LMQ%%a[%d] INNER_MULTI_QUEUE_OFFSET = %q, want %q", i, aOffs[i], wantA[i])
		}
	}
	if strings.Join(bOffs, "|") != "0,0|2,1|4,2" {
		t.Fatalf("%%LMQ%%b offsets %v", bOffs)
	}
	// The record is the original: its topic, queue and offset, WAIT dropped.
	for i, m := range readQueue(t, s, "%LMQ%a", 0) {
		if m.Topic != "Src" || m.QueueID != 2 || m.QueueOffset != int64(2*i) {
			t.Fatalf("%%LMQ%%a[%d] is %s/%d@%d, want Src/2@%d", i, m.Topic, m.QueueID, m.QueueOffset, 2*i)
		}
		if _, ok := m.Properties[message.PropWait]; ok {
			t.Fatalf("%%LMQ%%a[%d] kept WAIT: %v", i, m.Properties)
		}
	}
	if got := s.LmqQueueNum(); got != 2 {
		t.Fatalf("LMQ queues %d, want 2", got)
	}
	if n := len(readQueue(t, s, "Src", 2)); n != 12 {
		t.Fatalf("Src/2 holds %d, want 12", n)
	}
}

// Without enableLmq an LMQ name is a topic like any other: the message's
// own queue id. Without enableMultiDispatch the property is only stored.
func TestMultiDispatchSwitches(t *testing.T) {
	o := testOptions(t.TempDir())
	o.EnableMultiDispatch = true
	s := openStore(t, o)
	mustPut(t, s, lmqMessage("Src", 3, 0, "%LMQ%a,Other"))
	waitDispatched(t, s)
	if n, m := len(readQueue(t, s, "%LMQ%a", 3)), len(readQueue(t, s, "Other", 3)); n != 1 || m != 1 {
		t.Fatalf("%%LMQ%%a/3 holds %d, Other/3 %d; want 1 and 1", n, m)
	}
	if s.QueueIDs("%LMQ%a")[0] != 3 || len(s.QueueIDs("%LMQ%a")) != 1 {
		t.Fatalf("%%LMQ%%a queues %v", s.QueueIDs("%LMQ%a"))
	}

	s2 := openStore(t, testOptions(t.TempDir()))
	mustPut(t, s2, lmqMessage("Src", 0, 0, "%LMQ%a"))
	waitDispatched(t, s2)
	m := readQueue(t, s2, "Src", 0)[0]
	if m.Properties[message.PropInnerMultiDispatch] != "%LMQ%a" || m.Properties[message.PropInnerMultiQueueOffset] != "" {
		t.Fatalf("stored properties %v", m.Properties)
	}
	if len(s2.Topics()) != 1 {
		t.Fatalf("topics %v, want Src only", s2.Topics())
	}
}

// A crash recovery that lost an LMQ queue's files rebuilds it from the
// commitlog, and the next put continues its offsets.
func TestLmqRecoveryRebuildsQueues(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, lmqOptions(dir))
	for i := range 40 {
		mustPut(t, s, lmqMessage("Src", int32(i%4), i, "%LMQ%r,%LMQ%s"))
	}
	waitDispatched(t, s)
	crashed := t.TempDir()
	copyDir(t, dir, crashed) // the abort marker stays: a crash
	if err := os.RemoveAll(filepath.Join(crashed, "consumequeue", "%LMQ%r")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(crashed, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, lmqOptions(crashed))
	for _, q := range []string{"%LMQ%r", "%LMQ%s"} {
		bodies, offs := queueBodies(t, r, q, 0)
		if len(bodies) != 40 {
			t.Fatalf("%s after recovery: %d messages, want 40", q, len(bodies))
		}
		for i := range bodies {
			if bodies[i] != string(testMessage("Src", int32(i%4), i).Body) || offs[i] != strconv.Itoa(i)+","+strconv.Itoa(i) {
				t.Fatalf("%s[%d] after recovery: %q offsets %q", q, i, bodies[i], offs[i])
			}
		}
	}
	if got := r.LmqQueueNum(); got != 2 {
		t.Fatalf("LMQ queues after recovery %d, want 2", got)
	}
	mustPut(t, r, lmqMessage("Src", 0, 40, "%LMQ%r"))
	waitDispatched(t, r)
	_, offs := queueBodies(t, r, "%LMQ%r", 0)
	if len(offs) != 41 || offs[40] != "40" {
		t.Fatalf("%%LMQ%%r after a put past recovery: %d messages, last offsets %q", len(offs), offs[len(offs)-1])
	}
}

// Hostile INNER_MULTI_DISPATCH values are stored as stock stores them,
// never crash the store, and make no queue of an illegal name.
func TestLmqHostileValues(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, lmqOptions(dir))
	many := make([]string, 3000)
	for i := range many {
		many[i] = "%LMQ%m" + strconv.Itoa(i)
	}
	cases := []struct {
		queues   string
		wantOffs string // the stored INNER_MULTI_QUEUE_OFFSET; "-" for none
	}{
		{" ", "-"},                      // blank: not multi-dispatched
		{",", ""},                       // splits to nothing: an empty list
		{",,%LMQ%h,,", "0,0,0"},         // empty parts inside are kept, trailing ones dropped
		{"bad/name,%LMQ%h,..", "0,1,0"}, // illegal names: offset 0, no queue
		{"%LMQ%h,%LMQ%h", "2,2"},        // one queue twice: one offset, as stock
		{strings.Repeat("x", 200) + ",%LMQ%h", "0,3"}, // too long for a topic
		{"%LMQ%h\x01evil,%LMQ%h", "0,4"},              // a separator inside a name
		{strings.Join(many[:300], ","), strings.Repeat("0,", 299) + "0"},
	}
	for i, c := range cases {
		mustPut(t, s, lmqMessage("Src", 1, i, c.queues))
	}
	// Too many names for the properties once their offsets are added:
	// refused, nothing stored, the queue table unchanged.
	if _, err := s.PutMessage(lmqMessage("Src", 1, 99, strings.Join(many, ","))); !errors.Is(err, ErrPropertiesTooLarge) {
		t.Fatalf("put naming 3000 queues: %v, want ErrPropertiesTooLarge", err)
	}
	// A batch carrying its own offsets is not wrapped; its units are
	// written only where they continue a queue.
	b1, b2 := testMessage("Src", 1, 50), testMessage("Src", 1, 51)
	b1.Properties[message.PropInnerMultiDispatch], b1.Properties[message.PropInnerMultiQueueOffset] = "%LMQ%h", "999999999"
	b2.Properties[message.PropInnerMultiDispatch], b2.Properties[message.PropInnerMultiQueueOffset] = "%LMQ%h,%LMQ%h", "x,-1"
	if _, err := s.PutMessages([]*message.Message{b1, b2}); err != nil {
		t.Fatalf("batch: %v", err)
	}
	// 300 new queues are 300 files and directories to create: more time
	// than waitDispatched gives on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}

	src := readQueue(t, s, "Src", 1)
	for i, c := range cases {
		got, ok := src[i].Properties[message.PropInnerMultiQueueOffset]
		if (c.wantOffs == "-" && ok) || (c.wantOffs != "-" && got != c.wantOffs) {
			t.Fatalf("case %d (%.40q): INNER_MULTI_QUEUE_OFFSET %q (%t), want %q", i, c.queues, got, ok, c.wantOffs)
		}
	}
	if n := len(readQueue(t, s, "%LMQ%h", 0)); n != 5 {
		t.Fatalf("%%LMQ%%h holds %d, want 5", n)
	}
	if n := len(readQueue(t, s, "%LMQ%m299", 0)); n != 1 {
		t.Fatalf("%%LMQ%%m299 holds %d, want 1", n)
	}
	if got := s.LmqQueueNum(); got != 301 {
		t.Fatalf("LMQ queues %d, want 301", got)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "consumequeue"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if name := e.Name(); name != "Src" && !strings.HasPrefix(name, "%LMQ%") {
			t.Fatalf("consume queue directory %q made from an illegal name", name)
		}
	}
}

// Past maxLmqConsumeQueueNum LMQ queues a multi-dispatch put is refused
// (the check 4.9.8 meant), and the store says LMQ reads are to be refused.
func TestLmqQueueNumLimit(t *testing.T) {
	o := lmqOptions(t.TempDir())
	o.MaxLmqConsumeQueueNum = 2
	s := openStore(t, o)
	mustPut(t, s, lmqMessage("Src", 0, 0, "%LMQ%x,%LMQ%y,%LMQ%z"))
	waitDispatched(t, s)
	if !s.LmqQueueNumExceeded() {
		t.Fatalf("3 LMQ queues over a limit of 2 not reported")
	}
	if _, err := s.PutMessage(lmqMessage("Src", 0, 1, "%LMQ%x")); !errors.Is(err, ErrLmqQueueNumExceeded) {
		t.Fatalf("put past the limit: %v, want ErrLmqQueueNumExceeded", err)
	}
	mustPut(t, s, testMessage("Src", 0, 2)) // messages without the property go on
	s.DeleteTopics("%LMQ%z")
	if s.LmqQueueNumExceeded() || s.LmqQueueNum() != 2 {
		t.Fatalf("after deleting one: %d LMQ queues, exceeded %t", s.LmqQueueNum(), s.LmqQueueNumExceeded())
	}
	mustPut(t, s, lmqMessage("Src", 0, 3, "%LMQ%x"))
}

// With multi-dispatch on, a message without the property allocates no more
// on the put path than with it off.
func TestLmqNoAllocationWithoutProperty(t *testing.T) {
	allocs := func(multi bool) float64 {
		o := testOptions(t.TempDir())
		o.MappedFileSizeCommitLog = 8 << 20
		o.EnableMultiDispatch, o.EnableLmq = multi, multi
		s := openStore(t, o)
		m := testMessage("Src", 0, 1)
		m.RawProperties, m.Properties = message.MarshalProperties(m.Properties), nil
		mustPut(t, s, m)
		return testing.AllocsPerRun(200, func() {
			if _, err := s.PutMessage(m); err != nil {
				t.Fatal(err)
			}
		})
	}
	off, on := allocs(false), allocs(true)
	if on > off {
		t.Fatalf("put allocations with multi-dispatch on: %.1f, off: %.1f", on, off)
	}
}

// FuzzMultiDispatch puts messages with arbitrary INNER_MULTI_DISPATCH and
// INNER_MULTI_QUEUE_OFFSET values, alone and in batches (which carry their
// own offsets): a put succeeds or is refused with a store error, dispatch
// always completes, and every LMQ queue holds a unit per message at most.
func FuzzMultiDispatch(f *testing.F) {
	f.Add("%LMQ%a,%LMQ%b", "", false)
	f.Add(",,%LMQ%a,,", "1,2,3", true)
	f.Add("%LMQ%a", "99999999999999999999", true)
	f.Add("a/b,..,%LMQ%\x01,Src", "-1,x,0,0", true)
	s := openStore(f, lmqOptions(f.TempDir()))
	puts := 0
	f.Fuzz(func(t *testing.T, queues, offs string, batch bool) {
		m := testMessage("Src", 0, puts)
		m.Properties[message.PropInnerMultiDispatch] = queues
		if offs != "" {
			m.Properties[message.PropInnerMultiQueueOffset] = offs
		}
		var err error
		if batch {
			_, err = s.PutMessages([]*message.Message{m, testMessage("Src", 0, puts+1)})
		} else {
			_, err = s.PutMessage(m)
		}
		if err != nil && !errors.Is(err, ErrPropertiesTooLarge) && !errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, ErrLmqQueueNumExceeded) {
			t.Fatalf("put: %v", err)
		}
		if err == nil {
			puts += 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
			t.Fatalf("WaitDispatched: %v", err)
		}
		for _, topic := range s.Topics() {
			if message.IsLmq(topic) && s.MaxOffsetInQueue(topic, 0) > int64(puts) {
				t.Fatalf("%s holds %d units for %d messages", topic, s.MaxOffsetInQueue(topic, 0), puts)
			}
		}
	})
}
