package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

// Workload h (issue 14): a consumer group with a selective SQL92 filter
// drains a backlog on one topic.
const (
	topicSQL = "CmpSql"
	groupSQL = "cmp_sql"
	// sqlExpr matches about 10 % of the backlog: a is uniform over 0-49
	// (20 % in 0-9) and region over four values (half are x or y).
	sqlExpr = "a BETWEEN 0 AND 9 AND region IN ('x','y')"
	// sqlConf switches the filter on in both brokers (default false).
	sqlConf = "enablePropertyFilter=true"
)

var sqlRegions = [...]string{"x", "y", "z", "w"}

// sqlProps are the filter properties of backlog message seq: a hash of seq
// (splitmix64) makes them independent of the queue the message lands on.
func sqlProps(seq int64) (a int, region string) {
	z := uint64(seq) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % 50), sqlRegions[(z>>32)%uint64(len(sqlRegions))]
}

// sqlMatches is sqlExpr evaluated on message seq's properties.
func sqlMatches(seq int64) bool {
	a, region := sqlProps(seq)
	return a >= 0 && a <= 9 && (region == "x" || region == "y")
}

// seqSet is a set of message sequence numbers (a bitmap).
type seqSet []uint64

func newSeqSet(n int64) seqSet { return make(seqSet, (n+63)/64) }

// add puts seq in the set and reports whether it was new.
func (s seqSet) add(seq int64) bool {
	w, b := seq/64, uint64(1)<<(seq%64)
	was := s[w]&b != 0
	s[w] |= b
	return !was
}

func (s seqSet) count() int64 {
	var n int
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// diff counts the members of exactly one of s and o.
func (s seqSet) diff(o seqSet) int64 {
	var n int
	for i := range max(len(s), len(o)) {
		var a, b uint64
		if i < len(s) {
			a = s[i]
		}
		if i < len(o) {
			b = o[i]
		}
		n += bits.OnesCount64(a ^ b)
	}
	return int64(n)
}

// digest is a SHA-256 of the set's bitmap (16 hex digits): equal digests,
// equal sets.
func (s seqSet) digest() string {
	h := sha256.New()
	var b [8]byte
	for _, w := range s {
		binary.LittleEndian.PutUint64(b[:], w)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// sqlPhase runs workload h on a fresh ASYNC_FLUSH broker with
// enablePropertyFilter=true.
func (r *runner) sqlPhase(ctx context.Context, t *target) error {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-sql")
	c, _, err := startClusterConf(ctx, t, dir, asyncFlush, []string{sqlConf})
	if err != nil {
		return err
	}
	err = r.sqlDrain(ctx, t, c)
	c.close()
	os.RemoveAll(filepath.Join(dir, "store"))
	return err
}

func (r *runner) sqlDrain(ctx context.Context, t *target, c *cluster) error {
	if err := c.createTopic(ctx, topicSQL); err != nil {
		return err
	}
	n := r.cfg.sqlBacklog
	fill, err := runLoad(ctx, c, loadSpec{
		topic: topicSQL, count: n, inflight: r.cfg.inFlight(), size: 1024, sendOnly: true,
		mark: func(seq int64, now time.Time) (map[string]string, time.Time) {
			a, region := sqlProps(seq)
			return map[string]string{"a": strconv.Itoa(a), "region": region}, now
		},
	})
	if err != nil {
		return err
	}
	r.logf("%s SQL92 backlog: %d stored at %.0f msg/s (%d failed)", t.name, fill.Sent, fill.SendRate(), fill.SendFailed)
	if fill.SendFailed > 0 {
		r.note("%s: workload h: %d of %d backlog sends failed; the delivered sets cannot be compared", t.name, fill.SendFailed, n)
	}
	queues, err := c.route(ctx, topicSQL)
	if err != nil {
		return err
	}
	ends := make([]int64, len(queues))
	for i, q := range queues {
		if ends[i], err = c.adm.MaxOffset(ctx, q); err != nil {
			return err
		}
	}
	d := &sqlDrainer{set: newSeqSet(n), n: n, version: time.Now().UnixMilli()}
	clients := make([]*remoting.Client, r.cfg.conns)
	for i := range clients {
		clients[i] = remoting.NewClient(remoting.ClientOptions{SerializeType: serialize})
		defer clients[i].Close()
	}
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	began := time.Now()
	dctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.drainQueue(dctx, clients[i%len(clients)], q, ends[i])
		}()
	}
	wg.Wait()
	took := time.Since(began)
	u := smp.stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	delivered := d.delivered.Load()
	r.recordUsage(t, "wh", u)
	r.set(t, "wh.delivered", float64(delivered))
	r.set(t, "wh.scanned", float64(fill.Sent))
	r.set(t, "wh.tps", float64(delivered)/took.Seconds())
	r.set(t, "wh.wrong", float64(d.wrong.Load()))
	r.set(t, "wh.dups", float64(d.dups.Load()))
	r.set(t, "wh.pulls", float64(d.pulls.Load()))
	var expected int64
	for seq := range n {
		if sqlMatches(seq) {
			expected++
		}
	}
	r.set(t, "wh.expected", float64(expected))
	if u.CPU > 0 {
		r.set(t, "wh.tpcpu", float64(delivered)/u.CPU.Seconds())
	}
	r.sqlSets[t.name] = d.set
	r.logf("%s SQL92 drain of %d (%q): %d delivered (%d expected, %d not matching, %d duplicates, digest %s) in %v, %d pulls, broker CPU %.2f s, %.0f delivered per CPU-s, peak RSS %.0f MiB",
		t.name, fill.Sent, sqlExpr, delivered, expected, d.wrong.Load(), d.dups.Load(), d.set.digest(), took.Round(time.Millisecond),
		d.pulls.Load(), u.CPU.Seconds(), float64(delivered)/max(u.CPU.Seconds(), 1e-9), float64(u.PeakRSS)/(1<<20))
	if dctx.Err() != nil {
		r.note("%s: workload h did not reach the end of every queue within %v", t.name, drainTimeout)
	}
	if d.failed.Load() > 0 {
		r.note("%s: workload h: %d pulls failed (%s)", t.name, d.failed.Load(), d.lastErr())
	}
	return nil
}

// sqlDrainer pulls every queue with the SQL92 subscription, as a stock
// consumer of the group does (pullBatchSize 32, the expression and its
// version in every request), from offset 0 to the end of the backlog.
type sqlDrainer struct {
	n       int64
	version int64
	mu      sync.Mutex
	set     seqSet
	errText string

	delivered, wrong, dups, pulls, failed atomic.Int64
}

func (d *sqlDrainer) lastErr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errText
}

func (d *sqlDrainer) fail(err string) {
	d.failed.Add(1)
	d.mu.Lock()
	d.errText = err
	d.mu.Unlock()
}

func (d *sqlDrainer) drainQueue(ctx context.Context, cl *remoting.Client, q admin.QueueAddr, end int64) {
	for offset := int64(0); offset < end && ctx.Err() == nil; {
		req := newSQLPull(q, offset, d.version)
		d.pulls.Add(1)
		resp, err := invokePull(ctx, cl, q.Addr, req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.fail(err.Error())
			_ = sleepCtx(ctx, pullErrorWait)
			continue
		}
		res, ok, perr := admin.ParsePullResponse(resp)
		if !ok || perr != nil {
			d.fail(fmt.Sprintf("code %d %s %v", resp.Code, resp.Remark, perr))
			_ = sleepCtx(ctx, pullErrorWait)
			continue
		}
		if res.Status == admin.PullFound {
			d.record(res.Messages)
		}
		if res.NextBeginOffset > offset {
			offset = res.NextBeginOffset
		}
	}
}

func (d *sqlDrainer) record(msgs []*admin.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range msgs {
		seq, err := strconv.ParseInt(m.Properties[propSeq], 10, 64)
		if err != nil || seq < 0 || seq >= d.n {
			d.wrong.Add(1)
			continue
		}
		if !d.set.add(seq) {
			d.dups.Add(1)
			continue
		}
		if !sqlMatches(seq) {
			d.wrong.Add(1)
		}
		d.delivered.Add(1)
	}
}

// newSQLPull is a PULL_MESSAGE with the group's SQL92 subscription, as
// PullAPIWrapper sends it (long polling, subscription flag set).
func newSQLPull(q admin.QueueAddr, offset, version int64) *remoting.Command {
	req := admin.NewPullRequest(&admin.PullSpec{
		Group: groupSQL, Topic: q.Topic, QueueID: q.QueueID, Offset: offset, MaxNums: pullBatch,
		SysFlag: admin.PullFlagSuspend | admin.PullFlagSubscription, Suspend: pullSuspend, Subscription: sqlExpr,
	})
	req.SetExt("expressionType", "SQL92")
	req.SetExtInt("subVersion", version)
	return req
}
