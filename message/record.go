package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Magic codes of message records (MessageDecoder MESSAGE_MAGIC_CODE,
// MessageVersion). The commitlog's end-of-file BLANK magic belongs to the
// store.
const (
	MagicCodeV1 uint32 = 0xDAA320A7 // -626843481: int8 topic length
	MagicCodeV2 uint32 = 0xDAA320AB // -626843477: 5.x record, int16 topic length
)

// MaxTopicLength is the longest topic (in bytes) a v1 record can hold.
const MaxTopicLength = 127

// Byte positions of the record fields that do not depend on host widths.
const (
	PosTotalSize      = 0
	PosMagic          = 4
	PosBodyCRC        = 8
	PosQueueID        = 12
	PosFlag           = 16
	PosQueueOffset    = 20
	PosPhysicalOffset = 28
	PosSysFlag        = 36
	PosBornTimestamp  = 40
	PosBornHost       = 48
)

// MinRecordLength is the smallest v1 record: IPv4 hosts, empty body, topic
// and properties.
const MinRecordLength = 91

// Message is what a producer asks the store to append.
type Message struct {
	Topic   string
	QueueID int32
	Flag    int32
	Body    []byte
	// Properties are stored Java-style (MarshalProperties). The TAGS entry feeds
	// the default consume-queue tagsCode.
	Properties map[string]string
	// RawProperties is stored as the properties text, as given, when
	// Properties is nil (a sender that already has the text saves the map).
	RawProperties             string
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	// SkipFlushWait makes a SYNC_FLUSH put return without waiting for the fsync,
	// like Java's WAIT=false property (a Properties[PropWait] of "false" does the same).
	SkipFlushWait bool
	// Delivery marks the store's own delivery of a message it already holds
	// (a due delay-level message or timer, a timer roll). The store takes
	// such a put past diskSpaceWarningLevelRatio as long as the free space
	// stays above the dispatch reserve: the pending message pins its old
	// commitlog file, so refusing its delivery on a full disk would keep that
	// file, and the disk full, for ever.
	Delivery bool
}

// MessageExt is a decoded record.
type MessageExt struct {
	Message
	QueueOffset    int64
	PhysicalOffset int64
	StoreTimestamp int64
	StoreHost      netip.AddrPort
	BodyCRC        int32
	StoreSize      int32
	MsgID          string // offsetMsgId of StoreHost and PhysicalOffset
}

// BodyCRC is CRC-32 (IEEE) of body masked to 31 bits, as Java UtilAll.crc32.
func BodyCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

// HostIsV6 reports whether h is written as an IPv6 host (16 address bytes,
// with the SysFlag*HostV6 bit): true for IPv6 addresses other than
// IPv4-mapped ones.
func HostIsV6(h netip.AddrPort) bool {
	a := h.Addr()
	return a.Is6() && !a.Is4In6()
}

// hostLen is the encoded width of a host: IP bytes + int32 port.
func hostLen(h netip.AddrPort) int {
	if HostIsV6(h) {
		return 20
	}
	return 8
}

// putHost writes ip + int32 port and returns the bytes written. An invalid
// AddrPort is written as 0.0.0.0:0.
func putHost(b []byte, h netip.AddrPort) int {
	a := h.Addr()
	if a.Is4In6() {
		a = a.Unmap()
	}
	var n int
	switch {
	case a.Is4():
		ip := a.As4()
		n = copy(b, ip[:])
	case a.Is6():
		ip := a.As16()
		n = copy(b, ip[:])
	default:
		b[0], b[1], b[2], b[3] = 0, 0, 0, 0
		n = 4
	}
	binary.BigEndian.PutUint32(b[n:], uint32(h.Port()))
	return n + 4
}

func readHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), uint16(binary.BigEndian.Uint32(b[16:])))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(binary.BigEndian.Uint32(b[4:])))
}

// Record is everything a record holds, with the properties already encoded as
// text. The store fills one in before taking its put lock and sets the
// offsets and the store timestamp under it; EncodeRecord builds one from a
// MessageExt.
type Record struct {
	Topic                     string
	Properties                string // properties text (MarshalProperties)
	Body                      []byte
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	SysFlag                   int32
	ReconsumeTimes            int32
	QueueOffset               int64
	PhysicalOffset            int64
	BornTimestamp             int64
	StoreTimestamp            int64
	PreparedTransactionOffset int64
	BornHost                  netip.AddrPort
	StoreHost                 netip.AddrPort
}

// Size is the TOTALSIZE of the encoded record.
func (r *Record) Size() int {
	topicLenSize := 1
	if len(r.Topic) > MaxTopicLength {
		topicLenSize = 2
	}
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(r.BornHost) + 8 + hostLen(r.StoreHost) + 4 + 8 +
		4 + len(r.Body) + topicLenSize + len(r.Topic) + 2 + len(r.Properties)
}

// Encode writes the record into b, which must be exactly r.Size() bytes. The
// IPv6 sysFlag bits are set from the hosts actually written. Topics longer than
// 127 bytes get the v2 magic and an int16 topic length (as 5.x brokers do).
// BODYCRC is written as r.BodyCRC.
func (r *Record) Encode(b []byte) {
	be := binary.BigEndian
	be.PutUint32(b[PosTotalSize:], uint32(len(b)))
	magic := MagicCodeV1
	if len(r.Topic) > MaxTopicLength {
		magic = MagicCodeV2
	}
	be.PutUint32(b[PosMagic:], magic)
	be.PutUint32(b[PosBodyCRC:], uint32(r.BodyCRC))
	be.PutUint32(b[PosQueueID:], uint32(r.QueueID))
	be.PutUint32(b[PosFlag:], uint32(r.Flag))
	be.PutUint64(b[PosQueueOffset:], uint64(r.QueueOffset))
	be.PutUint64(b[PosPhysicalOffset:], uint64(r.PhysicalOffset))
	sys := r.SysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if HostIsV6(r.BornHost) {
		sys |= SysFlagBornHostV6
	}
	if HostIsV6(r.StoreHost) {
		sys |= SysFlagStoreHostV6
	}
	be.PutUint32(b[PosSysFlag:], uint32(sys))
	be.PutUint64(b[PosBornTimestamp:], uint64(r.BornTimestamp))
	p := PosBornHost
	p += putHost(b[p:], r.BornHost)
	be.PutUint64(b[p:], uint64(r.StoreTimestamp))
	p += 8
	p += putHost(b[p:], r.StoreHost)
	be.PutUint32(b[p:], uint32(r.ReconsumeTimes))
	p += 4
	be.PutUint64(b[p:], uint64(r.PreparedTransactionOffset))
	p += 8
	be.PutUint32(b[p:], uint32(len(r.Body)))
	p += 4
	p += copy(b[p:], r.Body)
	if magic == MagicCodeV2 {
		be.PutUint16(b[p:], uint16(len(r.Topic)))
		p += 2
	} else {
		b[p] = byte(len(r.Topic))
		p++
	}
	p += copy(b[p:], r.Topic)
	be.PutUint16(b[p:], uint16(len(r.Properties)))
	p += 2
	copy(b[p:], r.Properties)
}

// Layout locates the fields of one record inside a byte slice: the positions
// of the fields after the born host, whose place depends on the host widths,
// and of the variable-length parts.
type Layout struct {
	Total             int   // TOTALSIZE
	SysFlag           int32 // SYSFLAG
	StoreTimestampPos int   // STORETIMESTAMP
	StoreHostPos      int   // STOREHOST
	ReconsumeTimesPos int   // RECONSUMETIMES (PREPARED_TX_OFFSET follows)
	BodyPos           int
	BodyLen           int
	TopicPos          int
	TopicLen          int
	PropertiesPos     int
	PropertiesLen     int
}

// Topic returns the topic of the record rec laid out as l.
func (l *Layout) Topic(rec []byte) string { return string(rec[l.TopicPos : l.TopicPos+l.TopicLen]) }

// Body returns the body of rec (aliasing rec, capacity clipped).
func (l *Layout) Body(rec []byte) []byte {
	return rec[l.BodyPos : l.BodyPos+l.BodyLen : l.BodyPos+l.BodyLen]
}

// Props returns the properties text of rec.
func (l *Layout) Props(rec []byte) Props {
	return Props(rec[l.PropertiesPos : l.PropertiesPos+l.PropertiesLen])
}

// StoreTimestamp returns STORETIMESTAMP of rec.
func (l *Layout) StoreTimestamp(rec []byte) int64 {
	return int64(binary.BigEndian.Uint64(rec[l.StoreTimestampPos:]))
}

// ParseLayout validates the framing of the record at the start of b: magic v1
// or v2, and TOTALSIZE equal to the sum of its parts and within b. It does not
// check the body CRC. Errors wrap ErrCorrupt.
func ParseLayout(b []byte) (Layout, error) {
	var l Layout
	if len(b) < 8 {
		return l, fmt.Errorf("%w: record header truncated (%d bytes)", ErrCorrupt, len(b))
	}
	be := binary.BigEndian
	total := int(int32(be.Uint32(b[PosTotalSize:])))
	magic := be.Uint32(b[PosMagic:])
	if magic != MagicCodeV1 && magic != MagicCodeV2 {
		return l, fmt.Errorf("%w: bad magic code %#x", ErrCorrupt, magic)
	}
	if total < MinRecordLength || total > len(b) {
		return l, fmt.Errorf("%w: record size %d outside [%d, %d]", ErrCorrupt, total, MinRecordLength, len(b))
	}
	b = b[:total]
	l.Total = total
	l.SysFlag = int32(be.Uint32(b[PosSysFlag:]))
	bornLen, storeLen := 8, 8
	if l.SysFlag&SysFlagBornHostV6 != 0 {
		bornLen = 20
	}
	if l.SysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = 20
	}
	l.StoreTimestampPos = PosBornHost + bornLen
	l.StoreHostPos = l.StoreTimestampPos + 8
	l.ReconsumeTimesPos = l.StoreHostPos + storeLen
	p := l.ReconsumeTimesPos + 4 + 8
	if p+4 > total {
		return l, fmt.Errorf("%w: record size %d too small for its hosts", ErrCorrupt, total)
	}
	l.BodyLen = int(int32(be.Uint32(b[p:])))
	l.BodyPos = p + 4
	if l.BodyLen < 0 || l.BodyLen > total-l.BodyPos {
		return l, fmt.Errorf("%w: body length %d exceeds record", ErrCorrupt, l.BodyLen)
	}
	p = l.BodyPos + l.BodyLen
	if magic == MagicCodeV2 {
		if p+2 > total {
			return l, fmt.Errorf("%w: topic length truncated", ErrCorrupt)
		}
		l.TopicLen = int(be.Uint16(b[p:]))
		p += 2
	} else {
		if p+1 > total {
			return l, fmt.Errorf("%w: topic length truncated", ErrCorrupt)
		}
		l.TopicLen = int(b[p])
		p++
	}
	l.TopicPos = p
	p += l.TopicLen
	if p+2 > total {
		return l, fmt.Errorf("%w: topic length %d exceeds record", ErrCorrupt, l.TopicLen)
	}
	l.PropertiesLen = int(int16(be.Uint16(b[p:])))
	l.PropertiesPos = p + 2
	if l.PropertiesLen < 0 || l.PropertiesPos+l.PropertiesLen != total {
		return l, fmt.Errorf("%w: properties length %d does not end the %d-byte record", ErrCorrupt, l.PropertiesLen, total)
	}
	return l, nil
}

// DecodeRecord decodes the record at the start of b (bytes after it are
// ignored). Body aliases b; everything else is copied. The body is returned
// as stored, compressed or not (see InflateBody).
func DecodeRecord(b []byte) (*MessageExt, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return nil, err
	}
	return decodeWithLayout(b, &l), nil
}

// DecodeRecordText decodes the record at the start of b as DecodeRecord does,
// except that it leaves Properties nil and returns the properties text
// instead (a copy): a reader that looks up a few keys (Props.Get gives what
// the map would) or edits the text (EditProperties) does not build the map.
func DecodeRecordText(b []byte) (*MessageExt, Props, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return nil, "", err
	}
	return decodeFields(b, &l), Props(string(l.Props(b))), nil
}

func decodeWithLayout(b []byte, l *Layout) *MessageExt {
	m := decodeFields(b, l)
	m.Properties = ParseProperties(string(l.Props(b)))
	return m
}

// decodeFields decodes every field of the record b laid out as l but its
// properties.
func decodeFields(b []byte, l *Layout) *MessageExt {
	be := binary.BigEndian
	m := &MessageExt{
		Message: Message{
			Topic:                     l.Topic(b),
			QueueID:                   int32(be.Uint32(b[PosQueueID:])),
			Flag:                      int32(be.Uint32(b[PosFlag:])),
			Body:                      l.Body(b),
			SysFlag:                   l.SysFlag,
			BornTimestamp:             int64(be.Uint64(b[PosBornTimestamp:])),
			BornHost:                  readHost(b[PosBornHost:], l.SysFlag&SysFlagBornHostV6 != 0),
			ReconsumeTimes:            int32(be.Uint32(b[l.ReconsumeTimesPos:])),
			PreparedTransactionOffset: int64(be.Uint64(b[l.ReconsumeTimesPos+4:])),
		},
		QueueOffset:    int64(be.Uint64(b[PosQueueOffset:])),
		PhysicalOffset: int64(be.Uint64(b[PosPhysicalOffset:])),
		StoreTimestamp: l.StoreTimestamp(b),
		StoreHost:      readHost(b[l.StoreHostPos:], l.SysFlag&SysFlagStoreHostV6 != 0),
		BodyCRC:        int32(be.Uint32(b[PosBodyCRC:])),
		StoreSize:      int32(l.Total),
	}
	m.MsgID = CreateMessageID(m.StoreHost, m.PhysicalOffset)
	return m
}

// DecodeRecords decodes concatenated records (a pull, query or view body).
// Any malformed record fails the whole call.
func DecodeRecords(b []byte) ([]*MessageExt, error) {
	var out []*MessageExt
	for off := 0; off < len(b); {
		l, err := ParseLayout(b[off:])
		if err != nil {
			return nil, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, decodeWithLayout(b[off:], &l))
		off += l.Total
	}
	return out, nil
}

// EncodeRecord appends the full record of m to dst. BODYCRC is computed from
// m.Body, TOTALSIZE from the fields, and the IPv6 sysFlag bits from the hosts;
// m.BodyCRC, m.StoreSize and m.MsgID are ignored. The caller keeps the record
// limits (properties ≤ MaxPropertiesLength bytes); a topic longer than 127
// bytes is written as a v2 record. m.Properties is marshalled, or
// m.RawProperties used when it is nil.
func EncodeRecord(dst []byte, m *MessageExt) []byte {
	props := m.RawProperties
	if m.Properties != nil {
		props = MarshalProperties(m.Properties)
	}
	r := Record{
		Topic:                     m.Topic,
		Properties:                props,
		Body:                      m.Body,
		BodyCRC:                   BodyCRC(m.Body),
		QueueID:                   m.QueueID,
		Flag:                      m.Flag,
		SysFlag:                   m.SysFlag,
		ReconsumeTimes:            m.ReconsumeTimes,
		QueueOffset:               m.QueueOffset,
		PhysicalOffset:            m.PhysicalOffset,
		BornTimestamp:             m.BornTimestamp,
		StoreTimestamp:            m.StoreTimestamp,
		PreparedTransactionOffset: m.PreparedTransactionOffset,
		BornHost:                  m.BornHost,
		StoreHost:                 m.StoreHost,
	}
	n := r.Size()
	dst = growSlice(dst, n)
	r.Encode(dst[len(dst)-n:])
	return dst
}

// growSlice extends b by n bytes (contents of the new bytes unspecified).
func growSlice(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
