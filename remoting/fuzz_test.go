package remoting

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"testing"

	"github.com/rs/zerolog"
)

// fuzzSeeds are hand-built streams: valid frames of both header types, and
// the broken shapes a decoder has to survive.
func fuzzSeeds() [][]byte {
	jsonEx := exampleJSONFrame()
	binEx := mustHex(exampleBinaryHex)
	goForm := frameOf(SerializeJSON, []byte(`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`), nil)
	withBody := EncodeFrame(&Command{Code: SendMessageV2, Language: "JAVA", Opaque: -9, Remark: "r",
		ExtFields: map[string]string{"a": "g", "b": "T", "i": "KEYS\x01k\x02"}, Body: []byte("payload"), SerializeType: SerializeRocketMQ})
	okBin := binHeader{code: 10, lang: 9, version: 409, opaque: 1}
	// Bodies a lending server lends (lend.go): one in the head, one past it.
	lent := func(n int) []byte {
		return EncodeFrame(&Command{Code: SendMessage, Language: "JAVA", Opaque: 3, ExtFields: map[string]string{"topic": "T"},
			Body: bytes.Repeat([]byte("b"), n), SerializeType: SerializeJSON})
	}
	return [][]byte{
		jsonEx,
		binEx,
		goForm,
		withBody,
		lent(600),
		lent(partialKeep + 100),
		append(append([]byte(nil), jsonEx...), binEx...), // two frames in one stream
		// truncated
		jsonEx[:len(jsonEx)-1],
		binEx[:len(binEx)-1],
		binEx[:6],
		binEx[:3],
		// header length > total
		frameBytes(10, SerializeJSON, 200, []byte(`{"code":1}`)),
		frameBytes(4+21, SerializeRocketMQ, 0xFFFFFF, okBin.bytes()),
		// lengths that lie or are negative
		frameBytes(-1, SerializeJSON, 2, []byte("{}")),
		frameBytes(math.MaxInt32, SerializeJSON, 2, []byte("{}")),
		frameBytes(2, SerializeJSON, 0, nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, remarkLen: -1}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, remarkLen: math.MaxInt32}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: -1}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: math.MaxInt32, ext: extEntry(1, "a", 1, "b")}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: 8, ext: extEntry(math.MaxInt16, "a", 1, "b")}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: 8, ext: extEntry(-1, "a", 1, "b")}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: 8, ext: extEntry(1, "a", math.MaxInt32, "b")}.bytes(), nil),
		frameOf(SerializeRocketMQ, binHeader{code: 1, extLen: 8, ext: extEntry(1, "a", -1, "b")}.bytes(), nil),
		// invalid UTF-8 and odd escapes in JSON
		frameOf(SerializeJSON, []byte("{\"code\":1,\"language\":\"J\xffAVA\",\"remark\":\"\xc3\",\"extFields\":{\"k\xfe\":\"v\x80\"}}"), nil),
		frameOf(SerializeJSON, []byte(`{"code":1,"remark":"\ud800\udc00\ud800","extFields":{"\u0001":"\u0000"}}`), nil),
		frameOf(SerializeJSON, []byte(`null`), nil),
		frameOf(SerializeJSON, []byte(`{"code":32767,"opaque":-2147483648,"flag":-1,"version":-1}`), []byte{0}),
		// unknown serialize type
		frameBytes(6, 7, 2, []byte("{}")),
	}
}

// FuzzDecodeFrame feeds a byte stream through the frame decoder the way the
// server does: length prefix first, then each complete frame. It must never
// panic, and a frame that decodes must re-encode to an equal command.
//
// The stream is also fed to an incremental decoder (streamDecoder, the
// server's readFrames) whole, split in two and byte by byte: TCP may cut a
// stream anywhere, and every cut must yield the same frames and stop the same
// way. The cut points are derived from the stream (every cut of a short one)
// rather than taken as a second fuzz argument, so the stored corpus in
// testdata/fuzz/FuzzDecodeFrame, written for one argument, keeps running.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkChunkings(t, stream)
		for len(stream) >= 4 {
			n, err := FrameLength(stream[:4])
			if err != nil {
				return // the server closes the connection here
			}
			if len(stream)-4 < n {
				return // the server waits for more bytes here
			}
			frame := stream[4 : 4+n]
			stream = stream[4+n:]
			cmd, err := DecodeFrame(frame)
			checkRawAgrees(t, frame, cmd, err)
			if err != nil {
				continue
			}
			checkReencode(t, cmd)
			checkCrossType(t, cmd)
		}
	})
}

// streamDecoder runs the server's frame reader (Server.nextFrame, called as
// readFrames calls it) over a plain buffer: bytes arrive in chunks; after
// each, every complete frame is decoded; an error closes the connection, and
// later bytes are ignored. It also checks what the reader keeps between
// chunks: nothing in the read buffer, and a partial-frame buffer that holds
// exactly the bytes after the last frame, charged to the budget, in a
// capacity proportional to them.
type streamDecoder struct {
	srv    *Server
	conn   *Conn
	in     sliceInbound
	seen   []byte     // every byte fed so far
	done   int        // offset in seen just past the last decoded frame
	buf    []byte     // seen after the last decoded frame
	frames [][]byte   // each decoded frame, prefix included
	cmds   []*Command // what each decoded to
	err    error      // why the connection closed; nil while open
	broken string     // a violated invariant of the reader
}

func newStreamDecoder() *streamDecoder {
	srv := &Server{log: zerolog.Nop(), inflight: NewBudget(-1)}
	c := &Conn{srv: srv, remote: "fuzz"}
	srv.conns.Store(uint64(1), c)
	return &streamDecoder{srv: srv, conn: c}
}

func (d *streamDecoder) feed(chunk []byte) {
	if d.err != nil {
		return
	}
	d.seen = append(d.seen, chunk...)
	d.in.b = append(d.in.b, chunk...)
	for {
		cmd, err := d.srv.nextFrame(d.conn, &d.in)
		if err != nil {
			d.err = err
			return
		}
		if cmd == nil {
			break
		}
		end := len(d.seen) - len(d.in.b)
		d.frames = append(d.frames, d.seen[d.done:end])
		d.cmds = append(d.cmds, cmd)
		d.done = end
	}
	d.buf = d.seen[d.done:]
	p, capacity, charged := d.conn.partialBytes(), d.conn.partialCap(), d.srv.inflight.Load()
	switch {
	case !bytes.Equal(p, d.buf):
		d.broken = fmt.Sprintf("partial frame %q, want the %d bytes after the last frame", p, len(d.buf))
	case len(d.in.b) != 0:
		d.broken = fmt.Sprintf("%d bytes left in the read buffer", len(d.in.b))
	case capacity > max(partialKeep, 2*len(p)):
		d.broken = fmt.Sprintf("partial frame of capacity %d for %d bytes", capacity, len(p))
	case len(p) > 0 && int64(capacity) != charged:
		d.broken = fmt.Sprintf("partial frame of capacity %d, %d charged", capacity, charged)
	case len(p) == 0 && charged != 0:
		d.broken = fmt.Sprintf("no partial frame, %d charged", charged)
	}
}

// partialBytes is c's partial frame, head and chunks.
func (c *Conn) partialBytes() []byte {
	out := append([]byte(nil), c.partial...)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

// partialCap is the capacity c holds for its partial frame: nothing but the
// kept head between frames.
func (c *Conn) partialCap() int {
	if c.plen == 0 {
		return 0
	}
	n := cap(c.partial)
	for _, ch := range c.chunks {
		n += cap(ch)
	}
	return n
}

// sliceInbound is the inbound interface over a plain buffer.
type sliceInbound struct{ b []byte }

func (s *sliceInbound) InboundBuffered() int { return len(s.b) }

func (s *sliceInbound) Peek(n int) ([]byte, error) {
	if n > len(s.b) {
		return nil, io.ErrShortBuffer
	}
	return s.b[:n], nil
}

func (s *sliceInbound) Discard(n int) (int, error) {
	n = min(n, len(s.b))
	s.b = s.b[n:]
	return n, nil
}

// decodeChunks runs a streamDecoder over stream cut at the given ascending
// offsets.
func decodeChunks(stream []byte, cuts ...int) *streamDecoder {
	d := newStreamDecoder()
	if len(cuts) > 0 {
		// A cut stream is read by a server that lends every request's body
		// (lend.go), the whole one by a server that lends none: both must
		// decode the same commands.
		d.srv.lend = func(int32) bool { return true }
	}
	prev := 0
	for _, c := range cuts {
		d.feed(stream[prev:c])
		prev = c
	}
	d.feed(stream[prev:])
	return d
}

// allCutsMax is the longest stream split at every offset; longer ones are
// split at a few offsets around the first prefix, the middle and the end.
const allCutsMax = 64

func splitPoints(stream []byte) []int {
	n := len(stream)
	if n <= allCutsMax {
		cuts := make([]int, 0, n+1)
		for c := 0; c <= n; c++ {
			cuts = append(cuts, c)
		}
		return cuts
	}
	// The last one moves with the content, so the fuzzer reaches other cuts.
	return []int{1, 3, 4, 5, n / 2, n - 4, n - 1, int(crc32.ChecksumIEEE(stream) % uint32(n))}
}

// checkChunkings asserts that the stream decodes to the same frames and
// stops with the same error (or the same buffered remainder) whole, split in
// two at each split point, and byte by byte.
func checkChunkings(t *testing.T, stream []byte) {
	t.Helper()
	whole := decodeChunks(stream)
	if whole.broken != "" {
		t.Fatalf("whole stream: %s", whole.broken)
	}
	// The whole-stream pass against the plain loop above: it decodes exactly
	// the frames before the first failure.
	consumed := 0
	for _, fr := range whole.frames {
		if !bytes.Equal(fr, stream[consumed:consumed+len(fr)]) {
			t.Fatalf("frame %q is not the stream at offset %d", fr, consumed)
		}
		consumed += len(fr)
	}
	if whole.err == nil && len(whole.buf) != len(stream)-consumed {
		t.Fatalf("%d bytes buffered, want the %d after the decoded frames", len(whole.buf), len(stream)-consumed)
	}
	agree := func(how string, got *streamDecoder) {
		t.Helper()
		if got.broken != "" {
			t.Fatalf("%s: %s", how, got.broken)
		}
		if fmt.Sprint(got.err) != fmt.Sprint(whole.err) {
			t.Fatalf("%s: stopped with %v, whole stream with %v", how, got.err, whole.err)
		}
		if len(got.frames) != len(whole.frames) {
			t.Fatalf("%s: %d frames, whole stream %d", how, len(got.frames), len(whole.frames))
		}
		for i := range got.frames {
			if !bytes.Equal(got.frames[i], whole.frames[i]) || !sameCommand(got.cmds[i], whole.cmds[i]) {
				t.Fatalf("%s: frame %d differs\n got %+v\nwant %+v", how, i, got.cmds[i], whole.cmds[i])
			}
		}
		if got.err == nil && !bytes.Equal(got.buf, whole.buf) {
			t.Fatalf("%s: %d bytes left buffered, whole stream %d", how, len(got.buf), len(whole.buf))
		}
	}
	for _, c := range splitPoints(stream) {
		agree(fmt.Sprintf("split at %d of %d", c, len(stream)), decodeChunks(stream, c))
	}
	bytewise := newStreamDecoder()
	for i := range stream {
		bytewise.feed(stream[i : i+1])
	}
	agree("byte by byte", bytewise)
}

// checkReencode asserts that cmd survives encode → decode unchanged, except
// that an empty language is written as GO.
func checkReencode(t *testing.T, cmd *Command) {
	t.Helper()
	enc := EncodeFrame(cmd)
	if got := binary.BigEndian.Uint32(enc); int(got) != len(enc)-4 {
		t.Fatalf("encoded length prefix %d for %d bytes", got, len(enc)-4)
	}
	again, err := DecodeFrame(enc[4:])
	if err != nil {
		t.Fatalf("re-decoding %+v: %v\nframe %q", cmd, err, enc)
	}
	want := *cmd
	want.Language = wireLanguage(want.Language)
	if !sameCommand(again, &want) {
		t.Fatalf("re-encode changed the command\n got %+v lang=%q ver=%d st=%d\nwant %+v lang=%q ver=%d st=%d",
			again, again.Language, again.Version, again.SerializeType, &want, want.Language, want.Version, want.SerializeType)
	}
}

// TestFuzzSeedsOutcome pins what the decoder makes of each seed, so the seeds
// keep covering both the success and the error paths.
func TestFuzzSeedsOutcome(t *testing.T) {
	var decoded, rejected int
	for _, s := range fuzzSeeds() {
		for len(s) >= 4 {
			n, err := FrameLength(s[:4])
			if err != nil || len(s)-4 < n {
				rejected++
				break
			}
			if _, err := DecodeFrame(s[4 : 4+n]); err != nil {
				rejected++
			} else {
				decoded++
			}
			s = s[4+n:]
		}
	}
	if decoded < 8 || rejected < 15 {
		t.Fatalf("seeds decode %d frames and reject %d; want both paths well covered", decoded, rejected)
	}
}

// checkCrossType re-encodes cmd in the other header type, as a handler does
// when it copies fields into a reply, and checks that only the documented
// losses happen: ROCKETMQ narrows code and version to int16 and languages to
// known names and drops empty ext maps; JSON replaces invalid UTF-8.
func checkCrossType(t *testing.T, cmd *Command) {
	t.Helper()
	other := *cmd
	other.SerializeType = SerializeRocketMQ + SerializeJSON - cmd.SerializeType
	enc := EncodeFrame(&other)
	got, err := DecodeFrame(enc[4:])
	if err != nil {
		t.Fatalf("decoding %+v as type %d: %v", &other, other.SerializeType, err)
	}
	want := other
	want.Language = wireLanguage(want.Language)
	if other.SerializeType == SerializeRocketMQ {
		want.Code = int32(int16(want.Code))
		want.Version = int32(int16(want.Version))
		want.Language = LanguageName(LanguageCode(want.Language))
		if len(want.ExtFields) == 0 {
			want.ExtFields = nil
		}
	} else {
		want.Language = validUTF8(want.Language)
		want.Remark = validUTF8(want.Remark)
		if want.ExtFields != nil {
			clean := make(map[string]string, len(want.ExtFields))
			for k, v := range want.ExtFields {
				clean[validUTF8(k)] = validUTF8(v)
			}
			if len(clean) < len(want.ExtFields) {
				return // keys that differ only in invalid bytes collide; map order picks the winner
			}
			want.ExtFields = clean
		}
	}
	if !sameCommand(got, &want) {
		t.Fatalf("type %d → %d changed the command\n got %+v lang=%q ver=%d\nwant %+v lang=%q ver=%d",
			cmd.SerializeType, other.SerializeType, got, got.Language, got.Version, &want, want.Language, want.Version)
	}
}

// checkRawAgrees decodes frame again with its custom fields left unparsed
// (ServerOptions.RawExtCodes): it must fail exactly when the eager decode
// fails, and its fields must read back the same.
func checkRawAgrees(t *testing.T, frame []byte, eager *Command, eagerErr error) {
	t.Helper()
	raw, err := decodeFrame(frame, func(int32) bool { return true }, false)
	if (err == nil) != (eagerErr == nil) {
		t.Fatalf("eager decode error %v, raw decode error %v", eagerErr, err)
	}
	if err != nil {
		return
	}
	if raw.SerializeType == SerializeRocketMQ && len(eager.ExtFields) > 0 {
		if _, ok := raw.RawExt(); !ok {
			t.Fatal("binary header with fields decoded without its raw area")
		}
		if raw.ExtFields != nil {
			t.Fatal("raw decode built the field map")
		}
	}
	got := raw.Ext()
	if len(got) != len(eager.ExtFields) {
		t.Fatalf("raw decode has %d fields, eager %d", len(got), len(eager.ExtFields))
	}
	for k, v := range eager.ExtFields {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("field %q: raw %q (present %v), eager %q", k, g, ok, v)
		}
	}
}
