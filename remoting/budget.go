package remoting

import "sync/atomic"

// Budget is the memory a broker holds for requests that have not arrived
// whole (serverMaxInflightBytes): the partial frames of its remoting
// connections (hygiene.go) and the request bytes its gRPC endpoint holds
// (grpcapi). One Budget serves the whole broker, so that the two ports
// together stay within the one limit; each port decides what to refuse
// when it is spent (remoting closes the connection holding the largest
// partial frame, gRPC refuses new calls and cancels the calls still
// arriving).
type Budget struct {
	max  int64 // <= 0: no limit
	used atomic.Int64
}

// NewBudget is a budget of max bytes: 0 means DefaultMaxInflightBytes, a
// negative value no limit.
func NewBudget(max int64) *Budget {
	if max == 0 {
		max = DefaultMaxInflightBytes
	}
	return &Budget{max: max}
}

// Max is the limit (<= 0: none).
func (b *Budget) Max() int64 { return b.max }

// Load is the bytes charged now.
func (b *Budget) Load() int64 { return b.used.Load() }

// Add charges delta bytes (negative: returns them) and returns the total.
func (b *Budget) Add(delta int64) int64 { return b.used.Add(delta) }

// Over reports whether more than the limit is charged.
func (b *Budget) Over() bool { return b.max > 0 && b.used.Load() > b.max }

// Budget is the budget the server charges its partial frames to.
func (s *Server) Budget() *Budget { return s.inflight }
