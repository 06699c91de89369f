package store

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
)

// fakeUsage is a DiskUsage whose used fraction the test sets.
type fakeUsage struct {
	mu    sync.Mutex
	used  float64
	avail int64
}

func (f *fakeUsage) set(used float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used = used
	f.avail = int64((1 - used) * (1 << 30))
}

func (f *fakeUsage) Usage(string) (float64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used, f.avail, nil
}

// cleanupFixture is a store of 64 KiB commitlog files on a manual clock
// whose cleanup the test drives (no goroutine), with a fake disk.
type cleanupFixture struct {
	s     *Store
	o     Options
	clk   *clock.Manual
	disk  *fakeUsage
	puts  []*PutResult
	files int // commitlog files after fill
}

// at10 is 10:00 UTC, outside the default deleteWhen hour 04.
var at10 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func newCleanupFixture(t *testing.T, adjust func(*RetentionOptions)) *cleanupFixture {
	t.Helper()
	fx := &cleanupFixture{clk: clock.NewManual(at10), disk: &fakeUsage{}}
	fx.disk.set(0.30)
	o := testOptions(t.TempDir())
	o.Clock = fx.clk
	o.Retention = RetentionOptions{
		FileReservedTime:                time.Hour,
		DeleteCommitLogFilesInterval:    -1,
		DeleteConsumeQueueFilesInterval: -1,
		DiskUsage:                       fx.disk,
		noLoop:                          true,
	}
	if adjust != nil {
		adjust(&o.Retention)
	}
	fx.o = o
	fx.s = openStore(t, o)
	return fx
}

// fill stores n messages over two queues, a minute apart per file, and
// makes them flushed and dispatched.
func (fx *cleanupFixture) fill(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		fx.puts = append(fx.puts, mustPut(t, fx.s, testMessage("T", int32(i%2), i)))
		fx.clk.Advance(time.Second)
	}
	waitDispatched(t, fx.s)
	if err := fx.s.cl.flush(); err != nil {
		t.Fatal(err)
	}
	fx.files = fx.fileCount()
}

func (fx *cleanupFixture) fileCount() int {
	fx.s.cl.mu.RLock()
	defer fx.s.cl.mu.RUnlock()
	return len(fx.s.cl.files)
}

func TestCleanupDeletesExpiredFilesAtDeleteWhenHour(t *testing.T) {
	fx := newCleanupFixture(t, nil)
	fx.fill(t, 400)
	if fx.files < 4 {
		t.Fatalf("only %d commitlog files", fx.files)
	}
	// Expired, but 12:00 is not the deleteWhen hour and the disk is fine.
	fx.clk.Set(at10.Add(2 * time.Hour))
	if n := fx.s.cleanRound(); n != 0 {
		t.Fatalf("deleted %d files outside deleteWhen", n)
	}
	// 04:xx the next day, one hour later than the reserved time: every file
	// but the newest goes.
	fx.clk.Set(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC))
	if n := fx.s.cleanRound(); n != fx.files-1 {
		t.Fatalf("deleted %d files, want %d", n, fx.files-1)
	}
	if got := fx.fileCount(); got != 1 {
		t.Fatalf("%d files left", got)
	}
	minPhy := fx.s.MinPhyOffset()
	names, _ := os.ReadDir(filepath.Join(fx.o.Dir, commitLogDir))
	for _, e := range names {
		if start, ok := parseSegmentName(e.Name()); ok && start < minPhy {
			t.Fatalf("deleted file %s still on disk", e.Name())
		}
	}
	checkQueuesFollowMin(t, fx)
}

// checkQueuesFollowMin checks the stock offset correction: each queue's
// minimum is its first message still in the commitlog, a pull below it
// gets OFFSET_TOO_SMALL with that minimum as next offset, and everything
// from it on is readable.
func checkQueuesFollowMin(t *testing.T, fx *cleanupFixture) {
	t.Helper()
	minPhy := fx.s.MinPhyOffset()
	for qid := int32(0); qid < 2; qid++ {
		want := int64(-1)
		for i, p := range fx.puts {
			if int32(i%2) == qid && p.PhysicalOffset >= minPhy {
				want = p.QueueOffset
				break
			}
		}
		if got := fx.s.MinOffsetInQueue("T", qid); got != want {
			t.Fatalf("queue %d min %d, want %d", qid, got, want)
		}
		if want > 0 {
			r := fx.s.GetMessage("T", qid, 0, 32, 1<<20, nil)
			if r.Status != OffsetTooSmall || r.NextBeginOffset != want {
				t.Fatalf("pull below min: %v next %d, want OFFSET_TOO_SMALL next %d", r.Status, r.NextBeginOffset, want)
			}
		}
		msgs := readQueue(t, fx.s, "T", qid)
		if int64(len(msgs)) != fx.s.MaxOffsetInQueue("T", qid)-want {
			t.Fatalf("queue %d: %d messages readable from the min, want %d", qid, len(msgs), fx.s.MaxOffsetInQueue("T", qid)-want)
		}
	}
}

func TestCleanupKeepsFilesInsideReservedTime(t *testing.T) {
	fx := newCleanupFixture(t, nil)
	fx.fill(t, 400)
	// The deleteWhen hour, but the files are younger than the reserved time.
	fx.clk.Set(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC))
	r := fx.s.Retention()
	r.FileReservedTime = 48 * time.Hour
	if err := fx.s.SetRetention(r); err != nil {
		t.Fatal(err)
	}
	if n := fx.s.cleanRound(); n != 0 {
		t.Fatalf("deleted %d files inside the reserved time", n)
	}
}

func TestCleanupDiskRatios(t *testing.T) {
	tests := []struct {
		name    string
		used    float64
		expired bool
		noForce bool
		want    bool // files deleted
		refused bool // puts refused
	}{
		{name: "below max ratio, expired, wrong hour", used: 0.70, expired: true},
		{name: "over max ratio, expired", used: 0.80, expired: true, want: true},
		{name: "over max ratio, not expired", used: 0.80},
		{name: "over forced ratio, not expired", used: 0.86, want: true},
		{name: "over forced ratio, forcing disabled", used: 0.86, noForce: true},
		{name: "over warning ratio", used: 0.91, want: true, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newCleanupFixture(t, func(r *RetentionOptions) { r.CleanFileForciblyDisable = tt.noForce })
			fx.fill(t, 400)
			if tt.expired {
				fx.clk.Advance(2 * time.Hour)
			}
			fx.disk.set(tt.used)
			n := fx.s.cleanRound()
			if (n > 0) != tt.want {
				t.Fatalf("deleted %d files, want deletion %v", n, tt.want)
			}
			if tt.want {
				checkQueuesFollowMin(t, fx)
			}
			_, err := fx.s.PutMessage(testMessage("T", 0, 1000))
			if refused := errors.Is(err, ErrDiskFull); refused != tt.refused {
				t.Fatalf("put err %v, want refused=%v", err, tt.refused)
			}
			if tt.refused {
				if _, full := fx.s.DiskStatus(); !full {
					t.Fatal("DiskStatus does not report the full disk")
				}
				// Freed by an operator: writes resume at the next check.
				fx.disk.set(0.50)
				fx.s.checkDisk()
				mustPut(t, fx.s, testMessage("T", 0, 1001))
			}
		})
	}
}

func TestCleanupReserveRefusesPuts(t *testing.T) {
	fx := newCleanupFixture(t, func(r *RetentionOptions) { r.DiskReserve = 8 << 20 })
	fx.disk.mu.Lock()
	fx.disk.used, fx.disk.avail = 0.5, 4<<20 // half used, but below the reserve
	fx.disk.mu.Unlock()
	fx.s.checkDisk()
	if _, err := fx.s.PutMessage(testMessage("T", 0, 0)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put below the reserve: %v", err)
	}
}

// TestDeliveryPassesTheWarningRatio: over diskSpaceWarningLevelRatio a
// client's put is refused but the store's own delivery of a pending delay or
// timer message (message.Message.Delivery) is taken while the free space is
// above the reserve; below the reserve both are refused. (The 10-minute
// retention soak stalled for good: the pending messages pinned the oldest
// file, their delivery was refused as a client put, so nothing was freed.)
func TestDeliveryPassesTheWarningRatio(t *testing.T) {
	fx := newCleanupFixture(t, func(r *RetentionOptions) { r.DiskReserve = 8 << 20 })
	setDisk := func(used float64, avail int64) {
		fx.disk.mu.Lock()
		fx.disk.used, fx.disk.avail = used, avail
		fx.disk.mu.Unlock()
		fx.s.checkDisk()
	}
	delivery := func(i int) *message.Message {
		m := testMessage("T", 0, i)
		m.Delivery = true
		return m
	}
	setDisk(0.95, 64<<20) // over the warning ratio, above the reserve
	if _, err := fx.s.PutMessage(testMessage("T", 0, 0)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("client put over the warning ratio: %v", err)
	}
	if _, err := fx.s.PutMessage(delivery(1)); err != nil {
		t.Fatalf("delivery over the warning ratio, above the reserve: %v", err)
	}
	setDisk(0.99, 4<<20) // below the reserve
	if _, err := fx.s.PutMessage(delivery(2)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("delivery below the reserve: %v", err)
	}
	if _, err := fx.s.PutMessages([]*message.Message{delivery(3), delivery(4)}); err == nil {
		t.Fatal("a batch is never a delivery")
	}
}

func TestCleanupManualDeleteIgnoresHour(t *testing.T) {
	fx := newCleanupFixture(t, nil)
	fx.fill(t, 400)
	fx.clk.Advance(2 * time.Hour) // expired, 12:00
	if n := fx.s.cleanRound(); n != 0 {
		t.Fatalf("deleted %d before the manual trigger", n)
	}
	fx.s.DeleteExpiredFilesManually()
	if n := fx.s.cleanRound(); n != fx.files-1 {
		t.Fatalf("manual round deleted %d, want %d", n, fx.files-1)
	}
	if got := fx.s.manualDelete.Load(); got != manualDeleteRounds-1 {
		t.Fatalf("%d manual rounds left", got)
	}
}

func TestCleanupKeepsProtectedFiles(t *testing.T) {
	var protected atomic.Int64
	var sawForced atomic.Bool
	protected.Store(math.MaxInt64)
	fx := newCleanupFixture(t, func(r *RetentionOptions) {
		r.ProtectedOffset = func(forced bool) int64 {
			sawForced.Store(forced)
			return protected.Load()
		}
	})
	fx.fill(t, 400)
	// A pending message in the third file.
	third := 2 * fx.o.MappedFileSizeCommitLog
	protected.Store(third + 100)
	fx.clk.Advance(2 * time.Hour)
	fx.disk.set(0.95) // even forced
	if n := fx.s.cleanRound(); n != 2 {
		t.Fatalf("deleted %d files, want the 2 below the protected offset", n)
	}
	if fx.s.MinPhyOffset() != third {
		t.Fatalf("min %d, want %d", fx.s.MinPhyOffset(), third)
	}
	if !sawForced.Load() {
		t.Fatal("the hook was not told the round is forced")
	}
}

func TestCleanupRetriesHangedFile(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	fx := newCleanupFixture(t, func(r *RetentionOptions) {
		r.removeFile = func(path string) error {
			if fail.Load() {
				return errors.New("device busy")
			}
			return os.Remove(path)
		}
	})
	fx.fill(t, 400)
	fx.clk.Advance(2 * time.Hour)
	fx.s.DeleteExpiredFilesManually()
	fx.s.cleanRound()
	if len(fx.s.clean.hanged) == 0 {
		t.Fatal("no hanged file recorded")
	}
	first := fx.s.clean.hanged[0].path
	fail.Store(false)
	fx.clk.Advance(DefaultRedeleteHangedFileInterval / 2)
	fx.s.cleanRound()
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("hanged file retried before redeleteHangedFileInterval: %v", err)
	}
	fx.clk.Advance(DefaultRedeleteHangedFileInterval)
	fx.s.cleanRound()
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hanged file not removed after the interval: %v", err)
	}
	if len(fx.s.clean.hanged) != 0 {
		t.Fatalf("%d hanged files left", len(fx.s.clean.hanged))
	}
}

// Consume-queue and index files wholly below the new minimum go, and a
// reopened store keeps the queues' corrected minimum.
func TestCleanupQueuesAndIndexFollowAndSurviveReopen(t *testing.T) {
	fx := newCleanupFixture(t, func(r *RetentionOptions) {})
	fx.fill(t, 600)
	cqFiles := func() int {
		n := 0
		for _, q := range fx.s.allQueues() {
			q.mu.RLock()
			n += len(q.files)
			q.mu.RUnlock()
		}
		return n
	}
	idxFiles, _ := fx.s.IndexStats()
	before := cqFiles()
	fx.clk.Advance(2 * time.Hour)
	fx.s.DeleteExpiredFilesManually()
	if n := fx.s.cleanRound(); n == 0 {
		t.Fatal("nothing deleted")
	}
	if after := cqFiles(); after >= before {
		t.Fatalf("consume-queue files %d → %d", before, after)
	}
	if n, _ := fx.s.IndexStats(); idxFiles > 1 && n >= idxFiles {
		t.Fatalf("index files %d → %d", idxFiles, n)
	}
	checkQueuesFollowMin(t, fx)
	mins := []int64{fx.s.MinOffsetInQueue("T", 0), fx.s.MinOffsetInQueue("T", 1)}
	fx.s.Close()
	o := fx.o
	fx.s = openStore(t, o)
	for qid, want := range mins {
		if got := fx.s.MinOffsetInQueue("T", int32(qid)); got != want {
			t.Fatalf("after reopen queue %d min %d, want %d", qid, got, want)
		}
	}
	checkQueuesFollowMin(t, fx)
}

func TestCleanExpiredConsumeQueues(t *testing.T) {
	fx := newCleanupFixture(t, nil)
	mustPut(t, fx.s, testMessage("Old", 0, 0))
	fx.fill(t, 400)
	fx.clk.Advance(2 * time.Hour)
	fx.s.DeleteExpiredFilesManually()
	fx.s.cleanRound()
	if n := fx.s.CleanExpiredConsumeQueues(nil); n != 1 {
		t.Fatalf("%d queues cleaned, want 1 (Old/0)", n)
	}
	if ids := fx.s.QueueIDs("Old"); len(ids) != 0 {
		t.Fatalf("Old still has queues %v", ids)
	}
	if ids := fx.s.QueueIDs("T"); len(ids) != 2 {
		t.Fatalf("T has queues %v", ids)
	}
}

func TestParseDeleteWhen(t *testing.T) {
	h, err := ParseDeleteWhen("04; 16;23")
	if err != nil || len(h) != 3 || h[0] != 4 || h[1] != 16 || h[2] != 23 {
		t.Fatalf("ParseDeleteWhen = %v, %v", h, err)
	}
	for _, bad := range []string{"24", "x", "4;-1"} {
		if _, err := ParseDeleteWhen(bad); err == nil {
			t.Fatalf("ParseDeleteWhen(%q) accepted", bad)
		}
	}
}

// Removing a file happens off the put path: while the unlink of a deleted
// file is blocked, puts and reads go on.
func TestCleanupRemovalDoesNotBlockPuts(t *testing.T) {
	entered, release := make(chan string, 16), make(chan struct{})
	fx := newCleanupFixture(t, func(r *RetentionOptions) {
		r.removeFile = func(path string) error {
			select {
			case entered <- path:
			default:
			}
			<-release
			return os.Remove(path)
		}
	})
	fx.fill(t, 400)
	fx.clk.Advance(2 * time.Hour)
	fx.s.DeleteExpiredFilesManually()
	done := make(chan int)
	go func() { done <- fx.s.cleanRound() }()
	select {
	case <-entered:
	case <-time.After(testWait):
		t.Fatal("cleanup never removed a file")
	}
	// The removal is stuck: a put, a dispatch and a read must still complete.
	r := mustPut(t, fx.s, testMessage("T", 0, 5000))
	waitDispatched(t, fx.s)
	if got := fx.s.GetMessage("T", 0, r.QueueOffset, 1, 1<<20, nil); got.Status != Found {
		t.Fatalf("read during a blocked removal: %v", got.Status)
	}
	close(release)
	select {
	case n := <-done:
		if n == 0 {
			t.Fatal("nothing deleted")
		}
	case <-time.After(testWait):
		t.Fatal("cleanup round did not finish")
	}
}
