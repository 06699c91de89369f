package store

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
)

// crashChildEnv makes the test binary run runCrashChild instead of the tests.
const crashChildEnv = "RMQ_STORE_CRASH_CHILD_DIR"

const (
	crashTopic     = "Crash"
	crashPutters   = 4
	crashKillAfter = 400 // acknowledgements seen before SIGKILL
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(runCrashChild(dir))
	}
	if dir := os.Getenv(replicaCrashChildEnv); dir != "" {
		os.Exit(runReplicaCrashChild(dir))
	}
	if arg := os.Getenv(truncateCrashChildEnv); arg != "" {
		os.Exit(runTruncateCrashChild(arg))
	}
	os.Exit(m.Run())
}

// runCrashChild puts messages under SYNC_FLUSH from several goroutines until
// it is killed, printing "ACK <queue> <i> <phyOffset> <queueOffset>" once
// each put is acknowledged.
func runCrashChild(dir string) int {
	o := testOptions(dir)
	o.FlushDiskType = SyncFlush
	o.Logger = zerolog.Nop()
	s, err := Open(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 2
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < crashPutters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				r, err := s.PutMessage(testMessage(crashTopic, int32(g), i))
				if err != nil || r.Status != PutOK {
					fmt.Fprintln(os.Stderr, "put:", r, err)
					os.Exit(3)
				}
				line := fmt.Sprintf("ACK %d %d %d %d\n", g, i, r.PhysicalOffset, r.QueueOffset)
				mu.Lock()
				os.Stdout.WriteString(line)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}

type ack struct {
	queue       int32
	i           int
	phy, offset int64
}

func TestKill9DuringSyncFlushKeepsAcknowledgedMessages(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	killed := false
	for sc.Scan() {
		var a ack
		if _, err := fmt.Sscanf(sc.Text(), "ACK %d %d %d %d", &a.queue, &a.i, &a.phy, &a.offset); err != nil {
			t.Fatalf("child printed %q: %v", sc.Text(), err)
		}
		acks = append(acks, a)
		if len(acks) == crashKillAfter && !killed {
			killed = true
			cmd.Process.Kill() // SIGKILL: no Close, no flush, no checkpoint
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acks: %s", len(acks), stderr.String())
	}

	s := openStore(t, testOptions(dir))
	if s.RuntimeInfo()["recoveryCleanShutdown"] != "false" {
		t.Fatal("killed store recovered as a clean shutdown")
	}
	for _, a := range acks {
		want := testMessage(crashTopic, a.queue, a.i)
		rec, err := s.LookMessageByOffset(a.phy)
		if err != nil {
			t.Fatalf("acknowledged message %d/%d at %d: %v", a.queue, a.i, a.phy, err)
		}
		m, err := message.DecodeRecord(rec)
		if err != nil || !bytes.Equal(m.Body, want.Body) || m.QueueOffset != a.offset {
			t.Fatalf("acknowledged message %d/%d at %d: %v %+v", a.queue, a.i, a.phy, err, m)
		}
		if phy, ok := s.CommitLogOffsetOf(crashTopic, a.queue, a.offset); !ok || phy != a.phy {
			t.Fatalf("queue %d offset %d -> %d %v, want %d", a.queue, a.offset, phy, ok, a.phy)
		}
	}
	// Every queue is gap-free: offset i holds message i, acknowledged or not.
	for q := int32(0); q < crashPutters; q++ {
		for j, m := range readQueue(t, s, crashTopic, q) {
			if int(m.Flag) != j {
				t.Fatalf("queue %d offset %d holds message %d", q, j, m.Flag)
			}
		}
	}
	next := s.MaxOffsetInQueue(crashTopic, 0)
	if r := mustPut(t, s, testMessage(crashTopic, 0, 1_000_000)); r.QueueOffset != next {
		t.Fatalf("put after recovery got queue offset %d, want %d", r.QueueOffset, next)
	}
	t.Logf("%d acknowledged before SIGKILL, %d bytes recovered", len(acks), s.MaxPhyOffset())
}
