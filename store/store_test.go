package store

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
)

func TestPutGetRoundTripAcrossRolls(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	const n = 300
	var results []*PutResult
	for i := 0; i < n; i++ {
		results = append(results, mustPut(t, s, testMessage("TopicA", int32(i%2), i)))
	}
	waitDispatched(t, s)
	if s.MinPhyOffset() != 0 || s.MaxPhyOffset() <= 64<<10 {
		t.Fatalf("commitlog [%d, %d) did not roll", s.MinPhyOffset(), s.MaxPhyOffset())
	}
	for qid := int32(0); qid < 2; qid++ {
		got := readQueue(t, s, "TopicA", qid)
		if len(got) != n/2 {
			t.Fatalf("queue %d: %d messages, want %d", qid, len(got), n/2)
		}
		for j, m := range got {
			i := 2*j + int(qid)
			want := testMessage("TopicA", qid, i)
			if !bytes.Equal(m.Body, want.Body) || m.QueueOffset != int64(j) || m.Flag != int32(i) ||
				m.Properties["TAGS"] != want.Properties["TAGS"] || m.BornHost != testBornHost || m.StoreHost != testStoreHost {
				t.Fatalf("queue %d message %d: got %+v", qid, j, m)
			}
			if m.PhysicalOffset != results[i].PhysicalOffset || m.MsgID != results[i].MsgID(0) {
				t.Fatalf("message %d: phy %d id %s, put said %d %s", i, m.PhysicalOffset, m.MsgID, results[i].PhysicalOffset, results[i].MsgID(0))
			}
		}
	}
}

func TestBlankRecordEndsEveryFullFile(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	for i := 0; i < 200; i++ {
		mustPut(t, s, testMessage("T", 0, i))
	}
	waitDispatched(t, s)
	first := s.cl.files[0]
	// Walk file 0 record by record: it must end with a BLANK covering the rest.
	p := 0
	for {
		l, kind := checkRecord(first.data, p, 0)
		if kind == recBlank {
			if p+l.Total != len(first.data) || len(first.data)-p < blankRecordLength {
				t.Fatalf("BLANK at %d has size %d in a %d-byte file", p, l.Total, len(first.data))
			}
			if _, err := s.LookMessageByOffset(int64(p)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("LookMessageByOffset(BLANK) err = %v, want ErrNotFound", err)
			}
			break
		}
		if kind != recValid {
			t.Fatalf("bad record at %d", p)
		}
		p += l.Total
	}
}

// statusFixture is a closed store: queue 0 of "Q" holds 250 messages in CQ
// files of 100 units; topic "Filtered" holds 10 messages.
func statusFixture(t *testing.T) (Options, []*PutResult) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	var res []*PutResult
	for i := 0; i < 250; i++ {
		res = append(res, mustPut(t, s, testMessage("Q", 0, i)))
	}
	for i := 0; i < 10; i++ {
		mustPut(t, s, testMessage("Filtered", 0, i))
	}
	waitDispatched(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return o, res
}

func TestGetMessageEveryStatus(t *testing.T) {
	o, res := statusFixture(t)
	cq := func(parts ...string) string {
		return filepath.Join(append([]string{o.Dir, consumeQueueDir}, parts...)...)
	}
	// "Q"/1: a copy of queue 0 without its first file → min 100.
	if err := os.MkdirAll(cq("Q", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{segmentName(2000), segmentName(4000)} {
		data, _ := os.ReadFile(cq("Q", "0", f))
		os.WriteFile(cq("Q", "1", f), data, 0o644)
	}
	// "Q"/2: a copy without its middle file → no file for 100..199.
	os.MkdirAll(cq("Q", "2"), 0o755)
	for _, f := range []string{segmentName(0), segmentName(4000)} {
		data, _ := os.ReadFile(cq("Q", "0", f))
		os.WriteFile(cq("Q", "2", f), data, 0o644)
	}
	// "Empty"/0: a queue file without units.
	os.MkdirAll(cq("Empty", "0"), 0o755)
	os.WriteFile(cq("Empty", "0", segmentName(0)), make([]byte, o.MappedFileSizeConsumeQueue), 0o644)
	// Damage the record of the last message of "Q"/0 (the checkpoint is trusted on a clean reopen).
	clFile := filepath.Join(o.Dir, commitLogDir, segmentName(res[249].PhysicalOffset/o.MappedFileSizeCommitLog*o.MappedFileSizeCommitLog))
	f, err := os.OpenFile(clFile, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0, 0, 0, 0}, res[249].PhysicalOffset%o.MappedFileSizeCommitLog+4)
	f.Close()

	s := openStore(t, o)
	rejectAll := func(int64, func() map[string]string) bool { return false }
	tests := []struct {
		name     string
		topic    string
		queueID  int32
		offset   int64
		maxMsgs  int
		filter   func(int64, func() map[string]string) bool
		want     GetStatus
		wantNext int64
		wantMsgs int
		wantMin  int64
		wantMax  int64
	}{
		{name: "found", topic: "Q", offset: 10, maxMsgs: 5, want: Found, wantNext: 15, wantMsgs: 5, wantMax: 250},
		{name: "found stops at the consume-queue file end", topic: "Q", offset: 95, maxMsgs: 32, want: Found, wantNext: 100, wantMsgs: 5, wantMax: 250},
		{name: "no matched message", topic: "Filtered", offset: 0, maxMsgs: 32, filter: rejectAll, want: NoMatchedMessage, wantNext: 10, wantMax: 10},
		{name: "message was removing", topic: "Q", offset: 249, maxMsgs: 32, want: MessageWasRemoving, wantNext: 250, wantMax: 250},
		{name: "offset found null", topic: "Q", queueID: 2, offset: 150, maxMsgs: 32, want: OffsetFoundNull, wantNext: 200, wantMax: 250},
		{name: "offset overflow badly", topic: "Q", offset: 300, maxMsgs: 32, want: OffsetOverflowBadly, wantNext: 250, wantMax: 250},
		{name: "offset overflow one", topic: "Q", offset: 250, maxMsgs: 32, want: OffsetOverflowOne, wantNext: 250, wantMax: 250},
		{name: "offset too small", topic: "Q", queueID: 1, offset: 5, maxMsgs: 32, want: OffsetTooSmall, wantNext: 100, wantMin: 100, wantMax: 250},
		{name: "no matched logic queue", topic: "Nope", offset: 3, maxMsgs: 32, want: NoMatchedLogicQueue, wantNext: 0},
		{name: "no message in queue", topic: "Empty", offset: 3, maxMsgs: 32, want: NoMessageInQueue, wantNext: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.GetMessage(tt.topic, tt.queueID, tt.offset, tt.maxMsgs, 1<<20, tt.filter)
			if r.Status != tt.want || r.NextBeginOffset != tt.wantNext || len(r.Messages) != tt.wantMsgs ||
				r.MinOffset != tt.wantMin || r.MaxOffset != tt.wantMax {
				t.Fatalf("GetMessage = %v next=%d msgs=%d min=%d max=%d, want %v next=%d msgs=%d min=%d max=%d",
					r.Status, r.NextBeginOffset, len(r.Messages), r.MinOffset, r.MaxOffset,
					tt.want, tt.wantNext, tt.wantMsgs, tt.wantMin, tt.wantMax)
			}
			if got := len(r.Body()); tt.wantMsgs > 0 {
				total := 0
				for i, m := range r.Messages {
					total += len(m)
					d, err := message.DecodeRecord(m)
					if err != nil || d.QueueOffset != tt.offset+int64(i) {
						t.Fatalf("message %d: %v %+v", i, err, d)
					}
				}
				if got != total {
					t.Fatalf("Body is %d bytes, messages %d", got, total)
				}
			}
		})
	}
	if got := s.GetMessage("Q", 0, 248, 32, 1<<20, nil); got.Status != Found || len(got.Messages) != 1 || got.NextBeginOffset != 250 {
		t.Fatalf("unreadable unit after a found one: %v %d next %d", got.Status, len(got.Messages), got.NextBeginOffset)
	}
}

func TestGetMessageFiltersAndLimits(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	for i := 0; i < 60; i++ {
		mustPut(t, s, testMessage("F", 0, i))
	}
	waitDispatched(t, s)
	tag1 := message.TagsHash("tag1")
	byTag := func(tags int64, _ func() map[string]string) bool { return tags == tag1 }
	propsCalls := 0
	byKey := func(_ int64, props func() map[string]string) bool {
		propsCalls++
		k := props()["KEYS"]
		return k == "k7" || k == "k8"
	}
	tests := []struct {
		name      string
		offset    int64
		maxMsgs   int
		maxBytes  int
		filter    func(int64, func() map[string]string) bool
		wantFlags []int32
		wantNext  int64
	}{
		{name: "tag filter skips but counts", offset: 0, maxMsgs: 3, maxBytes: 1 << 20, filter: byTag, wantFlags: []int32{1, 4, 7}, wantNext: 8},
		{name: "property filter", offset: 0, maxMsgs: 32, maxBytes: 1 << 20, filter: byKey, wantFlags: []int32{7, 8}, wantNext: 60},
		{name: "message count limit", offset: 10, maxMsgs: 4, maxBytes: 1 << 20, wantFlags: []int32{10, 11, 12, 13}, wantNext: 14},
		{name: "byte limit still returns one", offset: 20, maxMsgs: 32, maxBytes: 1, wantFlags: []int32{20}, wantNext: 21},
		{name: "zero max messages still returns one", offset: 30, maxMsgs: 0, maxBytes: 1 << 20, wantFlags: []int32{30}, wantNext: 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.GetMessage("F", 0, tt.offset, tt.maxMsgs, tt.maxBytes, tt.filter)
			var flags []int32
			for _, b := range r.Messages {
				m, err := message.DecodeRecord(b)
				if err != nil {
					t.Fatal(err)
				}
				flags = append(flags, m.Flag)
			}
			if r.Status != Found || !slices.Equal(flags, tt.wantFlags) || r.NextBeginOffset != tt.wantNext {
				t.Fatalf("GetMessage = %v flags=%v next=%d, want flags=%v next=%d", r.Status, flags, r.NextBeginOffset, tt.wantFlags, tt.wantNext)
			}
		})
	}
	if propsCalls == 0 {
		t.Fatal("property filter never ran")
	}
	// Two-message byte budget: the second record must fit entirely.
	r := s.GetMessage("F", 0, 0, 32, 0, nil)
	first := len(r.Messages[0])
	r = s.GetMessage("F", 0, 0, 32, first+1, nil)
	if len(r.Messages) != 1 || r.NextBeginOffset != 1 {
		t.Fatalf("byte budget: %d messages next %d", len(r.Messages), r.NextBeginOffset)
	}
}

func TestPutMessagesBatch(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	mustPut(t, s, testMessage("B", 1, 0))
	var batch []*message.Message
	for i := 1; i <= 10; i++ {
		batch = append(batch, testMessage("B", 1, i))
	}
	r, err := s.PutMessages(batch)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 10 || r.QueueOffset != 1 || len(r.MsgIDList()) != 10*32+9 || r.Status != PutOK {
		t.Fatalf("PutMessages = %+v", r)
	}
	waitDispatched(t, s)
	got := readQueue(t, s, "B", 1)
	if len(got) != 11 {
		t.Fatalf("%d messages", len(got))
	}
	for i, m := range got[1:] {
		if m.QueueOffset != int64(i+1) || m.MsgID != r.MsgID(i) || !bytes.Equal(m.Body, batch[i].Body) {
			t.Fatalf("batch message %d: %+v", i, m)
		}
		if m.StoreTimestamp != r.StoreTimestamp {
			t.Fatalf("batch message %d store time %d, want %d", i, m.StoreTimestamp, r.StoreTimestamp)
		}
	}
	// A batch never straddles files: fill file 0 until a batch has to roll.
	for s.MaxPhyOffset() < o.MappedFileSizeCommitLog-3000 {
		mustPut(t, s, testMessage("Filler", 0, 5))
	}
	big := make([]*message.Message, 8)
	for i := range big {
		big[i] = testMessage("B", 1, 700+i)
		big[i].Body = make([]byte, 600)
	}
	r, err = s.PutMessages(big)
	if err != nil {
		t.Fatal(err)
	}
	if r.PhysicalOffset != o.MappedFileSizeCommitLog {
		t.Fatalf("rolled batch starts at %d, want %d", r.PhysicalOffset, o.MappedFileSizeCommitLog)
	}

	bad := []struct {
		name string
		msgs []*message.Message
		want error
	}{
		{name: "empty", msgs: nil, want: ErrInvalidBatch},
		{name: "mixed topics", msgs: []*message.Message{testMessage("B", 1, 1), testMessage("C", 1, 2)}, want: ErrInvalidBatch},
		{name: "mixed queues", msgs: []*message.Message{testMessage("B", 1, 1), testMessage("B", 2, 2)}, want: ErrInvalidBatch},
		{name: "prepared transaction", msgs: []*message.Message{func() *message.Message {
			m := testMessage("B", 1, 1)
			m.SysFlag = message.TransactionPreparedType
			return m
		}()}, want: ErrInvalidBatch},
		{name: "larger than a file", msgs: func() []*message.Message {
			var ms []*message.Message
			for i := 0; i < 100; i++ {
				m := testMessage("B", 1, i)
				m.Body = make([]byte, 1000)
				ms = append(ms, m)
			}
			return ms
		}(), want: ErrMessageTooLarge},
	}
	for _, tt := range bad {
		if _, err := s.PutMessages(tt.msgs); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestPutValidation(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MaxMessageSize = 1000
	s := openStore(t, o)
	tests := []struct {
		name   string
		mutate func(m *message.Message)
		want   error
	}{
		{name: "topic too long", mutate: func(m *message.Message) { m.Topic = strings.Repeat("t", 128) }, want: ErrTopicTooLong},
		{name: "empty topic", mutate: func(m *message.Message) { m.Topic = "" }, want: ErrInvalidTopic},
		{name: "path in topic", mutate: func(m *message.Message) { m.Topic = "a/b" }, want: ErrInvalidTopic},
		{name: "dot-dot topic", mutate: func(m *message.Message) { m.Topic = ".." }, want: ErrInvalidTopic},
		{name: "body too large", mutate: func(m *message.Message) { m.Body = make([]byte, 1001) }, want: ErrMessageTooLarge},
		{name: "properties too large", mutate: func(m *message.Message) { m.Properties["BIG"] = strings.Repeat("x", 32767) }, want: ErrPropertiesTooLarge},
		{name: "ipv6 born host", mutate: func(m *message.Message) { m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:9") }, want: ErrHostNotIPv4},
	}
	for _, tt := range tests {
		m := testMessage("V", 0, 1)
		tt.mutate(m)
		if _, err := s.PutMessage(m); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	m := testMessage("V", 0, 1)
	m.Topic = strings.Repeat("t", 127)
	m.BornHost = netip.MustParseAddrPort("[::ffff:10.9.8.7]:99")
	r := mustPut(t, s, m)
	rec, err := s.LookMessageByOffset(r.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := message.DecodeRecord(rec)
	if d.BornHost != netip.MustParseAddrPort("10.9.8.7:99") || d.SysFlag&message.SysFlagBornHostV6 != 0 || d.Topic != m.Topic {
		t.Fatalf("4-in-6 born host stored as %s sysFlag %#x", d.BornHost, d.SysFlag)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMessage(testMessage("V", 0, 2)); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after Close: %v", err)
	}
	if r := s.GetMessage("V", 0, 0, 1, 100, nil); r.Status != NoMatchedLogicQueue || len(r.Messages) != 0 {
		t.Fatalf("GetMessage after Close = %+v", r)
	}
	if _, err := s.LookMessageByOffset(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("LookMessageByOffset after Close: %v", err)
	}
	if _, err := Open(Options{}); err == nil {
		t.Fatal("Open without Dir succeeded")
	}
	if _, err := Open(Options{Dir: t.TempDir(), StoreHost: netip.MustParseAddrPort("[::1]:1")}); !errors.Is(err, ErrHostNotIPv4) {
		t.Fatalf("Open with IPv6 StoreHost: %v", err)
	}
}

func TestTransactionRecordsGetNoQueueUnit(t *testing.T) {
	var mu sync.Mutex
	var seen []DispatchRequest
	o := testOptions(t.TempDir())
	o.OnDispatch = func(d DispatchRequest) {
		mu.Lock()
		seen = append(seen, d)
		mu.Unlock()
	}
	s := openStore(t, o)
	mustPut(t, s, testMessage("TX", 0, 0))
	tests := []struct {
		name        string
		sysFlag     int32
		wantQueueOf int64
		inQueue     bool
	}{
		{name: "prepared", sysFlag: message.TransactionPreparedType, wantQueueOf: 0, inQueue: false},
		{name: "rollback", sysFlag: message.TransactionRollbackType, wantQueueOf: 0, inQueue: false},
		{name: "commit", sysFlag: message.TransactionCommitType, wantQueueOf: 1, inQueue: true},
		{name: "normal", sysFlag: message.TransactionNotType, wantQueueOf: 2, inQueue: true},
	}
	for i, tt := range tests {
		m := testMessage("TX", 0, i+1)
		m.SysFlag = tt.sysFlag
		r := mustPut(t, s, m)
		if r.QueueOffset != tt.wantQueueOf {
			t.Errorf("%s: queue offset %d, want %d", tt.name, r.QueueOffset, tt.wantQueueOf)
		}
	}
	waitDispatched(t, s)
	if max := s.MaxOffsetInQueue("TX", 0); max != 3 {
		t.Fatalf("queue max %d, want 3", max)
	}
	var flags []int32
	for _, m := range readQueue(t, s, "TX", 0) {
		flags = append(flags, m.Flag)
	}
	if !slices.Equal(flags, []int32{0, 3, 4}) {
		t.Fatalf("queue holds flags %v", flags)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 5 || message.TransactionType(seen[1].SysFlag) != message.TransactionPreparedType || seen[1].Props.Get("TAGS") != "tag1" {
		t.Fatalf("OnDispatch saw %+v", seen)
	}
}

func TestDispatchHooks(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	var order []int64
	o := testOptions(t.TempDir())
	o.Clock = clock.NewManual(now)
	o.TagsCode = func(topic string, props message.Props, storeTS int64) int64 {
		if topic == "SCHEDULE_TOPIC_XXXX" {
			return storeTS + 10_000
		}
		return message.TagsHash(props.Get("TAGS"))
	}
	o.OnDispatch = func(d DispatchRequest) {
		mu.Lock()
		order = append(order, d.QueueOffset)
		mu.Unlock()
	}
	s := openStore(t, o)
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("SCHEDULE_TOPIC_XXXX", 2, i))
	}
	waitDispatched(t, s)
	var tags []int64
	s.GetMessage("SCHEDULE_TOPIC_XXXX", 2, 0, 32, 1<<20, func(tc int64, _ func() map[string]string) bool {
		tags = append(tags, tc)
		return true
	})
	if len(tags) != 5 || tags[0] != now.UnixMilli()+10_000 {
		t.Fatalf("tagsCodes %v, want deliver times %d", tags, now.UnixMilli()+10_000)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("OnDispatch order %v", order)
	}
}

func TestOffsetsByTime(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(0))
	o := testOptions(t.TempDir())
	o.Clock = clk
	s := openStore(t, o)
	if ts := s.EarliestStoreTime(); ts != 0 {
		t.Errorf("EarliestStoreTime of an empty store = %d", ts)
	}
	times := []int64{1000, 1000, 2000, 3000, 5000}
	for i, ts := range times {
		clk.Set(time.UnixMilli(ts))
		mustPut(t, s, testMessage("Time", 0, i))
	}
	waitDispatched(t, s)
	tests := []struct {
		ts   int64
		want int64
	}{
		{ts: 0, want: 0},     // all newer: first
		{ts: 1000, want: 0},  // exact: first match
		{ts: 1500, want: 1},  // tie: earlier neighbour
		{ts: 1600, want: 2},  // nearer later neighbour
		{ts: 3000, want: 3},  // exact
		{ts: 3900, want: 3},  // nearer earlier neighbour
		{ts: 4100, want: 4},  // nearer later neighbour
		{ts: 99999, want: 4}, // all older: last message
		{ts: -5, want: 0},    // before everything
		{ts: 2000, want: 2},  // exact
		{ts: 2500, want: 2},  // tie
		{ts: 4000, want: 3},  // tie
		{ts: 4001, want: 4},  // later by a hair
		{ts: 1999, want: 2},  // later by a hair
		{ts: 1001, want: 1},  // earlier by a hair
		{ts: 5000, want: 4},  // exact last
		{ts: 999, want: 0},   // just before first
		{ts: 5001, want: 4},  // just after last
		{ts: 3001, want: 3},  // just after exact
		{ts: 2999, want: 3},  // just before exact
	}
	for _, tt := range tests {
		if got := s.OffsetInQueueByTime("Time", 0, tt.ts); got != tt.want {
			t.Errorf("OffsetInQueueByTime(%d) = %d, want %d", tt.ts, got, tt.want)
		}
	}
	if got := s.OffsetInQueueByTime("Unknown", 0, 1000); got != 0 {
		t.Errorf("unknown queue: %d", got)
	}
	if ts, err := s.EarliestMessageTime("Time", 0); err != nil || ts != 1000 {
		t.Errorf("EarliestMessageTime = %d, %v", ts, err)
	}
	if ts := s.EarliestStoreTime(); ts != 1000 {
		t.Errorf("EarliestStoreTime = %d, want 1000 (the commitlog's first record)", ts)
	}
	if ts, err := s.MessageStoreTimeStamp("Time", 0, 3); err != nil || ts != 3000 {
		t.Errorf("MessageStoreTimeStamp(3) = %d, %v", ts, err)
	}
	for _, off := range []int64{5, -1} {
		if _, err := s.MessageStoreTimeStamp("Time", 0, off); !errors.Is(err, ErrNotFound) {
			t.Errorf("MessageStoreTimeStamp(%d) err = %v", off, err)
		}
	}
	if _, err := s.EarliestMessageTime("Unknown", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("EarliestMessageTime(unknown) err = %v", err)
	}
}

func TestLookupsByOffset(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	var res []*PutResult
	for i := 0; i < 5; i++ {
		res = append(res, mustPut(t, s, testMessage("L", 3, i)))
	}
	waitDispatched(t, s)
	for i, r := range res {
		phy, ok := s.CommitLogOffsetOf("L", 3, int64(i))
		if !ok || phy != r.PhysicalOffset {
			t.Fatalf("CommitLogOffsetOf(%d) = %d %v, want %d", i, phy, ok, r.PhysicalOffset)
		}
		rec, err := s.LookMessageByOffset(phy)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := message.DecodeRecord(rec)
		if m.MsgID != r.MsgID(0) || m.QueueOffset != int64(i) {
			t.Fatalf("record %d: %+v", i, m)
		}
		host, off, err := message.DecodeMessageID(r.MsgID(0))
		if err != nil || host != testStoreHost || off != r.PhysicalOffset {
			t.Fatalf("msg id %s decodes to %s %d %v", r.MsgID(0), host, off, err)
		}
	}
	if _, ok := s.CommitLogOffsetOf("L", 3, 5); ok {
		t.Fatal("CommitLogOffsetOf past the end succeeded")
	}
	if _, ok := s.CommitLogOffsetOf("L", 4, 0); ok {
		t.Fatal("CommitLogOffsetOf on an unknown queue succeeded")
	}
	if _, err := s.LookMessageByOffset(s.MaxPhyOffset()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LookMessageByOffset(max) err = %v", err)
	}
	if _, err := s.LookMessageByOffset(res[1].PhysicalOffset + 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LookMessageByOffset(mid-record) err = %v", err)
	}
	if got := s.QueueIDs("L"); !slices.Equal(got, []int32{3}) {
		t.Fatalf("QueueIDs = %v", got)
	}
	info := s.RuntimeInfo()
	if info["putMessageTimesTotal"] != "5" || info["commitLogMaxOffset"] != strconv.FormatInt(s.MaxPhyOffset(), 10) || info["dispatchBehindBytes"] != "0" {
		t.Fatalf("RuntimeInfo = %v", info)
	}
}
