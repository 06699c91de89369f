package broker

import (
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"rmq/remoting"
	"rmq/store"
)

// inlineRollServer serves the client processors of env plus sends, taking
// sends inline as the broker's server does; pooled receives each send the
// pool serves.
type inlineRollServer struct {
	env    *clientTestEnv
	pooled chan *remoting.Command
}

func (h *inlineRollServer) ServeInline(c *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	return h.env.b.ServeInline(c, req)
}

func (h *inlineRollServer) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.Code == remoting.SendMessageV2 {
		h.pooled <- req
		return h.env.b.processSend(c, req)
	}
	return h.env.ServeRemoting(c, req)
}

// A send whose put needs the next commitlog file while the store is still
// creating it does not hold the event loop: ServeInline leaves it to the
// pool, another connection's request on the same (single) loop is answered
// while the file is held, and the send is stored in the new file and
// answered once the file is created.
func TestInlineSendRollDoesNotHoldTheEventLoop(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{})
	const fileSize = 64 << 10
	entered := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	st, err := store.Open(store.Options{
		Dir:                        env.dir,
		MappedFileSizeCommitLog:    fileSize,
		MappedFileSizeConsumeQueue: 20 * 1024,
		StoreHost:                  netip.MustParseAddrPort("127.0.0.1:10911"),
		Clock:                      env.clk,
		Logger:                     env.b.log,
		BeforeSegmentCreate: func(start int64) {
			if start == fileSize {
				entered <- struct{}{}
				<-gate
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t.Cleanup(release) // runs before Close, which waits for the allocator
	env.b.store = st
	env.b.topics.CreateSystemTopic("Roll", 1, remoting.PermRead|remoting.PermWrite)

	h := &inlineRollServer{env: env, pooled: make(chan *remoting.Command, 1024)}
	addr := clientTestFreeAddr(t)
	srv, err := remoting.NewServer(h, remoting.ServerOptions{Addrs: []string{addr}, EventLoops: 1, Workers: 4, Logger: env.b.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	a := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	b := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	t.Cleanup(func() { a.Close(); b.Close() })

	body := make([]byte, 1000)
	send := func() *remoting.Command {
		return remoting.NewRequest(remoting.SendMessageV2, sendArgs{topic: "Roll"}.ext(), body)
	}
	invoke := func(c *remoting.Client, req *remoting.Command) *remoting.Command {
		t.Helper()
		resp, err := c.InvokeTimeout(addr, req, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	drainPooled := func() {
		for {
			select {
			case <-h.pooled:
			default:
				return
			}
		}
	}

	// The first send creates file 0 (left to the pool: no file is ready);
	// file 1 is then asked for and held.
	if resp := invoke(a, send()); resp.Code != remoting.Success {
		t.Fatalf("first send: %v", resp)
	}
	<-entered
	var n int64
	for {
		before := st.MaxPhyOffset()
		if resp := invoke(a, send()); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
		n = st.MaxPhyOffset() - before
		if st.MaxPhyOffset()+n+8 > fileSize {
			break // the next send needs file 1
		}
	}
	drainPooled()

	held := make(chan *remoting.Command, 1)
	go func() { held <- invoke(a, send()) }()
	<-h.pooled // ServeInline declined it; the pool's put waits for file 1

	// Another connection on the same loop is answered meanwhile.
	other := remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil)
	if resp := invoke(b, other); resp.Code != remoting.Success {
		t.Fatalf("request on the other connection: %v", resp)
	}
	select {
	case resp := <-held:
		t.Fatalf("the send needing file 1 was answered (%v) while the file was held", resp)
	default:
	}

	release()
	resp := <-held
	if resp.Code != remoting.Success {
		t.Fatalf("held send: %v", resp)
	}
	if st.MaxPhyOffset() <= fileSize {
		t.Fatalf("commitlog end %d: the held send was not stored in file 1", st.MaxPhyOffset())
	}
	qo, _ := strconv.ParseInt(resp.Ext()["queueOffset"], 10, 64)
	env.waitFor("dispatch", func() bool { return st.MaxOffsetInQueue("Roll", 0) > qo })
}
