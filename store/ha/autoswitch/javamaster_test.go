package autoswitch

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/store"
)

// TestJavaMaster replicates from a live Java 5.3.3 master in controller
// mode, speaking this package's frames: RMQ_AUTOSWITCH_JAVA_MASTER is its
// HA address (haListenPort) and RMQ_AUTOSWITCH_JAVA_BODY the strings the
// master's commitlog holds (messages sent to it beforehand, one per epoch
// when the script restarts the master to get a second epoch). It is
// skipped without them; how to start such a master is in
// integration/java/controller-oracle.sh (one broker, enableControllerMode).
func TestJavaMaster(t *testing.T) {
	addr := os.Getenv("RMQ_AUTOSWITCH_JAVA_MASTER")
	if addr == "" {
		t.Skip("RMQ_AUTOSWITCH_JAVA_MASTER not set")
	}
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 7})); err != nil {
		t.Fatal(err)
	}
	var d MasterDecoder
	var queue []MasterFrame
	buf := make([]byte, 64<<10)
	// next returns the next frame; one read may complete several (their
	// bodies are copied before the decoder reuses its buffer).
	next := func() MasterFrame {
		for len(queue) == 0 {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			frames, err := d.Feed(nil, buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				f.Body = append([]byte(nil), f.Body...)
				queue = append(queue, f)
			}
		}
		f := queue[0]
		queue = queue[1:]
		return f
	}
	hs := next()
	t.Logf("master handshake: %+v", hs.Handshake)
	if hs.State != StateHandshake || len(hs.Handshake.Entries) == 0 {
		t.Fatalf("handshake %+v", hs)
	}
	table, err := NewEpochTable(hs.Handshake.Entries)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := table.LastEntry()
	if hs.Handshake.LastEpoch != last.Epoch || hs.Handshake.MaxOffset < last.StartOffset {
		t.Fatalf("handshake %+v", hs.Handshake)
	}
	if plan, err := PlanTruncate(nil, 0, hs.Handshake); err != nil || plan.Truncate {
		t.Fatalf("plan %+v %v", plan, err)
	}
	// A new replica reports 0: the master sends from its min offset.
	if _, err := conn.Write(AppendSlaveReport(nil, 0)); err != nil {
		t.Fatal(err)
	}
	// Every frame must be the one TransferCursor predicts: the master cuts
	// at epoch ends and names the next epoch in the chunk that closes one.
	// The available bytes at an offset are the rest of the commitlog, the
	// test's commitlog being far below one file and haTransferBatchSize.
	cursor, ok := NewTransferCursor(table, 0)
	if !ok {
		t.Fatalf("no epoch holds offset 0: %v", table.Entries())
	}
	var got []byte
	for int64(len(got)) < hs.Handshake.MaxOffset {
		f := next()
		t.Logf("transfer: %+v (%d bytes)", f.Transfer, len(f.Body))
		want, ok := cursor.Chunk(table, int32(min(hs.Handshake.MaxOffset-cursor.Next, 32<<10)), f.Transfer.ConfirmOffset)
		if !ok || f.State != StateTransfer || f.Transfer != want {
			t.Fatalf("frame %+v, want %+v (after %d bytes)", f.Transfer, want, len(got))
		}
		if f.Transfer.ConfirmOffset < 0 || f.Transfer.ConfirmOffset > hs.Handshake.MaxOffset {
			t.Fatalf("confirm offset %d", f.Transfer.ConfirmOffset)
		}
		got = append(got, f.Body...)
		if _, err := conn.Write(AppendSlaveReport(nil, int64(len(got)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range strings.Fields(os.Getenv("RMQ_AUTOSWITCH_JAVA_BODY")) {
		if !bytes.Contains(got, []byte(want)) {
			t.Fatalf("commitlog of %d bytes lacks %q", len(got), want)
		}
	}
	t.Logf("replicated %d bytes from the Java master", len(got))
}

// TestJavaMasterService is TestJavaMaster with this package's Service as
// the slave: an rmq slave over a real store (64 MiB commitlog files, as
// the script's broker) follows the live Java 5.3.3 master's HA address,
// handshakes with its broker id, takes the master's epoch table, and
// replicates its commitlog; its epoch file ends as the master's table and
// its consume queues hold the messages (the master's confirm offset let
// them through the gate).
func TestJavaMasterService(t *testing.T) {
	addr := os.Getenv("RMQ_AUTOSWITCH_JAVA_MASTER")
	if addr == "" {
		t.Skip("RMQ_AUTOSWITCH_JAVA_MASTER not set")
	}
	// The master's table and end, from a handshake of our own.
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	conn.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 8}))
	var d MasterDecoder
	var frames []MasterFrame
	buf := make([]byte, 4096)
	for len(frames) == 0 {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if frames, err = d.Feed(frames, buf[:n]); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	hs := frames[0].Handshake
	t.Logf("master: max offset %d, epochs %v", hs.MaxOffset, hs.Entries)

	dir := t.TempDir()
	st, err := store.Open(store.Options{Dir: dir, MappedFileSizeCommitLog: 64 << 20, MappedFileSizeConsumeQueue: 300000 * 20,
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), NoPreallocate: true, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ef, err := OpenEpochFile(nil, filepath.Join(dir, "epochFileCheckpoint"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(st, ef, Config{ListenAddr: "127.0.0.1:0", HeartbeatInterval: time.Second, Logger: testlog.New(t)})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ChangeToSlave("", hs.LastEpoch, 9); err != nil {
		t.Fatal(err)
	}
	s.SetMasterHAAddr(addr)
	testutil.WaitFor(t, 60*time.Second, func() bool { return st.MaxPhyOffset() >= hs.MaxOffset }, "the rmq slave to replicate the Java master")
	if got := entriesOf(ef); !slices.Equal(got, hs.Entries) {
		t.Fatalf("slave epochs %v, master %v", got, hs.Entries)
	}
	var log []byte
	for off := st.MinPhyOffset(); off < st.MaxPhyOffset(); {
		n, err := st.ReadCommitLog(off, buf)
		if err != nil || n == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		log = append(log, buf[:n]...)
		off += int64(n)
	}
	for _, want := range strings.Fields(os.Getenv("RMQ_AUTOSWITCH_JAVA_BODY")) {
		if !bytes.Contains(log, []byte(want)) {
			t.Fatalf("the rmq slave's commitlog of %d bytes lacks %q", len(log), want)
		}
	}
	// The master's confirm offset (its end: no allAckInSyncStateSet) lets
	// the whole commitlog through the slave's gate; a retried send may
	// have stored a message twice, so the queues hold at least the bodies.
	testutil.WaitFor(t, 30*time.Second, func() bool { return st.ConfirmOffset() >= hs.MaxOffset }, "the master's confirm offset")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.WaitDispatched(ctx, hs.MaxOffset); err != nil {
		t.Fatalf("dispatch to %d: %v", hs.MaxOffset, err)
	}
	n := int64(0)
	for q := int32(0); q < 16; q++ {
		n += max(st.MaxOffsetInQueue("AswTopic", q), 0)
	}
	if n < int64(len(strings.Fields(os.Getenv("RMQ_AUTOSWITCH_JAVA_BODY")))) {
		t.Fatalf("the slave's consume queues hold %d messages", n)
	}
	stats := s.Stats()
	t.Logf("rmq slave of the Java master: %d bytes, confirm %d, epochs %v, stats %+v", len(log), s.ConfirmOffset(), entriesOf(ef), stats)
	if !stats.Connected || stats.ReportedOffset < hs.MaxOffset {
		t.Fatalf("stats %+v", stats)
	}
}
