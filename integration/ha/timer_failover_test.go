package ha

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
)

const (
	// relTimers relative-delay timers are sent before the switch, their
	// delays relBaseDelay plus i × relDelayStep: spread over several
	// precisions of the Java broker (1 s), so the asked times fall at every
	// phase of its rounding.
	relTimers    = 20
	relBaseDelay = 30 * time.Second
	relDelayStep = 173 * time.Millisecond
	// relOnTime: a delivery within this of the asked time was made by the
	// wheel at its time, not as overdue after a slow switch (which would
	// prove nothing about earliness).
	relOnTime = 1500 * time.Millisecond
)

// TestTimerRelativeDelayAcrossSwitch is issue 45's relative-delay check in a
// controller-mode group of a Java 5.3.3 broker and an rmq broker replicating
// the commitlog byte for byte. The first master accepts relative-delay
// timers (TIMER_DELAY_MS as a raw property through the stock Go client; 5.x
// Java producers' setDelayTimeMs sets the same), is killed with SIGKILL
// before any is due, the controller elects the other broker, and that
// broker delivers them: none before its born time + delay (the client's
// clock before the broker's put hook read its own: the same machine).
//
//   - java5-to-rmq: Java writes TIMER_OUT_MS rounded down to its 1 s
//     precision; rmq delivered such a record at that time, up to 1 s
//     early, before recordDue took the record's store timestamp + delay.
//   - rmq-to-java5: rmq writes TIMER_OUT_MS exact; Java puts it in the slot
//     of its 1 s rounding and reads a slot only once the second after it
//     began is over, so it is never early (up to 1 s late).
func TestTimerRelativeDelayAcrossSwitch(t *testing.T) {
	skipUnlessEnabled(t)
	for _, tc := range []struct {
		name  string
		first harness.Impl
		next  harness.Impl
	}{
		{"java5-to-rmq", harness.ImplJava5, harness.ImplRMQ},
		{"rmq-to-java5", harness.ImplRMQ, harness.ImplJava5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, err := harness.Java5Lib()
			if err != nil {
				t.Skip(err)
			}
			g := harness.StartCtlGroup(t, harness.CtlGroupConfig{
				RMQBin: rmqBin, JavaLib: lib, Controller: harness.ControllerRMQ, Controllers: 1,
				Brokers: []harness.Impl{tc.first, tc.next},
				Conf:    []string{"timerWheelEnable=true", "timerPrecisionMs=1000"},
			})
			adm := admin.New(admin.Options{NamesrvAddr: g.Namesrv.Addr(), Timeout: 3 * time.Second})
			defer adm.Close()
			cl := rawClient(t)
			first, next := g.Brokers[0], g.Brokers[1]

			// The first broker is master and both are in the sync state
			// set: a SEND_OK then means the other has the bytes
			// (allAckInSyncStateSet).
			waitMaster(t, adm, g, first.Addr(), len(g.Brokers))
			topic := uniqueName("reltimer")
			for _, b := range g.Brokers {
				if err := harness.CreateTopic(cl, b.Addr(), topic, queues); err != nil {
					t.Fatal(err)
				}
			}
			prod := newProducer(t, g.Namesrv.Addr())

			type relSent struct {
				uniq, offsetMsgID string
				born, delay       int64
			}
			var all []relSent
			for i := 0; i < relTimers; i++ {
				delay := (relBaseDelay + time.Duration(i)*relDelayStep).Milliseconds()
				m := primitive.NewMessage(topic, []byte("rel-"+strconv.Itoa(i)))
				m.WithProperty(message.PropTimerDelayMs, strconv.FormatInt(delay, 10))
				born := time.Now().UnixMilli() // at or before the client's born timestamp
				ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
				r, err := prod.SendSync(ctx, m)
				cancel()
				if err != nil || r.Status != primitive.SendOK {
					t.Fatalf("timer send %d: %v %v", i, r, err)
				}
				all = append(all, relSent{uniq: r.MsgID, offsetMsgID: r.OffsetMsgID, born: born, delay: delay})
			}
			// Each timer-topic record as the first master wrote it, read on
			// the other broker: what that one delivers from.
			outs := map[string]int64{}
			for _, s := range all {
				raw, err := harness.ViewByID(cl, next.Addr(), s.offsetMsgID)
				if err != nil {
					t.Fatalf("%s on %s: %v", s.offsetMsgID, next.Addr(), err)
				}
				rec, err := message.DecodeRecord(raw)
				if err != nil {
					t.Fatal(err)
				}
				out, err := strconv.ParseInt(rec.Properties[message.PropTimerOutMs], 10, 64)
				if rec.Topic != message.TopicWheelTimer || err != nil {
					t.Fatalf("%s is %s with TIMER_OUT_MS %q", s.offsetMsgID, rec.Topic, rec.Properties[message.PropTimerOutMs])
				}
				// Java rounds down to its precision; rmq writes its
				// admission time (after born, before the store time) + delay.
				javaShape := out%1000 == 0 && out < rec.StoreTimestamp+s.delay
				rmqShape := out >= s.born+s.delay && out <= rec.StoreTimestamp+s.delay
				if (tc.first == harness.ImplJava5 && !javaShape) || (tc.first == harness.ImplRMQ && !rmqShape) {
					t.Errorf("%s: TIMER_OUT_MS %d, born %d, store time %d, delay %d: not as %s writes it",
						s.uniq, out, s.born, rec.StoreTimestamp, s.delay, tc.first)
				}
				outs[s.uniq] = out
			}
			if d := time.Until(time.UnixMilli(all[0].born + all[0].delay)); d < 10*time.Second {
				t.Fatalf("the sends took too long: %v left before the first timer is due", d)
			}
			if err := first.Kill(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			waitMaster(t, adm, g, next.Addr(), 1)
			t.Logf("%s is master %v after the kill", next.Addr(), time.Since(killed).Round(time.Millisecond))

			// Every timer is delivered by the new master; none before its
			// born time + delay.
			got := map[string]*message.MessageExt{}
			harness.WaitFor(t, relBaseDelay+relTimers*relDelayStep+60*time.Second, func() error {
				for q := 0; q < queues; q++ {
					end, err := harness.MaxOffset(cl, next.Addr(), topic, q)
					if err != nil {
						return err
					}
					recs, err := harness.ReadQueue(cl, next.Addr(), uniqueName("reader"), topic, q, end)
					if err != nil {
						return err
					}
					for _, raw := range recs {
						m, err := message.DecodeRecord(raw)
						if err != nil {
							return err
						}
						got[m.Properties[message.PropUniqKey]] = m
					}
				}
				if len(got) < relTimers {
					return fmt.Errorf("%d of %d timers delivered", len(got), relTimers)
				}
				return nil
			})
			onTime := 0
			var minLate, maxLate int64 = 1 << 62, -1 << 62
			for _, s := range all {
				m := got[s.uniq]
				if m == nil {
					t.Errorf("%s not delivered", s.uniq)
					continue
				}
				asked := s.born + s.delay
				deq, err := strconv.ParseInt(m.Properties[message.PropTimerDequeueMs], 10, 64)
				if err != nil {
					t.Errorf("%s: TIMER_DEQUEUE_MS %q", s.uniq, m.Properties[message.PropTimerDequeueMs])
					continue
				}
				if deq < asked || m.StoreTimestamp < asked {
					t.Errorf("%s delivered early: dequeued at %d, stored at %d, asked born %d + delay %d = %d (TIMER_OUT_MS %d)",
						s.uniq, deq, m.StoreTimestamp, s.born, s.delay, asked, outs[s.uniq])
				}
				late := deq - asked
				minLate, maxLate = min(minLate, late), max(maxLate, late)
				if late < relOnTime.Milliseconds() {
					onTime++
				}
			}
			t.Logf("%d timers delivered by %s, dequeued %d..%d ms after born + delay; %d within %v",
				len(got), next.Impl, minLate, maxLate, onTime, relOnTime)
			// Deliveries made only as overdue after a slow switch would not
			// show when the new master takes a record as due.
			if onTime < relTimers/2 {
				t.Fatalf("only %d of %d timers were delivered within %v of their time: the switch took too long to test earliness", onTime, relTimers, relOnTime)
			}
		})
	}
}

// waitMaster waits until the controller names addr master of g with at
// least inSync live brokers in the sync state set.
func waitMaster(t *testing.T, adm *admin.Admin, g *harness.CtlGroup, addr string, inSync int) {
	t.Helper()
	harness.WaitFor(t, 120*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		info, err := adm.SyncStateData(ctx, g.CtlAddrs[0], []string{g.BrokerName()})
		if err != nil {
			return err
		}
		r := info.ReplicasInfoTable[g.BrokerName()]
		if r == nil {
			return fmt.Errorf("the controller knows no %s", g.BrokerName())
		}
		alive := 0
		for _, m := range r.InSyncReplicas {
			if m.Alive {
				alive++
			}
		}
		if r.MasterAddress != addr || alive < inSync {
			return fmt.Errorf("master %q (want %s), %d live in the sync state set (want %d)", r.MasterAddress, addr, alive, inSync)
		}
		return nil
	})
}
