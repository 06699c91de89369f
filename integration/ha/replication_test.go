package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

const (
	queues = 4
	// catchUpTimeout covers a Java slave's first report (5 s after it
	// connects), its 5 s reconnect pause, and a registration round (a slave
	// started before its master learns it on the next one, 30 s later).
	catchUpTimeout = 90 * time.Second
	sendTimeout    = 10 * time.Second
	// bodySize makes a batch of a thousand messages span a commitlog file
	// (harness.HACommitLogFileSize, 1 MiB).
	bodySize = 1000
	idProp   = "haid"
)

var nameSeq atomic.Int64

func uniqueName(kind string) string {
	return fmt.Sprintf("ha_%s_%s_%d", kind, time.Now().Format("150405"), nameSeq.Add(1))
}

// startPair starts a pair of the pairing with both brokers readable
// (slaveReadEnable) and the roles given.
func startPair(t *testing.T, p pairing, lib, masterRole string, conf ...string) *harness.Pair {
	t.Helper()
	work := ""
	if keep := os.Getenv("RMQ_HA_KEEP"); keep != "" {
		// Debugging: the stores and logs stay in a directory under keep.
		var err error
		if work, err = os.MkdirTemp(keep, strings.ReplaceAll(t.Name(), "/", "_")+"-"); err != nil {
			t.Fatal(err)
		}
	}
	return harness.StartPair(t, harness.PairConfig{
		RMQBin: rmqBin, JavaLib: lib, WorkDir: work,
		Master: harness.NodeSpec{Impl: p.master, Role: masterRole},
		Slave:  harness.NodeSpec{Impl: p.slave, Role: harness.RoleSlave},
		Conf:   append([]string{"slaveReadEnable=true"}, conf...),
	})
}

func rawClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(c.Close)
	return c
}

// createTopic creates topic on the master and waits until the name server
// routes it (producers need a route; the slave copies the topic config from
// the master on its own, within 10 s for 4.9.x).
func createTopic(t *testing.T, pr *harness.Pair, topic string) {
	t.Helper()
	cl := rawClient(t)
	if err := harness.CreateTopic(cl, pr.Master.Addr(), topic, queues); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 45*time.Second, func() error {
		req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
		resp, err := cl.InvokeTimeout(pr.NamesrvAddr(), req, 3*time.Second)
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("route of %s: code %d %q", topic, resp.Code, resp.Remark)
		}
		return nil
	})
}

// waitFollowing sends a few messages and waits until the slave holds them. A
// slave with an empty store reports offset 0, and a stock master answers that
// from the start of its last commitlog file, not from its first: a slave that
// connects only after the master rolled a file never gets the earlier ones
// (4.9.x's HAConnection; rmq does as stock). A 4.9.x slave that boots before
// it knows its master retries the connection 5 s later, so a test sending at
// once would race it.
func waitFollowing(t *testing.T, pr *harness.Pair, p rocketmq.Producer, topic string) []sent {
	t.Helper()
	acked := sendBatch(t, p, topic, "warm", 2*queues)
	if _, err := harness.WaitCaughtUp(rawClient(t), pr.Master.Addr(), pr.Slave.Addr(), topic, queues, catchUpTimeout); err != nil {
		t.Fatal(err)
	}
	return acked
}

func newProducer(t *testing.T, ns string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(uniqueName("pg")),
		producer.WithInstanceName(uniqueName("pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// sent is what the producer was told about one message.
type sent struct {
	id          string
	queue       int
	queueOffset int64
	offsetMsgID string
}

// sendBatch sends n messages with SendSync and wants SEND_OK for each.
func sendBatch(t *testing.T, p rocketmq.Producer, topic, prefix string, n int) []sent {
	t.Helper()
	out := make([]sent, 0, n)
	pad := bytes.Repeat([]byte("x"), bodySize)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		m := primitive.NewMessage(topic, append([]byte(id+" "), pad...))
		m.WithProperty(idProp, id)
		m.WithKeys([]string{id})
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %s: %v", id, err)
		}
		if r.Status != primitive.SendOK {
			t.Fatalf("send %s: status %d, want SEND_OK", id, r.Status)
		}
		out = append(out, sent{id: id, queue: r.MessageQueue.QueueId, queueOffset: r.QueueOffset, offsetMsgID: r.OffsetMsgID})
	}
	return out
}

// checkSlave waits until the slave holds every queue of topic up to the
// master's max offset, compares both byte for byte, and checks that every
// acknowledged send is there at the queue offset and with the msgId the
// producer was told; a sample of msgIds is also looked up on the slave by id.
func checkSlave(t *testing.T, pr *harness.Pair, topic string, acked []sent) {
	t.Helper()
	cl := rawClient(t)
	maxes, err := harness.WaitCaughtUp(cl, pr.Master.Addr(), pr.Slave.Addr(), topic, queues, catchUpTimeout)
	if err != nil {
		t.Fatal(err)
	}
	// A slave serves the topic once it has copied the master's topic config
	// (4.9.x: every 10 s); until then a pull answers TOPIC_NOT_EXIST. A
	// difference in the bytes fails at once.
	var recs [][]*message.MessageExt
	harness.WaitFor(t, 30*time.Second, func() error {
		recs, err = harness.CompareQueues(cl, pr.Master.Addr(), pr.Slave.Addr(), uniqueName("reader"), topic, maxes)
		if errors.Is(err, harness.ErrQueueDiffers) {
			t.Fatal(err)
		}
		return err
	})
	for i, s := range acked {
		q := recs[s.queue]
		if s.queueOffset >= int64(len(q)) {
			t.Fatalf("%s: acknowledged at queue %d offset %d; the queue ends at %d", s.id, s.queue, s.queueOffset, len(q))
		}
		m := q[s.queueOffset]
		if got := m.Properties[idProp]; got != s.id {
			t.Fatalf("queue %d offset %d holds %q, want %s", s.queue, s.queueOffset, got, s.id)
		}
		if m.MsgID != s.offsetMsgID {
			t.Fatalf("%s: stored msgId %s, the producer was told %s", s.id, m.MsgID, s.offsetMsgID)
		}
		if i%97 == 0 { // queryMsgById against the slave's address
			mb, err := harness.ViewByID(cl, pr.Master.Addr(), s.offsetMsgID)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := harness.ViewByID(cl, pr.Slave.Addr(), s.offsetMsgID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mb, sb) {
				t.Fatalf("%s: VIEW_MESSAGE_BY_ID answers differ: master %d bytes, slave %d", s.id, len(mb), len(sb))
			}
		}
	}
}

// commitLogFiles lists a broker's commitlog file names.
func commitLogFiles(t *testing.T, n *harness.Node) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(n.StoreDir(), "commitlog"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && len(e.Name()) == 20 {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestReplication: an ASYNC_MASTER and its slave. Messages sent to the
// master (several commitlog files' worth) are on the slave byte for byte;
// the slave killed with SIGKILL and restarted catches up with what was sent
// meanwhile; the master stopped and restarted is followed again.
func TestReplication(t *testing.T) {
	forEachPairing(t, func(t *testing.T, p pairing, lib string) {
		pr := startPair(t, p, lib, harness.RoleAsyncMaster)
		topic := uniqueName("topic")
		createTopic(t, pr, topic)
		prod := newProducer(t, pr.NamesrvAddr())
		acked := waitFollowing(t, pr, prod, topic)

		acked = append(acked, sendBatch(t, prod, topic, "a", 2500)...)
		checkSlave(t, pr, topic, acked)
		mf, sf := commitLogFiles(t, pr.Master), commitLogFiles(t, pr.Slave)
		if len(mf) < 3 {
			t.Fatalf("master commitlog files %v: the batch should span at least 3 files", mf)
		}
		if !slices.Equal(mf, sf) {
			t.Fatalf("commitlog files: master %v, slave %v", mf, sf)
		}

		// The slave crashes; the master takes more; the slave catches up.
		if err := pr.Slave.Kill(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, sendBatch(t, prod, topic, "b", 600)...)
		if err := pr.Slave.Restart(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, sendBatch(t, prod, topic, "c", 300)...)
		checkSlave(t, pr, topic, acked)

		// The master restarts; the slave reconnects and follows.
		if err := pr.Master.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := pr.Master.Restart(); err != nil {
			t.Fatal(err)
		}
		// A producer that refreshed its route while only the slave was
		// registered has no master for the topic until its next refresh
		// (every 30 s).
		waitStatus(t, prod, topic, "back", primitive.SendOK, catchUpTimeout)
		acked = append(acked, sendBatch(t, prod, topic, "d", 600)...)
		checkSlave(t, pr, topic, acked)
	})
}

// sendOne sends one message and returns the status (or the error).
func sendOne(p rocketmq.Producer, topic, id string) (primitive.SendStatus, error) {
	m := primitive.NewMessage(topic, []byte(id))
	m.WithProperty(idProp, id)
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	r, err := p.SendSync(ctx, m)
	if err != nil {
		return 0, err
	}
	return r.Status, nil
}

// waitStatus sends until a send answers want, and returns how many sends it
// took.
func waitStatus(t *testing.T, p rocketmq.Producer, topic, prefix string, want primitive.SendStatus, timeout time.Duration) int {
	t.Helper()
	n := 0
	var last []string
	harness.WaitFor(t, timeout, func() error {
		n++
		st, err := sendOne(p, topic, fmt.Sprintf("%s-%d", prefix, n))
		if err == nil && st == want {
			return nil
		}
		last = append(last, fmt.Sprintf("status %d err %v", st, err))
		if len(last) > 5 {
			last = last[1:]
		}
		return fmt.Errorf("want status %d; last answers: %s", want, strings.Join(last, "; "))
	})
	return n
}

// TestSyncMaster: a SYNC_MASTER answers SEND_OK while its slave is connected
// and keeping up, SLAVE_NOT_AVAILABLE (code 11, the message stored) once the
// slave is gone, and SEND_OK again after the slave is back; every message
// acknowledged SEND_OK is on the slave.
func TestSyncMaster(t *testing.T) {
	forEachPairing(t, func(t *testing.T, p pairing, lib string) {
		pr := startPair(t, p, lib, harness.RoleSyncMaster)
		topic := uniqueName("topic")
		createTopic(t, pr, topic)
		prod := newProducer(t, pr.NamesrvAddr())

		// The slave's first report can take 5 s after it connects; until
		// then a send may answer FLUSH_SLAVE_TIMEOUT.
		waitStatus(t, prod, topic, "warm", primitive.SendOK, catchUpTimeout)
		acked := sendBatch(t, prod, topic, "ok", 200)

		if err := pr.Slave.Kill(); err != nil {
			t.Fatal(err)
		}
		tries := waitStatus(t, prod, topic, "gone", primitive.SendSlaveNotAvailable, 30*time.Second)
		t.Logf("SLAVE_NOT_AVAILABLE after %d sends with the slave down", tries)
		for i := 0; i < 5; i++ {
			st, err := sendOne(prod, topic, fmt.Sprintf("down-%d", i))
			if err != nil || st != primitive.SendSlaveNotAvailable {
				t.Fatalf("send with the slave down: status %d err %v, want SLAVE_NOT_AVAILABLE (%d)", st, err, primitive.SendSlaveNotAvailable)
			}
		}

		if err := pr.Slave.Restart(); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, prod, topic, "back", primitive.SendOK, catchUpTimeout)
		acked = append(acked, sendBatch(t, prod, topic, "ok2", 200)...)
		checkSlave(t, pr, topic, acked)
	})
}
