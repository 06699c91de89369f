package admin

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// testWait bounds every request of a test; a passing test never waits for it.
const testWait = 10 * time.Second

// fakePeer is a name server or broker whose answers the test scripts by
// request code. It records every request it sees.
type fakePeer struct {
	t        *testing.T
	addr     string
	mu       sync.Mutex
	handlers map[int32]func(*remoting.Command) *remoting.Command
	seen     []*remoting.Command
}

func (p *fakePeer) ServeRemoting(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	p.mu.Lock()
	p.seen = append(p.seen, req)
	h := p.handlers[req.Code]
	p.mu.Unlock()
	if h == nil {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
	}
	resp := h(req)
	if resp != nil {
		resp.Opaque = req.Opaque
		resp.Flag |= remoting.FlagResponse
		resp.SerializeType = req.SerializeType
	}
	return resp
}

// handle installs the answer to one request code.
func (p *fakePeer) handle(code int32, h func(*remoting.Command) *remoting.Command) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handlers[code] = h
}

// reply installs a fixed answer: code, remark, ext fields and body.
func (p *fakePeer) reply(req int32, code int32, remark string, ext map[string]string, body []byte) {
	p.handle(req, func(r *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(r, code, remark)
		for k, v := range ext {
			resp.SetExt(k, v)
		}
		resp.Body = body
		return resp
	})
}

// requests returns the requests seen with the given code.
func (p *fakePeer) requests(code int32) []*remoting.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*remoting.Command
	for _, r := range p.seen {
		if r.Code == code {
			out = append(out, r)
		}
	}
	return out
}

// startPeer starts a fake peer on a random loopback port.
func startPeer(t *testing.T) *fakePeer {
	t.Helper()
	p := &fakePeer{t: t, handlers: map[int32]func(*remoting.Command) *remoting.Command{}}
	p.addr = testutil.FreeAddr(t)
	brokertest.Serve(t, p.addr, p)
	return p
}

// newTestAdmin returns an Admin for the given name servers, closed with the test.
func newTestAdmin(t *testing.T, namesrv ...string) *Admin {
	t.Helper()
	a := New(Options{NamesrvAddr: strings.Join(namesrv, ";"), Timeout: testWait, BodyDir: t.TempDir()})
	t.Cleanup(a.Close)
	return a
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// routeBody is a route with one broker group and its queues.
func routeBody(brokerName, addr string, queues int32) []byte {
	return []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{0:%q},"brokerName":%q,"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":%q,"perm":6,"readQueueNums":%d,"topicSysFlag":0,"writeQueueNums":%d}]}`,
		addr, brokerName, brokerName, queues, queues))
}

// testRecord describes a message record for encodeRecord.
type testRecord struct {
	topic      string
	queueID    int32
	queueOff   int64
	phyOff     int64
	sysFlag    int32
	body       []byte
	props      map[string]string
	storeHost  netip.AddrPort
	bornHost   netip.AddrPort
	bornTs     int64
	storeTs    int64
	magicV2    bool
	compressed bool
}

// encodeRecord writes a stored record as a broker ships it (v1 layout unless
// magicV2; IPv6 hosts set their sysFlag bits).
func encodeRecord(r testRecord) []byte {
	body := r.body
	if r.compressed {
		var zb bytes.Buffer
		zw := zlib.NewWriter(&zb)
		zw.Write(body)
		zw.Close()
		body = zb.Bytes()
		r.sysFlag |= message.SysFlagCompressed
	}
	if r.bornHost.Addr().Is6() {
		r.sysFlag |= message.SysFlagBornHostV6
	}
	if r.storeHost.Addr().Is6() {
		r.sysFlag |= message.SysFlagStoreHostV6
	}
	props := message.MarshalProperties(r.props)
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0) // size, patched below
	magic := message.MagicCodeV1
	if r.magicV2 {
		magic = message.MagicCodeV2
	}
	b = binary.BigEndian.AppendUint32(b, magic)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(body)&0x7FFFFFFF)
	b = binary.BigEndian.AppendUint32(b, uint32(r.queueID))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(r.queueOff))
	b = binary.BigEndian.AppendUint64(b, uint64(r.phyOff))
	b = binary.BigEndian.AppendUint32(b, uint32(r.sysFlag))
	b = binary.BigEndian.AppendUint64(b, uint64(r.bornTs))
	b = append(b, r.bornHost.Addr().AsSlice()...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.bornHost.Port()))
	b = binary.BigEndian.AppendUint64(b, uint64(r.storeTs))
	b = append(b, r.storeHost.Addr().AsSlice()...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.storeHost.Port()))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	if r.magicV2 {
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.topic)))
	} else {
		b = append(b, byte(len(r.topic)))
	}
	b = append(b, r.topic...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(props)))
	b = append(b, props...)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}
