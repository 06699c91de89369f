package broker

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// One test per stock key rmq honours (docs/compatibility.md, stock-keys).

func TestClusterAndBrokerTopicEnable(t *testing.T) {
	for _, on := range []bool{true, false} {
		m, err := newTopicConfigManager(filepath.Join(t.TempDir(), "topics.json"), topicConfigDefaults{
			clusterName: "C1", brokerName: "B1", autoCreate: true, defaultQueueNums: 8,
			clusterTopic: on, brokerTopic: !on,
		}, clock.NewManual(coreEpoch), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		want := func(enabled bool) int32 {
			if enabled {
				return topicgroup.PermRead | topicgroup.PermWrite | topicgroup.PermInherit
			}
			return topicgroup.PermInherit
		}
		if tc := m.Get("C1"); tc == nil || tc.Perm != want(on) || tc.ReadQueueNums != 16 {
			t.Errorf("clusterTopicEnable=%v: cluster topic %+v, want perm %d", on, tc, want(on))
		}
		if tc := m.Get("B1"); tc == nil || tc.Perm != want(!on) {
			t.Errorf("brokerTopicEnable=%v: broker topic %+v, want perm %d", !on, tc, want(!on))
		}
	}
}

func TestFlushConsumerOffsetInterval(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	t0 := clk.Now()
	startBroker(t, func(o *Options) { o.Clock = clk; o.FlushConsumerOffsetInterval = 7777 })
	testutil.WaitFor(t, coreTestTimeout, func() bool { return clk.HasTimerAt(t0.Add(7777 * time.Millisecond)) },
		"the offset persist timer at flushConsumerOffsetInterval")
}

func TestBrokerIP1HostNameAtStart(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.BrokerIP1 = "localhost" })
	if want := "localhost:" + strconv.Itoa(tb.opts.ListenPort); tb.Addr() != want {
		t.Errorf("registered address %q, want %q (the name verbatim, as stock)", tb.Addr(), want)
	}
	if h := tb.storeHost(); h.Addr().String() != "127.0.0.1" || int(h.Port()) != tb.opts.ListenPort {
		t.Errorf("STOREHOST %s, want the resolved 127.0.0.1:%d", h, tb.opts.ListenPort)
	}
	if _, err := New(coreTestOptions(t, func(o *Options) { o.BrokerIP1 = "no-such-host.invalid" })); err == nil {
		t.Error("an unresolvable brokerIP1 started")
	}
}

func TestRejectTransactionMessage(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.RejectTransactionMessage = true })
	half := sendArgs{topic: "TxTopic", body: []byte("half"), props: brokertest.Props("TRAN_MSG", "true", "PGROUP", "tx-group")}
	if r := tb.send(half); r.Code != remoting.NoPermission || r.Remark != "the broker[127.0.0.1] sending transaction message is forbidden" {
		t.Fatalf("half message: code %d %q, want NO_PERMISSION", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "TxTopic", body: []byte("plain")})
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("rejectTransactionMessage=false\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	if r := tb.send(half); r.Code != remoting.Success {
		t.Fatalf("half message after the update: code %d %q", r.Code, r.Remark)
	}
}

func TestDefaultQueryMaxNum(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.DefaultQueryMaxNum = 5 })
	for i := range 12 {
		tb.mustSend(sendArgs{topic: "QMax", body: []byte("m" + strconv.Itoa(i)), props: brokertest.Props("KEYS", "common")})
	}
	tb.waitDispatched()
	query := func() int {
		ext := map[string]string{"topic": "QMax", "key": "common", "maxNum": "1", "beginTimestamp": "0",
			"endTimestamp": strconv.FormatInt(math.MaxInt64, 10), "_UNIQUE_KEY_QUERY": "true"}
		r := tb.invoke(remoting.QueryMessage, ext, nil)
		if r.Code != remoting.Success {
			t.Fatalf("query: %d %q", r.Code, r.Remark)
		}
		return len(brokertest.Records(t, r.Body))
	}
	if n := query(); n != 5 {
		t.Fatalf("unique-key query found %d, want defaultQueryMaxNum 5", n)
	}
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("defaultQueryMaxNum=9\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	if n := query(); n != 9 {
		t.Fatalf("after the update the query found %d, want 9", n)
	}
}

func TestMaxTransferOnMessageInDisk(t *testing.T) {
	// Ratio 0: the in-memory window is empty, so every message but none is
	// "in disk" (stock checkInDiskByCommitOffset with a 0 share).
	tb := startBroker(t, func(o *Options) { o.AccessMessageInMemoryMaxRatio = 0 })
	for i := range 20 {
		tb.mustSend(sendArgs{topic: "Disk", body: []byte("m" + strconv.Itoa(i)), queueID: 0})
	}
	tb.waitDispatched()
	pulled := func() int {
		r := tb.pull(pullArgs{topic: "Disk", sysFlag: pullFlagSubscription, subscription: "*", maxMsgs: 32})
		if r.Code != remoting.Success {
			t.Fatalf("pull: %d %q", r.Code, r.Remark)
		}
		return len(brokertest.Records(t, r.Body))
	}
	if n := pulled(); n != 8 {
		t.Fatalf("a pull from the disk returned %d messages, want maxTransferCountOnMessageInDisk 8", n)
	}
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("maxTransferCountOnMessageInDisk=3\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	if n := pulled(); n != 3 {
		t.Fatalf("after the update a pull returned %d, want 3", n)
	}
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("maxTransferCountOnMessageInDisk=32\nmaxTransferBytesOnMessageInDisk=40\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	if n := pulled(); n != 1 {
		t.Fatalf("with a 40-byte cap a pull returned %d, want 1 (the first is always taken)", n)
	}

	mem := startBroker(t, nil) // default ratio 40: a fresh queue is in memory
	for range 20 {
		mem.mustSend(sendArgs{topic: "Mem", body: []byte("m"), queueID: 0})
	}
	mem.waitDispatched()
	r := mem.pull(pullArgs{topic: "Mem", sysFlag: pullFlagSubscription, subscription: "*", maxMsgs: 32})
	if n := len(brokertest.Records(t, r.Body)); n != 20 {
		t.Fatalf("a pull from memory returned %d, want all 20", n)
	}
}

func TestStorePathCommitLog(t *testing.T) {
	clDir := filepath.Join(t.TempDir(), "other-disk", "commitlog")
	tb := startBroker(t, func(o *Options) { o.StorePathCommitLog = clDir })
	for i := range 5 {
		tb.mustSend(sendArgs{topic: "SepCL", body: []byte("m" + strconv.Itoa(i)), queueID: 0})
	}
	tb.waitDispatched()
	tb.stop()
	if files, err := os.ReadDir(clDir); err != nil || len(files) == 0 {
		t.Fatalf("no commitlog file in storePathCommitLog %s: %v", clDir, err)
	}
	if files, _ := os.ReadDir(filepath.Join(tb.opts.StorePathRootDir, "commitlog")); len(files) > 0 {
		t.Fatalf("commitlog files under the root despite storePathCommitLog: %v", files)
	}
	// A restart with the same keys finds the records (stock: a store moved
	// from a Java broker with its commitlog on another disk).
	tb = startBrokerWith(t, tb.opts, nil)
	r := tb.pull(pullArgs{topic: "SepCL", sysFlag: pullFlagSubscription, subscription: "*", maxMsgs: 32})
	if n := len(brokertest.Records(t, r.Body)); r.Code != remoting.Success || n != 5 {
		t.Fatalf("pull after the restart: code %d, %d records, want 5", r.Code, n)
	}
	if err := (&Options{StorePathCommitLog: "/a,/b"}).Validate(); err == nil || !strings.Contains(err.Error(), "storePathCommitLog") {
		t.Errorf("a multi-path storePathCommitLog was not refused: %v", err)
	}
}

func TestOutOfRangeValuesAsStockWithWarnings(t *testing.T) {
	o := DefaultOptions()
	o.MappedFileSizeConsumeQueue = 6000010
	o.DiskMaxUsedSpaceRatio = 150
	w := strings.Join(o.Warnings(), "\n")
	if !strings.Contains(w, "mappedFileSizeConsumeQueue 6000010 is not a multiple of 20: used as 6000020") ||
		!strings.Contains(w, "diskMaxUsedSpaceRatio 150 is outside 10..95: used as 95") {
		t.Fatalf("warnings:\n%s", w)
	}
	if err := o.Validate(); err != nil || o.MappedFileSizeConsumeQueue != 6000020 {
		t.Fatalf("Validate: %v, mappedFileSizeConsumeQueue %d, want 6000020 (rounded up as stock)", err, o.MappedFileSizeConsumeQueue)
	}
}
