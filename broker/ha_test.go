package broker

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// haPair starts a master with role and a SLAVE following it.
func haPair(t *testing.T, role string, mutate func(*Options)) (*testBroker, *testBroker) {
	t.Helper()
	m := startBroker(t, func(o *Options) {
		o.BrokerRole = role
		o.SmallStore = true
		if mutate != nil {
			mutate(o)
		}
	})
	s := startBroker(t, func(o *Options) {
		o.BrokerRole = "SLAVE"
		o.BrokerID = 1
		o.SmallStore = true
		o.ListenPort = testutil.FreePortPair(t, m.opts.ListenPort)
		o.haReconnectDelay = 20 * time.Millisecond
		if mutate != nil {
			mutate(o)
		}
	})
	s.SetHAMasterAddress(m.HAAddr())
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		st, _ := m.HAMasterStats()
		return st.Connections == 1 && st.Push2SlaveMaxOffset >= 0 && len(st.Slaves) == 1 && st.Slaves[0].AckOffset >= 0
	}, "the slave to connect")
	return m, s
}

// rawSend sends one message and returns the reply.
func rawSend(tb *testBroker, topic, props string, i int) *remoting.Command {
	return tb.send(sendArgs{topic: topic, body: []byte(fmt.Sprintf("body-%d", i)), props: props, queueID: int32(i % 2)})
}

// The stock pair: a SYNC_MASTER answers SEND_OK once its slave has the
// message, and the slave's store holds it byte for byte: same offsets,
// msgIds, store timestamps.
func TestSyncMasterReplicatesToSlave(t *testing.T) {
	for _, flush := range []string{"ASYNC_FLUSH", "SYNC_FLUSH"} {
		t.Run(flush, func(t *testing.T) { syncMasterReplicates(t, flush) })
	}
}

func syncMasterReplicates(t *testing.T, flush string) {
	m, s := haPair(t, "SYNC_MASTER", func(o *Options) { o.FlushDiskType = flush })
	var ids []string
	for i := 0; i < 50; i++ {
		resp := rawSend(m, "HaSync", "", i)
		if resp.Code != remoting.Success {
			t.Fatalf("send %d: code %d %q", i, resp.Code, resp.Remark)
		}
		ids = append(ids, resp.ExtFields["msgId"])
		// A SEND_OK means the slave has the bytes already.
		end := m.Store().MaxPhyOffset()
		if got := s.Store().ReplicaEnd(); got < end {
			t.Fatalf("send %d answered before the slave had it: slave %d, master %d", i, got, end)
		}
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return s.Store().MaxPhyOffset() == m.Store().MaxPhyOffset() && s.Store().DispatchBehind() == 0
	}, "the slave to dispatch")
	n := 0
	for q := int32(0); q < 2; q++ {
		for off := int64(0); off < m.Store().MaxOffsetInQueue("HaSync", q); off++ {
			a := m.Store().GetMessage("HaSync", q, off, 1, 1<<20, nil)
			b := s.Store().GetMessage("HaSync", q, off, 1, 1<<20, nil)
			if b.Status != store.Found || string(a.Messages[0]) != string(b.Messages[0]) {
				t.Fatalf("queue %d offset %d on the slave: %v", q, off, b.Status)
			}
			rec, _ := message.DecodeRecord(b.Messages[0])
			if !strings.Contains(strings.Join(ids, ","), rec.MsgID) {
				t.Fatalf("slave msgId %s not among the master's", rec.MsgID)
			}
			n++
		}
	}
	if n != 50 {
		t.Fatalf("%d messages on the slave, want 50", n)
	}
	if hs := s.runtime(); !strings.HasSuffix(m.haServerAddr(hs), fmt.Sprint(m.opts.ListenPort+1)) {
		t.Fatalf("haServerAddr %s, want port listenPort+1 = %d", m.haServerAddr(hs), m.opts.ListenPort+1)
	}
}

// The master restarts (same ports, same store): the slave reconnects and
// catches up.
func TestMasterRestartSlaveReconnects(t *testing.T) {
	m, s := haPair(t, "ASYNC_MASTER", nil)
	for i := 0; i < 10; i++ {
		m.mustSend(sendArgs{topic: "HaRestart", body: []byte("x"), queueID: 0})
	}
	m = m.restart()
	for i := 0; i < 10; i++ {
		m.mustSend(sendArgs{topic: "HaRestart", body: []byte("y"), queueID: 0})
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return s.Store().MaxPhyOffset() == m.Store().MaxPhyOffset() && s.Store().DispatchBehind() == 0
	}, "the slave to catch up after the master's restart")
	if got := s.Store().MaxOffsetInQueue("HaRestart", 0); got != 20 {
		t.Fatalf("slave queue max %d, want 20", got)
	}
	if cs, _ := s.HAClientStats(); cs.Sessions < 2 {
		t.Fatalf("%d sessions", cs.Sessions)
	}
}

// Without a slave a SYNC_MASTER stores the message and answers
// SLAVE_NOT_AVAILABLE at once (with the msgId); WAIT=false does not wait.
func TestSyncMasterWithoutSlaveAnswersSlaveNotAvailable(t *testing.T) {
	for _, flush := range []string{"ASYNC_FLUSH", "SYNC_FLUSH"} {
		t.Run(flush, func(t *testing.T) {
			m := startBroker(t, func(o *Options) { o.BrokerRole = "SYNC_MASTER"; o.FlushDiskType = flush })
			resp := rawSend(m, "HaNone", "", 0)
			if resp.Code != remoting.SlaveNotAvailable || resp.ExtFields["msgId"] == "" || resp.ExtFields["queueOffset"] != "0" {
				t.Fatalf("code %d ext %v, want %d with the message's ids", resp.Code, resp.ExtFields, remoting.SlaveNotAvailable)
			}
			if resp := rawSend(m, "HaNone", "WAIT\x01false\x02", 2); resp.Code != remoting.Success {
				t.Fatalf("WAIT=false: code %d", resp.Code)
			}
			m.waitDispatched()
			if got := m.Store().MaxOffsetInQueue("HaNone", 0); got != 2 {
				t.Fatalf("%d messages stored, want 2", got)
			}
			// A half message too: stored, 11, with its transaction id (the
			// stock producer then rolls it back).
			half := m.send(sendArgs{topic: "HaNone", body: []byte("half"), props: coreProps("TRAN_MSG", "true", "PGROUP", "pg", "UNIQ_KEY", "HALF1"),
				sysFlag: int32(message.TransactionPreparedType)})
			if half.Code != remoting.SlaveNotAvailable || half.ExtFields["transactionId"] == "" {
				t.Fatalf("half: code %d ext %v", half.Code, half.ExtFields)
			}
			// Inline on the event loop: answered at once, never waiting
			// (under SYNC_FLUSH the answer still waits for the flush).
			if flush == "ASYNC_FLUSH" {
				resp, ok := m.ServeInline(&remoting.Conn{}, remoting.NewRequest(remoting.SendMessageV2,
					sendArgs{topic: "HaNone", body: []byte("inline")}.ext(), []byte("inline")))
				if !ok || resp == nil || resp.Code != remoting.SlaveNotAvailable {
					t.Fatalf("inline: handled %v, reply %v", ok, resp)
				}
			}
			reply, err := m.Put(PutRequest{Topic: "HaNone", QueueID: 0, Body: []byte("grpc")})
			if err != nil || reply.code != remoting.SlaveNotAvailable {
				t.Fatalf("Put: %+v %v", reply, err)
			}
		})
	}
}

// fakeHASlave connects to a master's HA port and reports offsets by hand.
type fakeHASlave struct {
	t  *testing.T
	nc net.Conn
}

func dialHA(t *testing.T, addr string) *fakeHASlave {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	f := &fakeHASlave{t: t, nc: nc}
	// Drain what the master streams: the fake only acks what it is told to.
	go func() {
		b := make([]byte, 64<<10)
		for {
			if _, err := nc.Read(b); err != nil {
				return
			}
		}
	}()
	return f
}

func (f *fakeHASlave) report(off int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	if _, err := f.nc.Write(b[:]); err != nil {
		f.t.Fatal(err)
	}
}

// A slave that stops acking: FLUSH_SLAVE_TIMEOUT after slaveTimeout of the
// broker's clock, not before; many waiting sends are released by one ack.
func TestSyncMasterSlaveTimeoutAndGroupAck(t *testing.T) {
	m, clk, f := stuckSlaveMaster(t)
	resp, advanced := answeredAfterSlaveTimeout(t, m, clk, func() *remoting.Command { return rawSend(m, "HaTimeout", "", 0) })
	if resp.Code != remoting.FlushSlaveTimeout || resp.ExtFields["msgId"] == "" {
		t.Fatalf("code %d ext %v, want %d", resp.Code, resp.ExtFields, remoting.FlushSlaveTimeout)
	}
	if advanced < 3*time.Second {
		t.Fatalf("answered after %v of the clock, before slaveTimeout", advanced)
	}

	// Many sends wait; one ack covering them all answers every one.
	const n = 40
	replies := make(chan *remoting.Command, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies <- rawSend(m, "HaGroup", "", i)
		}()
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return m.Store().MaxOffsetInQueue("HaGroup", 0)+m.Store().MaxOffsetInQueue("HaGroup", 1) == n
	}, "every put")
	select {
	case r := <-replies:
		t.Fatalf("a send answered before any ack: code %d", r.Code)
	case <-time.After(50 * time.Millisecond):
	}
	f.report(m.Store().MaxPhyOffset())
	wg.Wait()
	close(replies)
	for r := range replies {
		if r.Code != remoting.Success {
			t.Fatalf("code %d after the ack", r.Code)
		}
	}
}

// The slave stops and starts again on its store: it catches up from where
// it was, with what the master stored meanwhile.
func TestSlaveRestartCatchesUp(t *testing.T) {
	m, s := haPair(t, "ASYNC_MASTER", nil)
	for i := 0; i < 10; i++ {
		m.mustSend(sendArgs{topic: "HaSlaveRestart", body: []byte("a"), queueID: 0})
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return s.Store().MaxPhyOffset() == m.Store().MaxPhyOffset() }, "the first catch-up")
	s.stop()
	for i := 0; i < 10; i++ {
		m.mustSend(sendArgs{topic: "HaSlaveRestart", body: []byte("b"), queueID: 0})
	}
	s = startBrokerWith(t, s.opts, nil)
	s.SetHAMasterAddress(m.HAAddr())
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return s.Store().MaxPhyOffset() == m.Store().MaxPhyOffset() && s.Store().DispatchBehind() == 0
	}, "the slave to catch up after its restart")
	if got := s.Store().MaxOffsetInQueue("HaSlaveRestart", 0); got != 20 {
		t.Fatalf("slave queue max %d, want 20", got)
	}
}

// The replica's result overrides the flush's (4.9.8 thenCombine), in
// whichever order the two callbacks come.
func TestPutWaitPrecedence(t *testing.T) {
	for _, tc := range []struct {
		flushOK, replicaOK bool
		want               int32
	}{
		{true, true, remoting.Success},
		{false, true, remoting.FlushDiskTimeout},
		{true, false, remoting.FlushSlaveTimeout},
		{false, false, remoting.FlushSlaveTimeout},
	} {
		for _, flushFirst := range []bool{true, false} {
			var got []int32
			w := &putWait{done: func(code int32) { got = append(got, code) }}
			w.left.Store(2)
			if flushFirst {
				w.flushed(tc.flushOK)
				w.replicated(tc.replicaOK)
			} else {
				w.replicated(tc.replicaOK)
				w.flushed(tc.flushOK)
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("flush %v replica %v (flush first %v): %v, want [%d]", tc.flushOK, tc.replicaOK, flushFirst, got, tc.want)
			}
		}
	}
}

// haListenPort is ignored as in 4.9.8 (listenPort+1) unless
// haListenPortEnable honours it as 5.x does; the registration advertises
// brokerIP2 and the port listened on.
func TestHAListenPort(t *testing.T) {
	p := testutil.FreePort(t)
	ignored := startBroker(t, func(o *Options) { o.HaListenPort = p })
	if got := ignored.HAAddr(); !strings.HasSuffix(got, fmt.Sprintf(":%d", ignored.opts.ListenPort+1)) {
		t.Fatalf("HA address %s, want port listenPort+1", got)
	}
	honoured := startBroker(t, func(o *Options) {
		o.HaListenPort, o.HaListenPortEnable = p, true
		o.BrokerIP2 = "10.9.8.7"
	})
	if got := honoured.HAAddr(); !strings.HasSuffix(got, fmt.Sprintf(":%d", p)) {
		t.Fatalf("HA address %s, want port %d", got, p)
	}
	if got := honoured.haServerAddr(honoured.runtime()); got != fmt.Sprintf("10.9.8.7:%d", p) {
		t.Fatalf("haServerAddr %s", got)
	}
}
