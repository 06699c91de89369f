package remoting

import "github.com/rmqio/rmq/internal/bufpool"

// Lent request bodies (ServerOptions.LentBodyCodes). The body of a request
// is copied out of the network buffers into a buffer of its own: for a
// 1 MiB send that was a fresh 1 MiB allocation per message, zeroed by the
// allocator before the copy overwrote it (a tenth of the broker's CPU at
// 1 MiB sends, workload c of bench/compare), and garbage as soon as the
// store had copied it into the commitlog. A request whose code the server
// lends gets its body in a pooled buffer instead, valid until its handler
// returns (ServeInline having handled it, or ServeRemoting); the server
// then takes the buffer back (Command.release) for a later request.
//
// Classes are powers of two from 1 KiB to 4 MiB (the default
// maxMessageSize); a body under half the smallest class, or over the
// largest, is allocated as before.
const (
	minLentClass = 10 // 1 KiB
	maxLentClass = 22 // 4 MiB
)

var lentPool = bufpool.New(minLentClass, maxLentClass)

// newBody returns an empty buffer for the n-byte body of cmd, whose header
// is decoded: a lent one when cmd is a request the server lends and n has
// a class, recorded in cmd.lent.
func (s *Server) newBody(cmd *Command, n int) []byte {
	if s.lend != nil && n >= 1<<(minLentClass-1) && !cmd.IsResponse() && s.lend(cmd.Code) {
		if p := lentPool.Get(n); p != nil {
			cmd.lent = p
			return *p
		}
	}
	return make([]byte, 0, n)
}

// copyBody gives cmd, whose header is decoded, a copy of body.
func (s *Server) copyBody(cmd *Command, body []byte) {
	if len(body) > 0 {
		cmd.Body = clip(append(s.newBody(cmd, len(body)), body...))
	}
}

// clip drops a body's spare capacity: a lent buffer's rest holds bytes of
// earlier requests, which an append to the body must not reach.
func clip(b []byte) []byte { return b[:len(b):len(b)] }

// release takes back c's lent body, if it has one, once its handler has
// returned; Body is nil afterwards.
func (c *Command) release() {
	if p := c.lent; p != nil {
		c.lent, c.Body = nil, nil
		lentPool.Put(p)
	}
}
