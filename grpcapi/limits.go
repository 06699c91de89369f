package grpcapi

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// What one call may make the endpoint hold, and how its request bytes are
// kept within the broker's in-flight budget.
//
//   - Metadata: maxHeaderListSize, grpc-java's default
//     (GrpcUtil.DEFAULT_MAX_HEADER_LIST_SIZE), which the stock proxy keeps
//     (GrpcServerBuilder sets no maxInboundMetadataSize). The server
//     advertises it in its SETTINGS; a header block past it is counted as it
//     is decoded and dropped, not kept, and the stream is reset
//     (FRAME_SIZE_ERROR). grpc-go's own default is 16 MiB per call.
//   - A request message: the broker's maxMessageSize plus envelopeHeadroom
//     (recvLimit). gRPC reads a message's length before its bytes and
//     refuses one over the limit with RESOURCE_EXHAUSTED before reading it,
//     as grpc-java refuses one over the stock proxy's
//     grpcMaxInboundMessageSize (130 MiB there). A body up to
//     envelopeHeadroom over maxMessageSize still arrives and gets the
//     stock MESSAGE_BODY_TOO_LARGE (send.go); the 5.x SDKs check the body
//     against the max_body_size of their Settings before sending, so only
//     a client that ignores it meets either answer.
//   - The bytes received and not yet decoded into a request (DATA frames of
//     1 KiB and more, which gRPC reads into buffers of its buffer pool) are
//     charged to the broker's in-flight budget (serverMaxInflightBytes), the
//     one the remoting port charges its partial frames to, for as long as
//     gRPC holds them: budgetPool. While the budget is spent a new call is
//     refused at once with RESOURCE_EXHAUSTED, before any of its bytes are
//     read (admit), and when a charge takes it past the limit every call
//     whose request has not arrived whole is cancelled, which frees its
//     bytes (arriving). gRPC cannot tell which call a buffer belongs to, so
//     the calls still arriving are cancelled together rather than the
//     largest; a call already decoded is not touched.
const (
	maxHeaderListSize = 8 << 10
	envelopeHeadroom  = 1 << 20
)

// recvLimit is the largest request message the endpoint reads.
func recvLimit(maxMessageSize int) int { return maxMessageSize + envelopeHeadroom }

// limitOptions are the server options of the limits above.
func (s *Server) limitOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.MaxRecvMsgSize(recvLimit(s.b.Options().MaxMessageSize)),
		experimental.BufferPool(s.pool),
		grpc.InTapHandle(s.admit),
	}
}

// budgetPool is gRPC's buffer pool, charging every buffer it hands out to
// budget until it is given back. gRPC gives most buffers back (Put), but
// drops the ones still queued for a stream that ends before reading them;
// those are returned to the budget when the collector finds them
// unreachable (runtime.AddCleanup), so the charge cannot leak. Each buffer
// goes out under a handle of its own, the key of its charge, weakly held,
// so that a dropped handle is collected. A charge that takes the budget
// past its limit calls over and starts a collection (collect), which
// returns the dropped buffers' charges and their memory.
type budgetPool struct {
	inner  mem.BufferPool
	budget inflightBudget
	over   func()

	mu      sync.Mutex
	charged map[weak.Pointer[[]byte]]int64
	gcing   atomic.Bool
}

// inflightBudget is the broker's budget of request bytes not yet arrived
// whole (Broker.InflightBudget), which its remoting port charges its
// partial frames to: gRPC charges the buffers it holds.
type inflightBudget interface {
	Add(delta int64) int64
	Over() bool
}

func newBudgetPool(inner mem.BufferPool, budget inflightBudget, over func()) *budgetPool {
	return &budgetPool{inner: inner, budget: budget, over: over, charged: make(map[weak.Pointer[[]byte]]int64)}
}

func (p *budgetPool) Get(n int) *[]byte {
	b := p.inner.Get(n)
	h := new([]byte) // the charge's own handle: the pool may hand b out again
	*h = *b
	size := int64(cap(*h))
	key := weak.Make(h)
	p.mu.Lock()
	p.charged[key] = size
	p.mu.Unlock()
	runtime.AddCleanup(h, p.release, key)
	p.budget.Add(size)
	if p.budget.Over() {
		p.over()
		p.collect()
	}
	return h
}

func (p *budgetPool) Put(h *[]byte) {
	p.release(weak.Make(h))
	p.inner.Put(h)
}

// release returns the charge of key's buffer, once.
func (p *budgetPool) release(key weak.Pointer[[]byte]) {
	p.mu.Lock()
	size, ok := p.charged[key]
	delete(p.charged, key)
	p.mu.Unlock()
	if ok {
		p.budget.Add(-size)
	}
}

// collect runs one collection in the background unless one is running:
// the budget is spent, and part of it may be buffers gRPC dropped.
func (p *budgetPool) collect() {
	if p.gcing.CompareAndSwap(false, true) {
		go func() {
			defer p.gcing.Store(false)
			runtime.GC()
		}()
	}
}

// admit runs when a call's headers arrive, before any of its message: it
// refuses the call while the budget is spent, and otherwise makes its
// context one arriving can cancel until its request has arrived.
func (s *Server) admit(ctx context.Context, _ *tap.Info) (context.Context, error) {
	if s.budget.Over() {
		s.pool.collect()
		return nil, status.Error(codes.ResourceExhausted, "in-flight request bytes over serverMaxInflightBytes")
	}
	return s.arriving.add(ctx), nil
}

// arrivingCalls are the calls whose request has not arrived whole.
type arrivingCalls struct {
	mu    sync.Mutex
	calls map[*arrivingCall]struct{}
}

type arrivingCall struct {
	cancel context.CancelFunc
	once   sync.Once
	owner  *arrivingCalls
}

type arrivingKey struct{}

func newArrivingCalls() *arrivingCalls {
	return &arrivingCalls{calls: make(map[*arrivingCall]struct{})}
}

// add registers the call of ctx; it leaves the set when its request has
// arrived (arrived) or when the call ends.
func (a *arrivingCalls) add(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	c := &arrivingCall{cancel: cancel, owner: a}
	a.mu.Lock()
	a.calls[c] = struct{}{}
	a.mu.Unlock()
	context.AfterFunc(ctx, c.leave)
	return context.WithValue(ctx, arrivingKey{}, c)
}

func (c *arrivingCall) leave() {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.calls, c)
		c.owner.mu.Unlock()
	})
}

// arrived takes the call of ctx out of the set: its request is decoded.
func arrived(ctx context.Context) {
	if c, ok := ctx.Value(arrivingKey{}).(*arrivingCall); ok {
		c.leave()
	}
}

// cancelAll cancels every call still arriving.
func (a *arrivingCalls) cancelAll() {
	a.mu.Lock()
	calls := make([]*arrivingCall, 0, len(a.calls))
	for c := range a.calls {
		calls = append(calls, c)
	}
	a.mu.Unlock()
	for _, c := range calls {
		c.cancel() // its AfterFunc takes it out of the set
	}
}

// arriving reports the number of calls still arriving (tests).
func (a *arrivingCalls) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls)
}
