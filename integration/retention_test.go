//go:build linux

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
)

// tmpfsDir mounts a tmpfs of size bytes for this test and unmounts and
// removes it at cleanup. It skips the test unless running as root (CI does).
func tmpfsDir(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root); skipped")
	}
	dir, err := os.MkdirTemp("", "rmq-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a tmpfs (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// code14 matches the Go client's error for SERVICE_NOT_AVAILABLE.
var code14 = regexp.MustCompile(`CODE: 14[^0-9]`)

// fullDiskSender sends 1 KiB messages with SendSync from a few goroutines
// until the broker refuses with SERVICE_NOT_AVAILABLE (14), and records the
// ids of every SEND_OK.
type fullDiskSender struct {
	mu      sync.Mutex
	acked   []string
	refusal string
	other   []error
}

func (s *fullDiskSender) run(t *testing.T, prod interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, topic, prefix string) {
	t.Helper()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-%d-%d", prefix, g, i)
				body := append([]byte(id+" "), bytes.Repeat([]byte("x"), 1024-len(id)-1)...)
				ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
				r, err := prod.SendSync(ctx, testMsg(topic, id, body))
				cancel()
				s.mu.Lock()
				switch {
				case err == nil && r.Status == primitive.SendOK:
					s.acked = append(s.acked, id)
				case err != nil && code14.MatchString(err.Error()):
					s.refusal = err.Error()
				case err != nil:
					s.other = append(s.other, err)
				}
				stop := err != nil || len(s.acked) > 400000
				s.mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	if s.refusal == "" {
		t.Fatalf("no SERVICE_NOT_AVAILABLE after %d messages; other errors: %v", len(s.acked), s.other)
	}
	if !strings.Contains(s.refusal, "the broker's disk is full [CL:") {
		t.Errorf("refusal remark is not the stock one: %s", s.refusal)
	}
}

// sendOK reports whether one send is accepted now.
func sendOK(prod interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, topic, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	r, err := prod.SendSync(ctx, testMsg(topic, id, []byte(id)))
	if err != nil {
		return err
	}
	if r.Status != primitive.SendOK {
		return fmt.Errorf("status %d", r.Status)
	}
	return nil
}

// TestFullDisk fills a 64 MiB tmpfs (10 MiB of it ballast, 8 MiB commitlog
// files, the default queue and index geometry) until sends are refused, and
// checks the issue-13 contract: the refusal is SERVICE_NOT_AVAILABLE with
// the stock remark, the broker stays up, every SEND_OK is consumable, also
// after kill -9 in the full state, writes resume by themselves once an
// operator frees space and once retention deletes expired files, and a Go
// consumer whose offset fell below the new minimum gets the stock
// correction.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	skipShort(t)
	root := tmpfsDir(t, 64<<20)
	ballast := filepath.Join(root, "ballast")
	if err := os.WriteFile(ballast, bytes.Repeat([]byte("b"), 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "rmq")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := []string{"smallStore=false", "mappedFileSizeCommitLog=8388608", "flushDiskType=SYNC_FLUSH",
		"cleanFileForciblyEnable=false", "cleanResourceInterval=1000"}
	p := harness.Start(t, harness.Config{Bin: rmqBin, WorkDir: work, BrokerConf: conf})
	attachClientLog(t)
	topic, behind := uniqueName(t, "t"), uniqueName(t, "cg")

	prod, stopProd := newProducer(t, p.NamesrvAddr(), producer.WithRetry(0))
	// A group that consumes the first messages and then stops: it falls
	// behind retention in the last step.
	first, firstIDs := makeMsgs(topic, "first", 16)
	sendAll(t, prod, first)
	route := waitRoute(t, p, topic)
	cb := newCollector()
	stopBehind := startConsumer(t, p.NamesrvAddr(), consumerConf{group: behind, topic: topic}, cb)
	waitAll(t, consumeTimeout, firstIDs, cb)
	waitCommitted(t, p, behind, topic, int(route.QueueDatas[0].ReadQueueNums))
	stopBehind()

	// 1. Full: refused with the stock code, the broker stays up, every
	// SEND_OK is consumable.
	var a fullDiskSender
	a.run(t, prod, topic, "a")
	t.Logf("phase 1: %d acknowledged before the refusal: %s", len(a.acked), a.refusal)
	if !p.Running() {
		t.Fatalf("broker exited on a full disk:\n%s", p.Logs())
	}
	all := append(append([]string(nil), firstIDs...), a.acked...)
	c1 := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, c1)
	waitAll(t, 2*consumeTimeout, all, c1)

	// 2. An operator frees space: writes resume without a restart.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, consumeTimeout, func() error { return sendOK(prod, topic, "resumed-1") })
	all = append(all, "resumed-1")

	// 3. Full again, then kill -9 in that state: after the restart the
	// store is consistent, refuses again once full, and every SEND_OK is
	// consumable.
	var b fullDiskSender
	b.run(t, prod, topic, "b")
	t.Logf("phase 3: %d more acknowledged before the refusal", len(b.acked))
	all = append(all, b.acked...)
	stopProd()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatalf("restart after kill -9 on a full disk: %v\n%s", err, p.Logs())
	}
	waitRoute(t, p, topic)
	// Recovery drops the file created ahead, so some space is back: fill
	// again until the refusal, on the recovered store.
	prod2, stopProd2 := newProducer(t, p.NamesrvAddr(), producer.WithRetry(0))
	var c fullDiskSender
	c.run(t, prod2, topic, "c")
	t.Logf("phase 3, after kill -9 and restart: %d more acknowledged before the refusal", len(c.acked))
	all = append(all, c.acked...)
	stopProd2()
	c3 := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, c3)
	waitAll(t, 2*consumeTimeout, all, c3)

	// 4. Retention frees space: restart with a one-minute reserved time;
	// once the files expire they are deleted (the disk is over
	// diskMaxUsedSpaceRatio, so the hour does not matter) and writes resume
	// by themselves. The files written before this start are aged by their
	// modification time (Java MappedFile.getLastModifiedTimestamp), so the
	// test moves theirs two minutes back instead of waiting one out.
	if err := p.Stop(); err != nil {
		t.Fatalf("SIGTERM on a full disk: %v", err)
	}
	p = harness.Start(t, harness.Config{Bin: rmqBin, WorkDir: work,
		BrokerConf: append(conf[:len(conf):len(conf)], "fileReservedTimeMinutes=1")})
	prod3, _ := newProducer(t, p.NamesrvAddr(), producer.WithRetry(0))
	// Recovery dropped the file created ahead again: fill to the refusal
	// first, so that only deleted files can let writes resume.
	var d fullDiskSender
	d.run(t, prod3, topic, "d")
	t.Logf("phase 4: %d acknowledged before the refusal; waiting for retention", len(d.acked))
	backdate(t, filepath.Join(work, "store", "commitlog"), 2*time.Minute)
	harness.WaitFor(t, 3*time.Minute, func() error { return sendOK(prod3, topic, "resumed-2") })

	// The lagging group's offsets are below the new minimum: the Go client
	// gets the stock correction and goes on from the minimum.
	// Sends resume as soon as the first deleted file frees enough space (the
	// forced round re-checks the disk after each file); the queues' minimums
	// move when the round has cleaned the consume queues after it.
	adm := admin.New(admin.Options{NamesrvAddr: p.NamesrvAddr()})
	var stats []admin.QueueStats
	harness.WaitFor(t, time.Minute, func() error {
		var err error
		stats, err = adm.TopicStatus(context.Background(), topic)
		if err != nil {
			return err
		}
		for _, q := range stats {
			if q.MinOffset > 4 {
				return nil
			}
		}
		return fmt.Errorf("no queue minimum moved after cleanup: %+v", stats)
	})
	cl := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: behind, topic: topic}, cl)
	waitAll(t, 2*consumeTimeout, []string{"resumed-2"}, cl)
	for _, id := range firstIDs {
		if cl.count(id) > 0 {
			t.Errorf("lagging group got %s, which was consumed and committed before", id)
		}
	}
	for _, m := range cl.all() {
		for _, q := range stats {
			if int32(m.Queue.QueueId) == q.QueueID && m.QueueOffset < q.MinOffset {
				t.Fatalf("consumed queue %d offset %d below the minimum %d", q.QueueID, m.QueueOffset, q.MinOffset)
			}
		}
	}
}

// backdate moves the modification time of every file in dir by age into the
// past.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		at := info.ModTime().Add(-age)
		if err := os.Chtimes(filepath.Join(dir, e.Name()), at, at); err != nil {
			t.Fatal(err)
		}
	}
}
