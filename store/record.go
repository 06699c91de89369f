package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Magic codes of commitlog records.
const (
	MagicCodeV1    uint32 = 0xDAA320A7 // -626843481: message record, int8 topic length
	MagicCodeV2    uint32 = 0xDAA320AB // -626843477: 5.x record, int16 topic length (read only)
	BlankMagicCode uint32 = 0xCBD43194 // -875286124: end-of-file filler
)

// SysFlag bits (MessageSysFlag).
const (
	SysFlagCompressed       int32 = 0x1
	SysFlagMultiTags        int32 = 0x2
	TransactionNotType      int32 = 0x0
	TransactionPreparedType int32 = 0x4
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
	SysFlagBornHostV6       int32 = 0x10
	SysFlagStoreHostV6      int32 = 0x20
)

// TransactionType extracts the transaction bits (one of the Transaction*Type values).
func TransactionType(sysFlag int32) int32 { return sysFlag & TransactionRollbackType }

// MaxTopicLength is the longest topic (in bytes) a v1 record can hold.
const MaxTopicLength = 127

// blankRecordLength is the END_FILE_MIN_BLANK_LENGTH: a file always keeps room
// for the 8-byte BLANK header (TOTALSIZE + BLANK magic) after its last record.
const blankRecordLength = 8

// Fixed record offsets that do not depend on host widths.
const (
	offTotalSize   = 0
	offMagic       = 4
	offBodyCRC     = 8
	offQueueID     = 12
	offFlag        = 16
	offQueueOffset = 20
	offPhyOffset   = 28
	offSysFlag     = 36
	offBornTS      = 40
	offBornHost    = 48
)

// minRecordLength is the smallest v1 record: IPv4 hosts, empty body/topic/properties.
const minRecordLength = 91

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
	// like Java's WAIT=false property (a Properties["WAIT"] of "false" does the same).
	SkipFlushWait bool
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

// hostLen is the encoded width of a host: IP bytes + int32 port.
func hostLen(h netip.AddrPort) int {
	if hostIsV6(h) {
		return 20
	}
	return 8
}

func hostIsV6(h netip.AddrPort) bool {
	a := h.Addr()
	return a.Is6() && !a.Is4In6()
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

// recordFields is everything a record holds, with properties already encoded.
type recordFields struct {
	topic          string
	props          string
	body           []byte
	bodyCRC        int32
	queueID        int32
	flag           int32
	sysFlag        int32
	reconsumeTimes int32
	queueOffset    int64
	phyOffset      int64
	bornTimestamp  int64
	storeTimestamp int64
	preparedTxOff  int64
	bornHost       netip.AddrPort
	storeHost      netip.AddrPort
}

// size is the TOTALSIZE of the encoded record.
func (f *recordFields) size() int {
	topicLenSize := 1
	if len(f.topic) > MaxTopicLength {
		topicLenSize = 2
	}
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(f.bornHost) + 8 + hostLen(f.storeHost) + 4 + 8 +
		4 + len(f.body) + topicLenSize + len(f.topic) + 2 + len(f.props)
}

// encode writes the record into b, which must be exactly f.size() bytes. The
// IPv6 sysFlag bits are set from the hosts actually written. Topics longer than
// 127 bytes get the v2 magic and an int16 topic length (as 5.x brokers do).
func (f *recordFields) encode(b []byte) {
	be := binary.BigEndian
	be.PutUint32(b[offTotalSize:], uint32(len(b)))
	magic := MagicCodeV1
	if len(f.topic) > MaxTopicLength {
		magic = MagicCodeV2
	}
	be.PutUint32(b[offMagic:], magic)
	be.PutUint32(b[offBodyCRC:], uint32(f.bodyCRC))
	be.PutUint32(b[offQueueID:], uint32(f.queueID))
	be.PutUint32(b[offFlag:], uint32(f.flag))
	be.PutUint64(b[offQueueOffset:], uint64(f.queueOffset))
	be.PutUint64(b[offPhyOffset:], uint64(f.phyOffset))
	sys := f.sysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if hostIsV6(f.bornHost) {
		sys |= SysFlagBornHostV6
	}
	if hostIsV6(f.storeHost) {
		sys |= SysFlagStoreHostV6
	}
	be.PutUint32(b[offSysFlag:], uint32(sys))
	be.PutUint64(b[offBornTS:], uint64(f.bornTimestamp))
	p := offBornHost
	p += putHost(b[p:], f.bornHost)
	be.PutUint64(b[p:], uint64(f.storeTimestamp))
	p += 8
	p += putHost(b[p:], f.storeHost)
	be.PutUint32(b[p:], uint32(f.reconsumeTimes))
	p += 4
	be.PutUint64(b[p:], uint64(f.preparedTxOff))
	p += 8
	be.PutUint32(b[p:], uint32(len(f.body)))
	p += 4
	p += copy(b[p:], f.body)
	if magic == MagicCodeV2 {
		be.PutUint16(b[p:], uint16(len(f.topic)))
		p += 2
	} else {
		b[p] = byte(len(f.topic))
		p++
	}
	p += copy(b[p:], f.topic)
	be.PutUint16(b[p:], uint16(len(f.props)))
	p += 2
	copy(b[p:], f.props)
}

// recordLayout locates the fields of one record inside a byte slice.
type recordLayout struct {
	total     int
	sysFlag   int32
	storeTS   int // offset of STORETIMESTAMP
	storeHost int // offset of STOREHOST
	reconsume int // offset of RECONSUMETIMES
	bodyOff   int
	bodyLen   int
	topicOff  int
	topicLen  int
	propsOff  int
	propsLen  int
}

// parseLayout validates the framing of the record at the start of b: magic v1
// or v2, and TOTALSIZE equal to the sum of its parts and within b. It does not
// check the body CRC.
func parseLayout(b []byte) (recordLayout, error) {
	var l recordLayout
	if len(b) < 8 {
		return l, fmt.Errorf("%w: record header truncated (%d bytes)", ErrCorrupt, len(b))
	}
	be := binary.BigEndian
	total := int(int32(be.Uint32(b[offTotalSize:])))
	magic := be.Uint32(b[offMagic:])
	if magic != MagicCodeV1 && magic != MagicCodeV2 {
		return l, fmt.Errorf("%w: bad magic code %#x", ErrCorrupt, magic)
	}
	if total < minRecordLength || total > len(b) {
		return l, fmt.Errorf("%w: record size %d outside [%d, %d]", ErrCorrupt, total, minRecordLength, len(b))
	}
	b = b[:total]
	l.total = total
	l.sysFlag = int32(be.Uint32(b[offSysFlag:]))
	bornLen, storeLen := 8, 8
	if l.sysFlag&SysFlagBornHostV6 != 0 {
		bornLen = 20
	}
	if l.sysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = 20
	}
	l.storeTS = offBornHost + bornLen
	l.storeHost = l.storeTS + 8
	l.reconsume = l.storeHost + storeLen
	p := l.reconsume + 4 + 8
	if p+4 > total {
		return l, fmt.Errorf("%w: record size %d too small for its hosts", ErrCorrupt, total)
	}
	l.bodyLen = int(int32(be.Uint32(b[p:])))
	l.bodyOff = p + 4
	if l.bodyLen < 0 || l.bodyLen > total-l.bodyOff {
		return l, fmt.Errorf("%w: body length %d exceeds record", ErrCorrupt, l.bodyLen)
	}
	p = l.bodyOff + l.bodyLen
	if magic == MagicCodeV2 {
		if p+2 > total {
			return l, fmt.Errorf("%w: topic length truncated", ErrCorrupt)
		}
		l.topicLen = int(be.Uint16(b[p:]))
		p += 2
	} else {
		if p+1 > total {
			return l, fmt.Errorf("%w: topic length truncated", ErrCorrupt)
		}
		l.topicLen = int(b[p])
		p++
	}
	l.topicOff = p
	p += l.topicLen
	if p+2 > total {
		return l, fmt.Errorf("%w: topic length %d exceeds record", ErrCorrupt, l.topicLen)
	}
	l.propsLen = int(int16(be.Uint16(b[p:])))
	l.propsOff = p + 2
	if l.propsLen < 0 || l.propsOff+l.propsLen != total {
		return l, fmt.Errorf("%w: properties length %d does not end the %d-byte record", ErrCorrupt, l.propsLen, total)
	}
	return l, nil
}

// DecodeRecord decodes the record at the start of b (bytes after it are
// ignored). Body aliases b; everything else is copied.
func DecodeRecord(b []byte) (*MessageExt, error) {
	l, err := parseLayout(b)
	if err != nil {
		return nil, err
	}
	return decodeWithLayout(b, &l), nil
}

func decodeWithLayout(b []byte, l *recordLayout) *MessageExt {
	be := binary.BigEndian
	m := &MessageExt{
		Message: Message{
			Topic:                     string(b[l.topicOff : l.topicOff+l.topicLen]),
			QueueID:                   int32(be.Uint32(b[offQueueID:])),
			Flag:                      int32(be.Uint32(b[offFlag:])),
			Body:                      b[l.bodyOff : l.bodyOff+l.bodyLen : l.bodyOff+l.bodyLen],
			Properties:                ParseProperties(string(b[l.propsOff : l.propsOff+l.propsLen])),
			SysFlag:                   l.sysFlag,
			BornTimestamp:             int64(be.Uint64(b[offBornTS:])),
			BornHost:                  readHost(b[offBornHost:], l.sysFlag&SysFlagBornHostV6 != 0),
			ReconsumeTimes:            int32(be.Uint32(b[l.reconsume:])),
			PreparedTransactionOffset: int64(be.Uint64(b[l.reconsume+4:])),
		},
		QueueOffset:    int64(be.Uint64(b[offQueueOffset:])),
		PhysicalOffset: int64(be.Uint64(b[offPhyOffset:])),
		StoreTimestamp: int64(be.Uint64(b[l.storeTS:])),
		StoreHost:      readHost(b[l.storeHost:], l.sysFlag&SysFlagStoreHostV6 != 0),
		BodyCRC:        int32(be.Uint32(b[offBodyCRC:])),
		StoreSize:      int32(l.total),
	}
	m.MsgID = CreateMessageID(m.StoreHost, m.PhysicalOffset)
	return m
}

// DecodeRecords decodes concatenated records (a pull, query or view body).
// Any malformed record fails the whole call.
func DecodeRecords(b []byte) ([]*MessageExt, error) {
	var out []*MessageExt
	for off := 0; off < len(b); {
		l, err := parseLayout(b[off:])
		if err != nil {
			return nil, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, decodeWithLayout(b[off:], &l))
		off += l.total
	}
	return out, nil
}

// EncodeRecord appends the full record of m to dst. BODYCRC is computed from
// m.Body, TOTALSIZE from the fields, and the IPv6 sysFlag bits from the hosts;
// m.BodyCRC, m.StoreSize and m.MsgID are ignored. The caller keeps the record
// limits (properties ≤ 32767 bytes); a topic longer than 127 bytes is written
// as a v2 record.
func EncodeRecord(dst []byte, m *MessageExt) []byte {
	f := recordFields{
		topic:          m.Topic,
		props:          MarshalProperties(m.Properties),
		body:           m.Body,
		bodyCRC:        BodyCRC(m.Body),
		queueID:        m.QueueID,
		flag:           m.Flag,
		sysFlag:        m.SysFlag,
		reconsumeTimes: m.ReconsumeTimes,
		queueOffset:    m.QueueOffset,
		phyOffset:      m.PhysicalOffset,
		bornTimestamp:  m.BornTimestamp,
		storeTimestamp: m.StoreTimestamp,
		preparedTxOff:  m.PreparedTransactionOffset,
		bornHost:       m.BornHost,
		storeHost:      m.StoreHost,
	}
	n := f.size()
	dst = growSlice(dst, n)
	f.encode(dst[len(dst)-n:])
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
