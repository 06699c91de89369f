package remoting

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// lendingDecoder is a stream decoder of a server that lends the bodies of
// codeEcho requests.
func lendingDecoder() *streamDecoder {
	d := newStreamDecoder()
	d.srv.lend = codeSet([]int32{codeEcho})
	return d
}

// decodeInPieces feeds frame to d in pieces of piece bytes and returns the
// one command it decodes.
func decodeInPieces(t *testing.T, d *streamDecoder, frame []byte, piece int) *Command {
	t.Helper()
	var got *Command
	for off := 0; off < len(frame); off += piece {
		d.in.b = frame[off:min(off+piece, len(frame))]
		cmd, err := d.srv.nextFrame(d.conn, &d.in)
		if err != nil || (cmd != nil) != (off+piece >= len(frame)) {
			t.Fatalf("at %d: %v, %v", off, cmd, err)
		}
		got = cmd
	}
	return got
}

// Only the requests of lent codes with a body of at least half the smallest
// class get a lent body; every body is the frame's, whole or in pieces, and
// release takes it back once.
func TestLentBodies(t *testing.T) {
	mk := func(code int32, n int, response bool) *Command {
		req := NewRequest(code, map[string]string{"k": "v"}, nil)
		req.Body = make([]byte, n)
		for i := range req.Body {
			req.Body[i] = byte(i*7 + n)
		}
		if response {
			req.Flag |= FlagResponse
		}
		return req
	}
	for _, tc := range []struct {
		name  string
		cmd   *Command
		piece int // 0: whole
		lent  bool
	}{
		{"small", mk(codeEcho, 1<<(minLentClass-1)-1, false), 0, false},
		{"half the smallest class", mk(codeEcho, 1<<(minLentClass-1), false), 0, true},
		{"64 KiB whole", mk(codeEcho, 64<<10, false), 0, true},
		{"64 KiB in pieces", mk(codeEcho, 64<<10, false), 4 << 10, true},
		{"1 MiB in pieces", mk(codeEcho, 1<<20, false), 16 << 10, true},
		{"largest class in pieces", mk(codeEcho, 1<<maxLentClass, false), 256 << 10, true},
		{"over the largest class", mk(codeEcho, 1<<maxLentClass+1, false), 256 << 10, false},
		{"code not lent", mk(codeHold, 64<<10, false), 4 << 10, false},
		{"response", mk(codeEcho, 64<<10, true), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
				tc.cmd.SerializeType = st
				frame := EncodeFrame(tc.cmd)
				d := lendingDecoder()
				var got *Command
				if tc.piece == 0 {
					d.feed(frame)
					if d.err != nil || len(d.cmds) != 1 {
						t.Fatalf("type %d: %d commands, %v", st, len(d.cmds), d.err)
					}
					got = d.cmds[0]
				} else {
					got = decodeInPieces(t, d, frame, tc.piece)
				}
				if !bytes.Equal(got.Body, tc.cmd.Body) || got.Code != tc.cmd.Code || got.Ext()["k"] != "v" {
					t.Fatalf("type %d: decoded code %d, %d-byte body, ext %v; want the frame's", st, got.Code, len(got.Body), got.Ext())
				}
				if (got.lent != nil) != tc.lent {
					t.Fatalf("type %d: lent %t, want %t", st, got.lent != nil, tc.lent)
				}
				if cap(got.Body) != len(got.Body) {
					// The rest of a lent buffer holds earlier requests' bytes.
					t.Fatalf("type %d: body of %d bytes has capacity %d", st, len(got.Body), cap(got.Body))
				}
				got.release()
				if tc.lent && got.Body != nil {
					t.Fatalf("type %d: a released body is still set", st)
				}
				if !tc.lent && !bytes.Equal(got.Body, tc.cmd.Body) {
					t.Fatalf("type %d: release touched a body that was not lent", st)
				}
				got.release()
			}
		})
	}
}

// A released body is the next request's, and a 1 MiB frame read in pieces
// then allocates far less than its body.
func TestLentBodyIsReused(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	frame := echoFrame(t, 1<<20)
	d := lendingDecoder()
	// One P, no collection between the reads (TestPartialChunksArePooled).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	first := decodeInPieces(t, d, frame, 16<<10)
	buf := &first.Body[0]
	first.release()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	second := decodeInPieces(t, d, frame, 16<<10)
	runtime.ReadMemStats(&after)
	if &second.Body[0] != buf {
		t.Fatal("the second request did not get the released body")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Fatalf("a second 1 MiB frame in pieces allocated %d bytes, want a few", got)
	}
}

// Bodies lent to handlers on the loop and on the pool, many at a time over
// several connections, arrive intact and are answered intact: the server
// takes a body back only after the answer that echoes it is copied out.
func TestLentBodiesUnderLoad(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, inlineHandler{h}, ServerOptions{LentBodyCodes: []int32{codeEcho}})
	sizes := []int{0, 100, 600, 1 << 10, 5000, 64 << 10, 200 << 10, 1<<20 + 17}
	conns := make([]*rawConn, 4)
	for i := range conns {
		conns[i] = dialRaw(t, s.opts.Addrs[0])
	}
	testutil.Concurrently(t, len(conns), func(conn int) error {
		r := conns[conn]
		rng := rand.New(rand.NewPCG(uint64(conn), 1))
		for round := range 8 {
			want := map[int32]*Command{}
			var stream []byte
			for i := range 12 {
				req := NewRequest(codeEcho, map[string]string{"tag": fmt.Sprint(conn, round, i)}, nil)
				req.Body = make([]byte, sizes[rng.IntN(len(sizes))])
				for j := range req.Body {
					req.Body[j] = byte(rng.Uint32())
				}
				if i%2 == 0 {
					req.Remark = "inline"
				}
				want[req.Opaque] = req
				stream = AppendFrame(stream, req)
			}
			_ = r.nc.SetWriteDeadline(time.Now().Add(ioWait))
			if _, err := r.nc.Write(stream); err != nil {
				return err
			}
			for range len(want) {
				resp, err := r.read(ioWait)
				if err != nil {
					return err
				}
				req := want[resp.Opaque]
				if req == nil || resp.Code != Success || !bytes.Equal(resp.Body, req.Body) {
					return fmt.Errorf("connection %d round %d: reply %v does not echo its request", conn, round, resp)
				}
				delete(want, resp.Opaque)
			}
		}
		return nil
	})
}
