package remoting

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

// laneRemark is the remark the tests pass to ExpireWaiting and DrainWaiting.
func laneRemark(waited time.Duration, left int) string {
	return fmt.Sprintf("expired %dms left %d", waited.Milliseconds(), left)
}

// laneServer serves codeDelay on a lane of one worker that holds two
// waiters, on a manual clock.
func laneServer(t *testing.T, h Handler) (*Server, *clock.Manual) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s := startServer(t, h, ServerOptions{Clock: clk, Lanes: []Lane{{Name: "slow", Codes: []int32{codeDelay}, Workers: 1, Capacity: 2}}})
	return s, clk
}

// waitWaiting polls until lane "slow" has n waiters.
func waitWaiting(t *testing.T, s *Server, n int) {
	t.Helper()
	testutil.WaitFor(t, ioWait, func() bool { return s.LaneStats(time.Time{})[0].Waiting == n }, fmt.Sprintf("%d waiting", n))
}

// A saturated lane queues its requests in order, stamped with the clock when
// they arrived; ExpireWaiting answers SYSTEM_BUSY to the heads that waited
// long enough and keeps the younger ones, which the worker serves next.
// Past the capacity a request is refused [OVERLOAD] at once, and other codes
// are not held up by the lane.
func TestLaneQueuesAndExpiresByWaitingTime(t *testing.T) {
	h := newTestHandler()
	s, clk := laneServer(t, h)
	r := dialRaw(t, s.opts.Addrs[0])

	first := NewRequest(codeDelay, nil, nil)
	r.send(first)
	recv(t, h.seen, "the first request on the worker")
	older := NewRequest(codeDelay, nil, nil)
	r.send(older)
	waitWaiting(t, s, 1)
	clk.Advance(150 * time.Millisecond)
	younger := NewRequest(codeDelay, nil, nil)
	r.send(younger)
	waitWaiting(t, s, 2)

	over := NewRequest(codeDelay, nil, nil)
	r.send(over)
	if resp := r.expect(); resp.Opaque != over.Opaque || resp.Code != SystemBusy || resp.Remark != overloadRemark {
		t.Fatalf("past capacity: %v, want SYSTEM_BUSY %s", resp, overloadRemark)
	}
	r.ping(SerializeJSON) // a code without a lane is served meanwhile

	st := s.LaneStats(clk.Now())[0]
	if st.Name != "slow" || st.Waiting != 2 || st.Running != 1 || st.Oldest != 150*time.Millisecond {
		t.Fatalf("stats %+v, want slow, 2 waiting, 1 running, oldest 150ms", st)
	}
	if n := s.ExpireWaiting("slow", 200*time.Millisecond, clk.Now(), laneRemark); n != 0 {
		t.Fatalf("expired %d before any waited 200ms", n)
	}
	clk.Advance(50 * time.Millisecond) // older waited 200ms, younger 50ms
	if n := s.ExpireWaiting("slow", 200*time.Millisecond, clk.Now(), laneRemark); n != 1 {
		t.Fatalf("expired %d, want the older one", n)
	}
	if resp := r.expect(); resp.Opaque != older.Opaque || resp.Code != SystemBusy || resp.Remark != "expired 200ms left 1" {
		t.Fatalf("expired reply %v, want SYSTEM_BUSY 'expired 200ms left 1'", resp)
	}
	h.release <- struct{}{}
	if resp := r.expect(); resp.Opaque != first.Opaque || resp.Code != Success {
		t.Fatalf("first: %v", resp)
	}
	recv(t, h.seen, "the younger request on the worker")
	h.release <- struct{}{}
	if resp := r.expect(); resp.Opaque != younger.Opaque || resp.Code != Success {
		t.Fatalf("younger: %v", resp)
	}
	testutil.WaitFor(t, ioWait, func() bool { st := s.LaneStats(clk.Now())[0]; return st.Running == 0 && st.Waiting == 0 }, "the lane to go idle")
}

// DrainWaiting answers every waiter at once, whatever its age.
func TestLaneDrainAnswersEveryWaiter(t *testing.T) {
	h := newTestHandler()
	s, clk := laneServer(t, h)
	r := dialRaw(t, s.opts.Addrs[0])
	r.send(NewRequest(codeDelay, nil, nil))
	recv(t, h.seen, "the first request on the worker")
	a, b := NewRequest(codeDelay, nil, nil), NewRequest(codeDelay, nil, nil)
	r.send(a)
	r.send(b)
	waitWaiting(t, s, 2)
	if n := s.DrainWaiting("slow", clk.Now(), laneRemark); n != 2 {
		t.Fatalf("drained %d, want 2", n)
	}
	for i, want := range []*Command{a, b} {
		if resp := r.expect(); resp.Opaque != want.Opaque || resp.Code != SystemBusy || resp.Remark != fmt.Sprintf("expired 0ms left %d", 1-i) {
			t.Fatalf("drained reply %d: %v", i, resp)
		}
	}
	h.release <- struct{}{}
	r.expect()
	if s.ExpireWaiting("none", 0, clk.Now(), laneRemark) != 0 || s.DrainWaiting("none", clk.Now(), laneRemark) != 0 {
		t.Fatal("an unknown lane expired something")
	}
}

// rejectingHandler rejects requests tagged "reject".
type rejectingHandler struct{ *testHandler }

func (rejectingHandler) RejectRequest(req *Command) bool { return req.ExtFields["tag"] == "reject" }

// A Rejecter's refusal is answered SYSTEM_BUSY [REJECTREQUEST] before the
// handler sees the request; other requests are served.
func TestRejecterAnswersRejectRequest(t *testing.T) {
	h := rejectingHandler{newTestHandler()}
	s := startServer(t, h, ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	req := echoReq(SerializeRocketMQ, "reject")
	r.send(req)
	if resp := r.expect(); resp.Opaque != req.Opaque || resp.Code != SystemBusy || resp.Remark != RejectRequestRemark {
		t.Fatalf("rejected: %v, want SYSTEM_BUSY %s", resp, RejectRequestRemark)
	}
	select {
	case got := <-h.seen:
		t.Fatalf("the handler saw a rejected request: %v", got.req)
	default:
	}
	r.ping(SerializeRocketMQ)
}

func TestLaneConfigRefusesACodeOnTwoLanes(t *testing.T) {
	_, err := NewServer(newTestHandler(), ServerOptions{Addrs: []string{"127.0.0.1:0"},
		Lanes: []Lane{{Name: "a", Codes: []int32{1}}, {Name: "b", Codes: []int32{1}}}})
	if err == nil || !strings.Contains(err.Error(), "two lanes") {
		t.Fatalf("err %v, want a code on two lanes refused", err)
	}
}

// The bodies waiting in lanes are bounded by the in-flight limit: a request
// whose body would take them past it is refused [OVERLOAD] though the lane
// has room; once the waiters leave, their bytes are free again.
func TestLaneBoundsWaitingBodyBytes(t *testing.T) {
	h := newTestHandler()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s := startServer(t, h, ServerOptions{Clock: clk, MaxInflightBytes: 100,
		Lanes: []Lane{{Name: "slow", Codes: []int32{codeDelay}, Workers: 1, Capacity: 10}}})
	r := dialRaw(t, s.opts.Addrs[0])
	r.send(NewRequest(codeDelay, nil, nil))
	recv(t, h.seen, "the first request on the worker")
	body := make([]byte, 60)
	a := NewRequest(codeDelay, nil, body)
	r.send(a)
	waitWaiting(t, s, 1)
	b := NewRequest(codeDelay, nil, body)
	r.send(b)
	if resp := r.expect(); resp.Opaque != b.Opaque || resp.Code != SystemBusy || resp.Remark != overloadRemark {
		t.Fatalf("past the byte bound: %v, want SYSTEM_BUSY %s", resp, overloadRemark)
	}
	if n := s.DrainWaiting("slow", clk.Now(), laneRemark); n != 1 {
		t.Fatalf("drained %d", n)
	}
	if resp := r.expect(); resp.Opaque != a.Opaque || resp.Code != SystemBusy {
		t.Fatalf("drained: %v", resp)
	}
	c := NewRequest(codeDelay, nil, body)
	r.send(c)
	waitWaiting(t, s, 1) // the drained bytes were given back
	h.release <- struct{}{}
	r.expect()
	recv(t, h.seen, "the waiter on the worker")
	h.release <- struct{}{}
	if resp := r.expect(); resp.Opaque != c.Opaque || resp.Code != Success {
		t.Fatalf("waiter: %v", resp)
	}
	if s.waitingBytes.Load() != 0 {
		t.Fatalf("%d bytes still counted as waiting", s.waitingBytes.Load())
	}
}

// Serving inline is a shortcut for a request its lane would start at once:
// while the lane's one worker is busy, requests of its codes that the
// InlineHandler would take wait in the lane (and past its capacity are
// refused [OVERLOAD]), as every send waits for the stock broker's send
// executor; once the lane is idle they are served inline again.
func TestInlineRequestsQueueBehindAFullLane(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, inlineHandler{h}, ServerOptions{RawExtCodes: []int32{codeEcho},
		Lanes: []Lane{{Name: "slow", Codes: []int32{codeDelay, codeEcho}, Workers: 1, Capacity: 1}}})
	r := dialRaw(t, s.opts.Addrs[0])
	inline := func() *Command {
		req := echoReq(SerializeRocketMQ, "x")
		req.Remark = "inline"
		return req
	}
	// servedInline sends a request with the lane idle: the handler's pool
	// side must not see it.
	servedInline := func(when string) {
		t.Helper()
		req := inline()
		r.send(req)
		checkEcho(t, req, r.expect())
		select {
		case got := <-h.seen:
			t.Fatalf("with the lane idle %s the pool served %v, want it inline", when, got.req)
		default:
		}
	}

	servedInline("at first")

	block := NewRequest(codeDelay, nil, nil)
	r.send(block)
	recv(t, h.seen, "the request holding the lane's worker")
	queued, over := inline(), inline()
	var stream []byte
	stream = AppendFrame(stream, queued)
	stream = AppendFrame(stream, over)
	r.write(stream)
	if resp := r.expect(); resp.Opaque != over.Opaque || resp.Code != SystemBusy || resp.Remark != overloadRemark {
		t.Fatalf("second request behind the busy lane: %v, want SYSTEM_BUSY %s", resp, overloadRemark)
	}
	waitWaiting(t, s, 1)
	h.release <- struct{}{}
	if resp := r.expect(); resp.Opaque != block.Opaque || resp.Code != Success {
		t.Fatalf("blocking request: %v", resp)
	}
	if got := recv(t, h.seen, "the queued request on the lane's worker"); got.req.Opaque != queued.Opaque {
		t.Fatalf("the lane's worker served %v, want the queued request", got.req)
	}
	if resp := r.expect(); resp.Opaque != queued.Opaque || resp.Code != Success {
		t.Fatalf("queued request: %v", resp)
	}
	testutil.WaitFor(t, ioWait, func() bool { st := s.LaneStats(time.Time{})[0]; return st.Running == 0 && st.Waiting == 0 }, "the lane to go idle")
	servedInline("again")
}
