package admin

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
)

// Message record magic codes (MessageDecoder / MessageVersion).
const (
	magicV1 = -626843481 // 0xDAA320A7: 1-byte topic length
	magicV2 = -626843477 // 0xDAA320AB: 2-byte topic length
)

// Message sysFlag bits (MessageSysFlag).
const (
	SysFlagCompressed    = 0x1
	SysFlagMultiTags     = 0x2
	SysFlagBornHostV6    = 0x10
	SysFlagStoreHostV6   = 0x20
	sysFlagCompressMask  = 0x700
	sysFlagCompressZlib0 = 0x000 // old clients: type bits 0 mean zlib
	sysFlagCompressZlib  = 0x300
)

// Property keys (MessageConst).
const (
	PropKeys           = "KEYS"
	PropTags           = "TAGS"
	PropWait           = "WAIT"
	PropDelay          = "DELAY"
	PropUniqKey        = "UNIQ_KEY"
	PropTimerDeliverMs = "TIMER_DELIVER_MS"
	PropTimerDelaySec  = "TIMER_DELAY_SEC"
	PropTimerOutMs     = "TIMER_OUT_MS"
	PropRealTopic      = "REAL_TOPIC"
)

// errShortRecord reports a record cut short.
var errShortRecord = errors.New("admin: truncated message record")

// Message is a stored message as pull, query and view bodies carry it
// (MessageExt).
type Message struct {
	Topic                     string            `json:"topic"`
	Flag                      int32             `json:"flag"`
	Properties                map[string]string `json:"properties"`
	Body                      []byte            `json:"body"`
	StoreSize                 int32             `json:"storeSize"`
	QueueID                   int32             `json:"queueId"`
	QueueOffset               int64             `json:"queueOffset"`
	CommitLogOffset           int64             `json:"commitLogOffset"`
	SysFlag                   int32             `json:"sysFlag"`
	BodyCRC                   int32             `json:"bodyCRC"`
	BornTimestamp             int64             `json:"bornTimestamp"`
	BornHost                  netip.AddrPort    `json:"bornHost"`
	StoreTimestamp            int64             `json:"storeTimestamp"`
	StoreHost                 netip.AddrPort    `json:"storeHost"`
	ReconsumeTimes            int32             `json:"reconsumeTimes"`
	PreparedTransactionOffset int64             `json:"preparedTransactionOffset"`
	// MsgID is the client id (UNIQ_KEY) when the producer set one, otherwise
	// the offset id, as MessageClientExt.getMsgId returns.
	MsgID string `json:"msgId"`
	// OffsetMsgID is the server id: store host and commitlog offset.
	OffsetMsgID string `json:"offsetMsgId"`
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Properties[PropTags] }

// Keys returns the KEYS property (space-separated keys).
func (m *Message) Keys() string { return m.Properties[PropKeys] }

// DecodeMessages decodes the concatenated records of a pull, query or view
// body. Compressed bodies are inflated when they use zlib; other compression
// types are left as stored.
func DecodeMessages(b []byte) ([]*Message, error) {
	var out []*Message
	for len(b) > 0 {
		m, n, err := decodeMessage(b)
		if err != nil {
			return out, fmt.Errorf("%w: record %d: %v", ErrBadBody, len(out), err)
		}
		out = append(out, m)
		b = b[n:]
	}
	return out, nil
}

type recordReader struct {
	b   []byte
	pos int
	err error
}

func (r *recordReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.err = errShortRecord
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *recordReader) i32() int32 {
	if s := r.take(4); s != nil {
		return int32(binary.BigEndian.Uint32(s))
	}
	return 0
}

func (r *recordReader) i64() int64 {
	if s := r.take(8); s != nil {
		return int64(binary.BigEndian.Uint64(s))
	}
	return 0
}

func (r *recordReader) host(v6 bool) netip.AddrPort {
	n := 4
	if v6 {
		n = 16
	}
	ip := r.take(n)
	port := r.i32()
	if r.err != nil {
		return netip.AddrPort{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(addr, uint16(port))
}

func decodeMessage(b []byte) (*Message, int, error) {
	r := &recordReader{b: b}
	m := &Message{}
	m.StoreSize = r.i32()
	if r.err == nil && (m.StoreSize < 4 || int(m.StoreSize) > len(b)) {
		return nil, 0, fmt.Errorf("record size %d with %d bytes left", m.StoreSize, len(b))
	}
	r.b = b[:m.StoreSize]
	magic := r.i32()
	if r.err == nil && magic != magicV1 && magic != magicV2 {
		return nil, 0, fmt.Errorf("bad magic code %#x", uint32(magic))
	}
	m.BodyCRC = r.i32()
	m.QueueID = r.i32()
	m.Flag = r.i32()
	m.QueueOffset = r.i64()
	m.CommitLogOffset = r.i64()
	m.SysFlag = r.i32()
	m.BornTimestamp = r.i64()
	m.BornHost = r.host(m.SysFlag&SysFlagBornHostV6 != 0)
	m.StoreTimestamp = r.i64()
	m.StoreHost = r.host(m.SysFlag&SysFlagStoreHostV6 != 0)
	m.ReconsumeTimes = r.i32()
	m.PreparedTransactionOffset = r.i64()
	body := r.take(int(r.i32()))
	var topicLen int
	if magic == magicV2 {
		if s := r.take(2); s != nil {
			topicLen = int(binary.BigEndian.Uint16(s))
		}
	} else if s := r.take(1); s != nil {
		topicLen = int(s[0])
	}
	m.Topic = string(r.take(topicLen))
	var propsLen int
	if s := r.take(2); s != nil {
		propsLen = int(binary.BigEndian.Uint16(s))
	}
	props := r.take(propsLen)
	if r.err != nil {
		return nil, 0, r.err
	}
	m.Properties = ParseProperties(string(props))
	m.Body = append([]byte(nil), body...)
	if m.SysFlag&SysFlagCompressed != 0 {
		switch m.SysFlag & sysFlagCompressMask {
		case sysFlagCompressZlib0, sysFlagCompressZlib:
			if inflated, err := inflate(body); err == nil {
				m.Body = inflated
			}
		}
	}
	m.OffsetMsgID = OffsetMsgID(m.StoreHost, m.CommitLogOffset)
	m.MsgID = m.OffsetMsgID
	if u := m.Properties[PropUniqKey]; u != "" {
		m.MsgID = u
	}
	return m, int(m.StoreSize), nil
}

func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// Property separators (MessageDecoder).
const (
	nameValueSep = '\x01'
	propertySep  = '\x02'
)

// ParseProperties splits a properties string the way Java does: pairs
// separated by \x02, name and value by \x01; empty names or values are
// dropped.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string)
	for _, kv := range strings.Split(s, string(rune(propertySep))) {
		i := strings.IndexByte(kv, nameValueSep)
		if i <= 0 || i == len(kv)-1 {
			continue
		}
		m[kv[:i]] = kv[i+1:]
	}
	return m
}

// EncodeProperties writes properties Java-style, sorted by name so that the
// output is stable: no trailing separator.
func EncodeProperties(props map[string]string) string {
	names := make([]string, 0, len(props))
	for k, v := range props {
		if k != "" && v != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var sb strings.Builder
	for i, k := range names {
		if i > 0 {
			sb.WriteByte(propertySep)
		}
		sb.WriteString(k)
		sb.WriteByte(nameValueSep)
		sb.WriteString(props[k])
	}
	return sb.String()
}

// OffsetMsgID renders the server message id: the store host's IP and port
// and the commitlog offset, in uppercase hex.
//
//	IPv4: +--------+------+---------------------+   32 hex chars
//	      | ip (4) | port | commitlog offset (8)|
//	      +--------+------+---------------------+
//	IPv6: the ip takes 16 bytes                     56 hex chars
func OffsetMsgID(host netip.AddrPort, offset int64) string {
	ip := host.Addr().Unmap()
	raw := ip.AsSlice()
	buf := make([]byte, 0, len(raw)+12)
	buf = append(buf, raw...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(host.Port()))
	buf = binary.BigEndian.AppendUint64(buf, uint64(offset))
	return strings.ToUpper(hex.EncodeToString(buf))
}

// DecodeOffsetMsgID reads the broker address and commitlog offset out of an
// offset message id (MessageDecoder.decodeMessageId).
func DecodeOffsetMsgID(id string) (addr netip.AddrPort, offset int64, err error) {
	var ipLen int
	switch len(id) {
	case 32:
		ipLen = 4
	case 56:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q has %d characters, want 32 (IPv4) or 56 (IPv6)", ErrBadMsgID, id, len(id))
	}
	raw, herr := hex.DecodeString(id)
	if herr != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q is not hex", ErrBadMsgID, id)
	}
	ip, _ := netip.AddrFromSlice(raw[:ipLen])
	port := binary.BigEndian.Uint32(raw[ipLen : ipLen+4])
	if port > 65535 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q encodes port %d", ErrBadMsgID, id, port)
	}
	return netip.AddrPortFrom(ip, uint16(port)), int64(binary.BigEndian.Uint64(raw[ipLen+4:])), nil
}
