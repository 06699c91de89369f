package autoswitch

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
	"time"
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
	buf := make([]byte, 64<<10)
	next := func() MasterFrame {
		for {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			frames, err := d.Feed(nil, buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			if len(frames) > 1 {
				t.Fatalf("%d frames at once", len(frames))
			}
			if len(frames) == 1 {
				f := frames[0]
				f.Body = append([]byte(nil), f.Body...)
				return f
			}
		}
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
