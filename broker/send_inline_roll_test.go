package broker

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// A send whose put needs the next commitlog file while the store is still
// creating it does not hold the event loop: ServeInline leaves it to the
// pool (the store counts the refusal), another connection's request on the
// same (single) loop is answered while the file is held, and the send is
// stored in the new file and answered once the file is created.
func TestInlineSendRollDoesNotHoldTheEventLoop(t *testing.T) {
	const fileSize = 64 << 10
	entered := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	o := coreTestOptions(t, func(o *Options) {
		o.MappedFileSizeCommitLog = fileSize
		o.storeOptions = func(so *store.Options) {
			so.BeforeSegmentCreate = func(start int64) {
				if start == fileSize {
					entered <- struct{}{}
					<-gate
				}
			}
		}
	})
	tb := startBrokerWith(t, o, nil)
	t.Cleanup(release) // runs before the broker's stop, which waits for the allocator
	tb.topics.CreateSystemTopic("Roll", 1, topicgroup.PermRead|topicgroup.PermWrite)
	st := tb.Store()
	wouldBlock := func() int64 {
		n, _ := strconv.ParseInt(st.RuntimeInfo()["putMessageInlineWouldBlock"], 10, 64)
		return n
	}

	a := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	b := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	t.Cleanup(func() { a.Close(); b.Close() })
	body := make([]byte, 1000)
	invoke := func(c *remoting.Client, req *remoting.Command) (*remoting.Command, error) {
		return c.InvokeTimeout(tb.Addr(), req, 30*time.Second)
	}
	send := func() *remoting.Command {
		t.Helper()
		resp, err := invoke(a, remoting.NewRequest(remoting.SendMessageV2, sendArgs{topic: "Roll"}.ext(), body))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("send: %v %v", resp, err)
		}
		return resp
	}

	// The first send creates file 0; file 1 is then asked for and held.
	send()
	<-entered
	for {
		before := st.MaxPhyOffset()
		send()
		n := st.MaxPhyOffset() - before
		if st.MaxPhyOffset()+n+8 > fileSize {
			break // the next send needs file 1
		}
	}

	refused := wouldBlock()
	type result struct {
		resp *remoting.Command
		err  error
	}
	held := make(chan result, 1)
	go func() {
		resp, err := invoke(a, remoting.NewRequest(remoting.SendMessageV2, sendArgs{topic: "Roll"}.ext(), body))
		held <- result{resp, err}
	}()
	// ServeInline declined it (the store refused to wait); the pool's put
	// now waits for file 1.
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return wouldBlock() > refused }, "the inline put to be refused")

	// Another connection on the same loop is answered meanwhile.
	resp, err := invoke(b, remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("request on the other connection: %v %v", resp, err)
	}
	select {
	case r := <-held:
		t.Fatalf("the send needing file 1 was answered (%v, %v) while the file was held", r.resp, r.err)
	default:
	}

	release()
	r := <-held
	if r.err != nil || r.resp.Code != remoting.Success {
		t.Fatalf("held send: %v %v", r.resp, r.err)
	}
	if st.MaxPhyOffset() <= fileSize {
		t.Fatalf("commitlog end %d: the held send was not stored in file 1", st.MaxPhyOffset())
	}
	qo, _ := strconv.ParseInt(r.resp.Ext()["queueOffset"], 10, 64)
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return st.MaxOffsetInQueue("Roll", 0) > qo }, "dispatch")
}
