package ha

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/timer"
)

// java5Lib is the directory of the stock 5.3.3 broker's jars
// ($RMQ_JAVA5_LIB, else the cache bench-compare fills); t skips without
// them or java. The pair's Java broker runs PairConfig.JavaLib's jars, so
// with this directory it is a 5.3.3 broker (labelled java-4.9.7 by the
// harness), which still speaks classic master/slave HA.
func java5Lib(t *testing.T) string {
	t.Helper()
	lib := os.Getenv("RMQ_JAVA5_LIB")
	if lib == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skip(err)
		}
		lib = filepath.Join(home, ".cache", "rmq-bench-compare", "rocketmq-5.3.3", "lib")
	}
	if _, err := os.Stat(filepath.Join(lib, "rocketmq-broker-5.3.3.jar")); err != nil {
		t.Skipf("no stock 5.3.3 broker jars (set RMQ_JAVA5_LIB): %v", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is not on PATH")
	}
	return lib
}

// timerCheckpoint asks addr for GET_TIMER_CHECK_POINT.
func timerCheckpoint(cl *remoting.Client, addr string) (timer.StockCheckpoint, error) {
	resp, err := cl.InvokeTimeout(addr, remoting.NewRequest(remoting.GetTimerCheckPoint, nil, nil), 3*time.Second)
	if err != nil {
		return timer.StockCheckpoint{}, err
	}
	if resp.Code != remoting.Success {
		return timer.StockCheckpoint{}, fmt.Errorf("%s: GET_TIMER_CHECK_POINT code %d %q", addr, resp.Code, resp.Remark)
	}
	return timer.DecodeStockCheckpoint(resp.Body)
}

// timerMetrics asks addr for GET_TIMER_METRICS.
func timerMetrics(cl *remoting.Client, addr string) (*timer.StockMetrics, error) {
	resp, err := cl.InvokeTimeout(addr, remoting.NewRequest(remoting.GetTimerMetrics, nil, nil), 3*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("%s: GET_TIMER_METRICS code %d %q", addr, resp.Code, resp.Remark)
	}
	return timer.DecodeStockMetrics(resp.Body)
}

// sameMasterProgress: the fields a slave copies from its master's checkpoint.
func sameMasterProgress(a, b timer.StockCheckpoint) bool {
	return a.LastReadTimeMs == b.LastReadTimeMs && a.MasterTimerQueueOffset == b.MasterTimerQueueOffset && a.DataVersion == b.DataVersion
}

// sendTimer sends one timer message with the given property.
func sendTimer(t *testing.T, p rocketmq.Producer, topic, key, val string) {
	t.Helper()
	m := primitive.NewMessage(topic, []byte(key+"="+val))
	m.WithProperty(key, val)
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	r, err := p.SendSync(ctx, m)
	if err != nil || r.Status != primitive.SendOK {
		t.Fatalf("timer send: %v %v", r, err)
	}
}

// TestTimerStateMixedPairs: the 5.x timer state (GET_TIMER_CHECK_POINT 60,
// GET_TIMER_METRICS 61) crosses a pair of rmq and stock 5.3.3 brokers both
// ways. A Java 5.3.3 slave of an rmq master copies both without an error in
// its log and answers the master's progress; an rmq slave of a Java 5.3.3
// master answers the master's progress and metrics. Both ends flush their
// timer checkpoint every 5 s (timerFlushIntervalMs), so that a copy (every
// 3 s) and the master's answer stay equal long enough to be compared.
func TestTimerStateMixedPairs(t *testing.T) {
	skipUnlessEnabled(t)
	for _, p := range []pairing{{"rmq-java5", harness.ImplRMQ, harness.ImplJava}, {"java5-rmq", harness.ImplJava, harness.ImplRMQ}} {
		t.Run(p.name, func(t *testing.T) {
			lib := java5Lib(t)
			pr := harness.StartPair(t, harness.PairConfig{
				RMQBin: rmqBin, JavaLib: lib,
				Master: harness.NodeSpec{Impl: p.master, Role: harness.RoleAsyncMaster},
				Slave:  harness.NodeSpec{Impl: p.slave, Role: harness.RoleSlave},
				Conf:   []string{"slaveReadEnable=true", "timerWheelEnable=true", "timerFlushIntervalMs=5000"},
			})
			topic := uniqueName("timer")
			createTopic(t, pr, topic)
			prod := newProducer(t, pr.NamesrvAddr())
			waitFollowing(t, pr, prod, topic)
			sendTimer(t, prod, topic, message.PropTimerDeliverMs, strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10))
			sendTimer(t, prod, topic, message.PropTimerDelaySec, "3600")

			cl := rawClient(t)
			var m1, s timer.StockCheckpoint
			harness.WaitFor(t, catchUpTimeout, func() error {
				var err error
				if m1, err = timerCheckpoint(cl, pr.Master.Addr()); err != nil {
					return err
				}
				if m1.MasterTimerQueueOffset < 1 {
					return fmt.Errorf("master's checkpoint %+v has not read the timers yet", m1)
				}
				if s, err = timerCheckpoint(cl, pr.Slave.Addr()); err != nil {
					return err
				}
				m2, err := timerCheckpoint(cl, pr.Master.Addr())
				if err != nil {
					return err
				}
				if !sameMasterProgress(m1, s) || !sameMasterProgress(m2, s) {
					return fmt.Errorf("slave answers %+v, master %+v then %+v", s, m1, m2)
				}
				return nil
			})
			t.Logf("master %+v, slave %+v", m1, s)

			switch p.slave {
			case harness.ImplJava:
				// Its SlaveSynchronize ran (the first round copies both, 10 s
				// after boot): no refusal of 60 or 61 in its log.
				if _, err := timerMetrics(cl, pr.Slave.Addr()); err != nil {
					t.Fatal(err)
				}
				for _, bad := range []string{"syncTimerCheckPoint Exception", "SyncTimerMetrics Exception", "MQBrokerException"} {
					if f := grepLogs(t, pr.Slave.Dir, bad); f != "" {
						t.Fatalf("the Java slave logged %q in %s", bad, f)
					}
				}
			case harness.ImplRMQ:
				// The rmq slave copies the metrics in its syncAll (10 s) when
				// the master's data version moved.
				harness.WaitFor(t, catchUpTimeout, func() error {
					mm, err := timerMetrics(cl, pr.Master.Addr())
					if err != nil {
						return err
					}
					sm, err := timerMetrics(cl, pr.Slave.Addr())
					if err != nil {
						return err
					}
					if !bytes.Equal(mm.Encode(), sm.Encode()) || mm.TimingCount[topic].Count != 1 {
						return fmt.Errorf("slave metrics %s, master %s", sm.Encode(), mm.Encode())
					}
					return nil
				})
			}
		})
	}
}

// grepLogs returns the first log file under dir whose text holds s (""
// if none); a dir without a non-empty broker log fails t (the check
// would prove nothing).
func grepLogs(t *testing.T, dir, s string) string {
	t.Helper()
	found, logged := "", false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" || filepath.Ext(path) != ".log" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if filepath.Base(path) == "broker.log" && len(b) > 0 {
			logged = true
		}
		if bytes.Contains(b, []byte(s)) {
			found = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !logged {
		t.Fatalf("no broker.log under %s", dir)
	}
	return found
}
