package remoting

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitStream is a few echo requests of both header types back to back, with
// the frame boundaries, so a test can split it anywhere.
type splitStream struct {
	reqs  []*Command
	bytes []byte
	ends  []int // ends[i] is the offset just past frame i
}

func newSplitStream(round int) *splitStream {
	s := &splitStream{}
	add := func(st byte, tag string, ext map[string]string, body string) {
		req := NewRequest(codeEcho, ext, []byte(body))
		req.SerializeType = st
		req.ExtFields["tag"] = tag
		s.reqs = append(s.reqs, req)
		s.bytes = AppendFrame(s.bytes, req)
		s.ends = append(s.ends, len(s.bytes))
	}
	r := strconv.Itoa(round)
	add(SerializeJSON, "j1-"+r, map[string]string{"topic": "TopicTest"}, "")
	add(SerializeRocketMQ, "b1-"+r, map[string]string{"props": "KEYS\x01k\x02"}, "hello")
	add(SerializeJSON, "j2-"+r, map[string]string{"u": "主题"}, strings.Repeat("x", 40))
	add(SerializeRocketMQ, "b2-"+r, map[string]string{}, "")
	return s
}

// complete is the number of frames wholly inside the first n bytes.
func (s *splitStream) complete(n int) int {
	k := 0
	for k < len(s.ends) && s.ends[k] <= n {
		k++
	}
	return k
}

// readReplies reads count replies and checks each answers a distinct request
// of the stream.
func (s *splitStream) readReplies(t *testing.T, r *rawConn, count int, answered map[int32]bool) {
	t.Helper()
	byOpaque := map[int32]*Command{}
	for _, req := range s.reqs {
		byOpaque[req.Opaque] = req
	}
	for i := 0; i < count; i++ {
		resp := r.expect()
		req := byOpaque[resp.Opaque]
		if req == nil || answered[resp.Opaque] {
			t.Fatalf("reply %v answers no outstanding request", resp)
		}
		answered[resp.Opaque] = true
		checkEcho(t, req, resp)
	}
}

// TestServerSplitStream feeds the real server one stream whole, split in two
// at every position, and byte by byte; every request must be answered once.
func TestServerSplitStream(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			s := startServer(t, newTestHandler(), ServerOptions{EventLoops: loops})
			conn := dialRaw(t, s.opts.Addrs[0])

			t.Run("whole", func(t *testing.T) {
				r := conn.in(t)
				st := newSplitStream(0)
				r.write(st.bytes)
				st.readReplies(t, r, len(st.reqs), map[int32]bool{})
			})

			t.Run("two parts", func(t *testing.T) {
				r := conn.in(t)
				for p := 1; ; p++ {
					st := newSplitStream(p) // fresh opaques; the length may grow with p
					if p >= len(st.bytes) {
						break
					}
					answered := map[int32]bool{}
					r.write(st.bytes[:p])
					// Waiting for the replies of the frames already complete
					// proves the server consumed the first part on its own.
					// Without one, pause so the parts arrive in separate reads.
					if k := st.complete(p); k > 0 {
						st.readReplies(t, r, k, answered)
					} else {
						time.Sleep(200 * time.Microsecond)
					}
					r.write(st.bytes[p:])
					st.readReplies(t, r, len(st.reqs)-len(answered), answered)
				}
			})

			t.Run("byte by byte", func(t *testing.T) {
				r := conn.in(t)
				st := newSplitStream(-1)
				for i := range st.bytes {
					r.write(st.bytes[i : i+1])
					time.Sleep(50 * time.Microsecond) // let most bytes arrive in reads of their own
				}
				st.readReplies(t, r, len(st.reqs), map[int32]bool{})
			})
		})
	}
}
