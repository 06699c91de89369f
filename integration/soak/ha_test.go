package soak

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// The replication kill soak (make soak-ha; issue 44; not part of make test):
// a SYNC_MASTER rmq master and its slave (rmq, or the stock Java 4.9.7 broker
// with SOAK_HA_SLAVE=java) take plain, delay-level, timer and transactional
// messages from the stock Go client while the master is killed with SIGKILL
// and restarted SOAK_HA_KILLS times (default 20), then the slave as many
// times. A SEND_OK from a SYNC_MASTER means the slave has the bytes, so:
//
//   - after each master kill, every send acknowledged so far is read back
//     from the slave by its offset msgId (VIEW_MESSAGE_BY_ID at the slave's
//     address: the record where the master stored it, in the topic, the
//     schedule or timer topic, or the transaction half topic) and must carry
//     the id it was sent with;
//   - after each slave kill and restart, the same once the slave caught up.
//
// A push consumer (through the master, as the Go client does) runs
// throughout; at the end it drains and the soak prints, per phase and in
// total, acked, missing-on-slave, lost (acknowledged, never delivered),
// duplicates and early deliveries (delay or timer before its due time), and
// fails unless missing-on-slave, lost and early are all 0.

// resumeAcks is how many SEND_OKs after a restart show the pair is under
// load again.
const resumeAcks = 100

// slaveCheck records acknowledged sends and verifies them on the slave.
type slaveCheck struct {
	mu      sync.Mutex
	pending []ackedSend // acknowledged, not verified on the slave yet
	checked int
	// where is each acknowledged send's offset msgId, to name a lost one's
	// stored record.
	where map[string]string
}

type ackedSend struct{ id, offsetMsgID string }

func (c *slaveCheck) add(id, offsetMsgID string) {
	c.mu.Lock()
	c.pending = append(c.pending, ackedSend{id, offsetMsgID})
	c.where[id] = offsetMsgID
	c.mu.Unlock()
}

// verify reads every pending send from the slave, retrying for up to
// timeout (a restarted slave catches up first), and returns the ones still
// unreadable (with why) at the deadline.
func (c *slaveCheck) verify(cl *remoting.Client, slave string, timeout time.Duration) []string {
	c.mu.Lock()
	todo := c.pending
	c.pending = nil
	c.mu.Unlock()
	var bad []string
	deadline := time.Now().Add(timeout)
	for _, s := range todo {
		for {
			why := readOnSlave(cl, slave, s)
			if why == "" {
				break
			}
			if time.Now().After(deadline) {
				bad = append(bad, s.id+": "+why)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.mu.Lock()
	c.checked += len(todo) - len(bad)
	c.mu.Unlock()
	return bad
}

// reportLost fails t with up to 20 lost ids, each with the offset msgId of
// its acknowledged send (where the master stored it).
func (c *slaveCheck) reportLost(t *testing.T, lost []string) {
	if len(lost) == 0 {
		return
	}
	var at []string
	c.mu.Lock()
	for _, id := range head(lost, 20) {
		at = append(at, id+"@"+c.where[id])
	}
	c.mu.Unlock()
	t.Errorf("lost %d acknowledged messages (id@offset msgId of the acknowledged send): %v", len(lost), at)
}

func readOnSlave(cl *remoting.Client, slave string, s ackedSend) string {
	b, err := harness.ViewByID(cl, slave, s.offsetMsgID)
	if err != nil {
		return err.Error()
	}
	m, err := message.DecodeRecord(b)
	if err != nil {
		return err.Error()
	}
	if got := m.Properties[idProp]; got != s.id {
		return fmt.Sprintf("the slave holds %q at %s", got, s.offsetMsgID)
	}
	return ""
}

func TestSoakHA(t *testing.T) {
	if os.Getenv("SOAK_HA") == "" {
		t.Skip("the replication kill soak runs with make soak-ha (SOAK_HA=1)")
	}
	kills := envInt(t, "SOAK_HA_KILLS", 20)
	seed := uint64(envInt(t, "SOAK_SEED", int(time.Now().UnixNano()%1_000_000)))
	randDur := seededDurations(seed)
	rlog.SetLogLevel("fatal")
	var err error

	slaveImpl, lib := harness.ImplRMQ, ""
	if v := os.Getenv("SOAK_HA_SLAVE"); v == "java" {
		slaveImpl = harness.ImplJava
		if lib, err = harness.JavaBrokerLib(); err != nil {
			t.Skipf("SOAK_HA_SLAVE=java: %v", err)
		}
	} else if v != "" && v != "rmq" {
		t.Fatalf("SOAK_HA_SLAVE=%q: rmq or java", v)
	}
	t.Logf("soak-ha: SYNC_MASTER rmq + %s slave, %d kills of each, seed %d", slaveImpl, kills, seed)

	bin := rmqBin(t)
	levels := ""
	for _, d := range delayLevels {
		levels += fmt.Sprintf("%ds ", int(d/time.Second))
	}
	work := ""
	if keep := os.Getenv("SOAK_HA_KEEP"); keep != "" {
		// Debugging: the stores and logs stay in a directory under keep.
		if work, err = os.MkdirTemp(keep, "soak-ha-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("soak-ha: work directory %s", work)
	}
	pr := harness.StartPair(t, harness.PairConfig{
		RMQBin: bin, JavaLib: lib, WorkDir: work,
		Master: harness.NodeSpec{Impl: harness.ImplRMQ, Role: harness.RoleSyncMaster, Conf: []string{
			"transactionCheckInterval=1000", "transactionTimeOut=1000", "transactionCheckMax=100",
			"mappedFileSizeTimerLog=1048576",
		}},
		Slave: harness.NodeSpec{Impl: slaveImpl, Role: harness.RoleSlave},
		Conf:  []string{"slaveReadEnable=true", "messageDelayLevel=" + levels[:len(levels)-1]},
	})
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()

	ns := primitive.NewPassthroughResolver([]string{pr.NamesrvAddr()})
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "soakha_" + stamp
	led := newLedger()
	if err := harness.CreateTopic(cl, pr.Master.Addr(), topic, 4); err != nil {
		t.Fatal(err)
	}
	prod, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("soakha_pg_"+stamp),
		producer.WithInstanceName("soakha_pi_"+stamp), producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	txl := newTxListener()
	txProd, err := rocketmq.NewTransactionProducer(txl, producer.WithNsResolver(ns), producer.WithGroupName("soakha_tx_"+stamp),
		producer.WithInstanceName("soakha_ti_"+stamp), producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface{ Start() error }{prod, txProd} {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer prod.Shutdown()
	defer txProd.Shutdown()
	// The slave must follow before the load starts: an empty slave is
	// served from the master's newest file only (see integration/ha).
	harness.WaitFor(t, 90*time.Second, func() error {
		r, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte("warm-up")))
		if err != nil {
			return err
		}
		if r.Status != primitive.SendOK {
			return fmt.Errorf("warm-up send: status %d", r.Status)
		}
		return nil
	})

	startConsumer(t, ns, "soakha", stamp, led, topic)

	check := &slaveCheck{where: map[string]string{}}
	sender := &mixedSender{topic: topic, prod: prod, txProd: txProd, txl: txl, led: led, randDur: randDur, onAck: check.add}
	stop := sender.run(4)

	var report []string
	var missingOnSlave []string
	phase := func(name string, victim *harness.Node) {
		start := time.Now()
		led.mu.Lock()
		ackedBefore, failedBefore := len(led.acked), led.sendErrs
		led.mu.Unlock()
		for k := 1; k <= kills; k++ {
			time.Sleep(randDur(300*time.Millisecond, 2500*time.Millisecond))
			if err := victim.Kill(); err != nil {
				t.Fatalf("%s kill %d: %v", name, k, err)
			}
			if victim == pr.Master {
				// With the master gone, nothing more is acknowledged: every
				// SEND_OK so far must be on the slave now.
				if bad := check.verify(cl, pr.Slave.Addr(), 10*time.Second); len(bad) > 0 {
					missingOnSlave = append(missingOnSlave, bad...)
					t.Errorf("%s kill %d: %d acknowledged sends not readable from the slave: %v", name, k, len(bad), head(bad, 10))
				}
			}
			if err := victim.Restart(); err != nil {
				t.Fatalf("%s kill %d: restart: %v", name, k, err)
			}
			if victim == pr.Slave {
				if bad := check.verify(cl, pr.Slave.Addr(), 60*time.Second); len(bad) > 0 {
					missingOnSlave = append(missingOnSlave, bad...)
					t.Errorf("%s kill %d: %d acknowledged sends not readable from the restarted slave: %v", name, k, len(bad), head(bad, 10))
				}
			}
			// The next kill must find the pair under load again: wait until
			// the producers get SEND_OK again (a Go producer may need its
			// 30 s route refresh to see the restarted master).
			led.mu.Lock()
			base := len(led.acked)
			led.mu.Unlock()
			if err := harness.Poll(90*time.Second, func() error {
				led.mu.Lock()
				defer led.mu.Unlock()
				if n := len(led.acked) - base; n < resumeAcks {
					return fmt.Errorf("%d sends acknowledged since the restart", n)
				}
				return nil
			}); err != nil {
				t.Fatalf("%s kill %d: the pair takes no load after the restart: %v", name, k, err)
			}
			led.mu.Lock()
			t.Logf("%s kill %d/%d: %d acked, %d verified on the slave, %d delivered ids", name, k, kills, len(led.acked), check.checked, len(led.delivered))
			led.mu.Unlock()
		}
		led.mu.Lock()
		failed := [numKinds]int{}
		for k := range failed {
			failed[k] = led.sendErrs[k] - failedBefore[k]
		}
		report = append(report, fmt.Sprintf("soak-ha %s kills: %d in %v, acked %d, failed sends %v (plain, delay, timer, txn)",
			name, kills, time.Since(start).Round(time.Second), len(led.acked)-ackedBefore, failed))
		led.mu.Unlock()
	}
	phase("master", pr.Master)
	phase("slave", pr.Slave)
	stop()
	if bad := check.verify(cl, pr.Slave.Addr(), 60*time.Second); len(bad) > 0 {
		missingOnSlave = append(missingOnSlave, bad...)
		t.Errorf("%d acknowledged sends not readable from the slave at the end: %v", len(bad), head(bad, 10))
	}

	drain(t, led)

	lost := led.missing()
	led.mu.Lock()
	defer led.mu.Unlock()
	perKind := [numKinds]int{}
	for _, k := range led.acked {
		perKind[k]++
	}
	dups := 0
	for _, n := range led.delivered {
		dups += n - 1
	}
	report = append(report, fmt.Sprintf("soak-ha total: slave=%s seed=%d acked=%d (plain %d, delay %d, timer %d, txn %d) verified-on-slave=%d "+
		"missing-on-slave=%d lost=%d duplicates=%d early=%d",
		slaveImpl, seed, len(led.acked), perKind[plain], perKind[delay], perKind[timer], perKind[txn], check.checked,
		len(missingOnSlave), len(lost), dups, len(led.early)))
	fmt.Println(strings.Join(report, "\n"))
	t.Log(strings.Join(report, "\n"))
	check.reportLost(t, lost)
	if len(led.early) > 0 {
		t.Errorf("%d messages delivered early: %v", len(led.early), led.early)
	}
	if check.checked == 0 {
		t.Error("nothing was verified on the slave")
	}
}
