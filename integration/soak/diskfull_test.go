//go:build linux

package soak

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/internal/testutil"
)

var (
	dfDuration  = flag.Duration("diskfull.duration", 3*time.Minute, "how long to produce")
	dfRate      = flag.Int("diskfull.rate", 1500, "plain 1 KiB messages per second")
	dfPending   = flag.Int("diskfull.pendingRate", 5, "timers and delay-level messages sent per second, each")
	dfCap       = flag.Int64("diskfull.cap", 96<<20, "size of the tmpfs holding the store and the ballast")
	dfBallastTo = flag.Float64("diskfull.ballastTo", 0.85, "the ballast fills the file system to this fraction (default: diskSpaceCleanForciblyRatio)")
	dfEvery     = flag.Duration("diskfull.ballastEvery", 30*time.Second, "period of the ballast")
	dfHold      = flag.Duration("diskfull.ballastHold", 8*time.Second, "how long the ballast stays")
)

// Full-disk soak (issue 42, make soak-diskfull): a store on a small tmpfs
// with the stock retention keys (72 h reserved time, deleteWhen 04, the
// stock ratios and delay levels), plain 1 KiB sends at a fixed rate, and
// timers and delay-level messages that stay pending far longer than the
// disk holds: about 40 s of writes fill it to diskMaxUsedSpaceRatio, the
// timers are due 60 s to diskfull.duration after their send and the delay
// levels are 1, 2 and 3 min. Every commitlog file therefore holds pending
// messages when the disk fills; before issue 42 the first one was pinned
// and every send refused until its last timer fell due. A ballast file on
// the same tmpfs, outside the store, fills the file system to
// diskfull.ballastTo every diskfull.ballastEvery for diskfull.ballastHold,
// as another process on a shared disk would. Filling it to the forcible
// ratio (85 %) leaves the store's own growth to carry it over: the cleanup
// checks the disk every second, and the commitlog grows in 4 MiB steps
// (about 4 % of the default cap, every 2 to 3 s), so a broker that can
// delete stays under the warning ratio (90 %), where sends are refused,
// and one whose oldest file is pinned crosses it within seconds. A higher
// diskfull.ballastTo jumps the disk past the warning ratio at once: the
// sends refused until the next disk check then count too.
//
// It asserts: no plain send refused while the store held a deletable
// commitlog file (one before the newest, per the runtime sample preceding
// the refusal), no pending message lost, none delivered before its time,
// and the broker alive at the end without a panic in its log.
func TestSoakDiskFull(t *testing.T) {
	if os.Getenv("RMQ_SOAK") == "" {
		t.Skip("soak: run with make soak-diskfull (RMQ_SOAK=1)")
	}
	rlog.SetLogLevel("error")
	root := testutil.Tmpfs(t, *dfCap) // the capped file system (root only; skips otherwise)
	work := filepath.Join(root, "store")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := harness.BuildRMQ(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Only the small store's geometry (4 MiB commitlog files, nothing
	// fallocated) and a cleanup round every second; every retention key
	// keeps its stock value.
	p := harness.Start(t, harness.Config{Bin: bin, WorkDir: work, BrokerConf: []string{"smallStore=true", "cleanResourceInterval=1000"}})
	ns, brokerAddr := p.NamesrvAddr(), p.BrokerAddr()
	adm := admin.New(admin.Options{NamesrvAddr: ns})
	topics := []string{"DFPlain", "DFTimer", "DFDelay"}
	for _, topic := range topics {
		spec := admin.TopicSpec{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
		if _, err := adm.UpdateTopic(context.Background(), spec, brokerAddr, ""); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	if err := harness.Poll(60*time.Second, func() error {
		for _, topic := range topics {
			if _, err := adm.Route(context.Background(), topic); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	r := &soakRun{t: t, start: time.Now(), timersOut: map[string]int64{}, delaysOut: map[string]int64{}}
	arrived := func(out map[string]int64, got, early *int64) func(m *primitive.MessageExt) {
		return func(m *primitive.MessageExt) {
			due, _ := strconv.ParseInt(m.GetProperty("due"), 10, 64)
			r.mu.Lock()
			defer r.mu.Unlock()
			if _, ok := out[m.GetProperty("id")]; ok {
				delete(out, m.GetProperty("id"))
				*got++
				if m.StoreTimestamp < due {
					*early++
				}
			}
		}
	}
	r.consume(ns, "DFPlain", func(*primitive.MessageExt) { r.plainGot.Add(1) })
	r.consume(ns, "DFTimer", arrived(r.timersOut, &r.timersGot, &r.timersEarly))
	r.consume(ns, "DFDelay", arrived(r.delaysOut, &r.delaysGot, &r.delaysEarly))

	ctx, stop := context.WithTimeout(context.Background(), *dfDuration)
	defer stop()
	var wg sync.WaitGroup
	d := &dfWatch{}
	d.run(ctx, &wg, root, adm, brokerAddr)
	ballast := &dfBallast{path: filepath.Join(root, "ballast"), root: root}
	ballast.run(ctx, &wg)

	body := bytes.Repeat([]byte("p"), 1024)
	r.produce(ctx, &wg, ns, *dfRate, 16, func(int64) *primitive.Message { return primitive.NewMessage("DFPlain", body) }, true)
	// Timers due 60 s to the run's length after their send (60 s at least),
	// delay levels 5..7 (1, 2, 3 min) as far as the run's length allows.
	maxTimer := max(*dfDuration, time.Minute)
	maxLevel := 5
	for maxLevel < 7 && time.Duration(maxLevel-3)*time.Minute <= *dfDuration {
		maxLevel++
	}
	r.produce(ctx, &wg, ns, *dfPending, 2, func(i int64) *primitive.Message {
		delay := time.Minute + time.Duration(i*7919%int64(maxTimer-time.Minute+time.Second)/int64(time.Second))*time.Second
		due := time.Now().Add(delay).UnixMilli()
		id := "t" + strconv.FormatInt(i, 10)
		m := primitive.NewMessage("DFTimer", body)
		m.WithDelayTimestamp(time.UnixMilli(due))
		m.WithProperty("due", strconv.FormatInt(due, 10))
		m.WithProperty("id", id)
		r.mu.Lock()
		r.timersOut[id] = due
		r.mu.Unlock()
		return m
	}, false)
	r.produce(ctx, &wg, ns, *dfPending, 2, func(i int64) *primitive.Message {
		level := 5 + int(i)%(maxLevel-4)
		due := time.Now().Add(time.Duration(level-4) * time.Minute).UnixMilli()
		id := "d" + strconv.FormatInt(i, 10)
		m := primitive.NewMessage("DFDelay", body)
		m.WithDelayTimeLevel(level)
		m.WithProperty("due", strconv.FormatInt(due, 10))
		m.WithProperty("id", id)
		r.mu.Lock()
		r.delaysOut[id] = due
		r.mu.Unlock()
		return m
	}, false)
	wg.Wait()
	produced := time.Since(r.start)

	longest := max(maxTimer, time.Duration(maxLevel-4)*time.Minute)
	harness.Poll(longest+60*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if n := len(r.timersOut) + len(r.delaysOut); n > 0 {
			return fmt.Errorf("%d timer/delay messages not delivered", n)
		}
		return nil
	})

	// Figures.
	r.mu.Lock()
	defer r.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	refusedDeletable := 0
	for _, at := range r.failAt {
		if s, ok := d.before(at); ok && s.deletable() {
			refusedDeletable++
		}
	}
	info, _ := runtimeInfo(context.Background(), adm, brokerAddr)
	logs := p.Logs()
	alive := p.Running()
	panicked := strings.Contains(logs, "panic:") || strings.Contains(logs, "fatal error:")
	t.Logf("full-disk soak: %v of sends (%v with the deliveries) at %d plain msg/s on a %d MiB tmpfs, stock retention keys", *dfDuration, time.Since(r.start).Round(time.Second), *dfRate, *dfCap>>20)
	t.Logf("  pending             timers due 1 min to %v after their send, delay levels 5..%d, %d/s each", maxTimer, maxLevel, *dfPending)
	t.Logf("  ballast             to %.0f %% of the file system every %v for %v: %d times (%d MiB at most)", *dfBallastTo*100, *dfEvery, *dfHold, ballast.times, ballast.maxBytes>>20)
	t.Logf("  disk use peak       %.1f %% (%d samples over 90 %%)", d.maxUsed*100, d.over90)
	t.Logf("  commitlog           %d MiB written; files deleted %s commitlog, %s consume queue, %s index", (d.lastMax-d.firstMax)>>20,
		info["cleanDeletedCommitLogFiles"], info["cleanDeletedConsumeQueueFiles"], info["cleanDeletedIndexFiles"])
	t.Logf("  re-stored ahead     timers in %d rounds, delay-level messages in %d; a file kept for pending messages %d times",
		strings.Count(logs, "pending timers re-stored ahead"), strings.Count(logs, "delay-level messages re-stored as timers"),
		strings.Count(logs, "commitlog file kept for pending messages"))
	t.Logf("  plain sends         %d ok, %d refused or failed (%d while a deletable file existed), %d consumed", len(r.lat), r.sendFailed, refusedDeletable, r.plainGot.Load())
	t.Logf("  timers              %d delivered, %d early, %d lost", r.timersGot, r.timersEarly, len(r.timersOut))
	t.Logf("  delay messages      %d delivered, %d early, %d lost", r.delaysGot, r.delaysEarly, len(r.delaysOut))
	t.Logf("  pending sends       %d failed", r.pendingFailed)
	t.Logf("  broker              alive %v, panic in its log %v (produced for %v)", alive, panicked, produced.Round(time.Second))
	if len(r.failures) > 0 {
		t.Logf("  first failures      %v", r.failures)
	}
	if refusedDeletable > 0 {
		t.Errorf("%d plain sends refused while a deletable commitlog file existed", refusedDeletable)
	}
	if r.pendingFailed > 0 {
		t.Errorf("%d timer/delay sends failed", r.pendingFailed)
	}
	if r.timersEarly+r.delaysEarly > 0 || len(r.timersOut)+len(r.delaysOut) > 0 {
		t.Errorf("timers/delays: %d early, %d lost", r.timersEarly+r.delaysEarly, len(r.timersOut)+len(r.delaysOut))
	}
	if !alive || panicked {
		t.Errorf("broker alive %v, panic in its log %v", alive, panicked)
	}
}

// dfSample is one reading of the broker's commitlog offsets.
type dfSample struct {
	at       time.Time
	min, max int64
}

// deletable reports whether the commitlog held a file before the newest.
func (s dfSample) deletable() bool {
	return s.min < s.max/broker.SmallStoreCommitLogSize*broker.SmallStoreCommitLogSize
}

// dfWatch samples the file system every 100 ms and the broker's commitlog
// offsets every 200 ms.
type dfWatch struct {
	mu                sync.Mutex
	samples           []dfSample
	maxUsed           float64
	over90            int
	firstMax, lastMax int64
}

// before is the last sample taken at or before at.
func (d *dfWatch) before(at time.Time) (dfSample, bool) {
	for i := len(d.samples) - 1; i >= 0; i-- {
		if !d.samples[i].at.After(at) {
			return d.samples[i], true
		}
	}
	return dfSample{}, false
}

func (d *dfWatch) run(ctx context.Context, wg *sync.WaitGroup, root string, adm *admin.Admin, broker string) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if used, ok := fsUsed(root); ok {
				d.mu.Lock()
				d.maxUsed = max(d.maxUsed, used)
				if used > 0.90 {
					d.over90++
				}
				d.mu.Unlock()
			}
			if i%2 != 0 {
				continue
			}
			at := time.Now()
			info, err := runtimeInfo(ctx, adm, broker)
			if err != nil {
				continue
			}
			minPhy, _ := strconv.ParseInt(info["commitLogMinOffset"], 10, 64)
			maxPhy, _ := strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
			d.mu.Lock()
			if d.firstMax == 0 {
				d.firstMax = maxPhy
			}
			d.lastMax = maxPhy
			d.samples = append(d.samples, dfSample{at: at, min: minPhy, max: maxPhy})
			d.mu.Unlock()
		}
	}()
}

func fsUsed(root string) (float64, bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(root, &st) != nil || st.Blocks == 0 {
		return 0, false
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks), true
}

// dfBallast fills the file system outside the store, in 1 MiB writes up to
// diskfull.ballastTo, holds it, and removes it.
type dfBallast struct {
	path, root string
	times      int
	maxBytes   int64
}

func (b *dfBallast) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer os.Remove(b.path)
		chunk := bytes.Repeat([]byte("b"), 1<<20)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(*dfEvery):
			}
			f, err := os.Create(b.path)
			if err != nil {
				continue
			}
			var n int64
			for {
				used, ok := fsUsed(b.root)
				if !ok || used >= *dfBallastTo {
					break
				}
				if _, err := f.Write(chunk); err != nil {
					break // full: the store's own writes are refused past its reserve
				}
				n += int64(len(chunk))
			}
			f.Close()
			b.times++
			b.maxBytes = max(b.maxBytes, n)
			select {
			case <-ctx.Done():
			case <-time.After(*dfHold):
			}
			os.Remove(b.path)
		}
	}()
}
