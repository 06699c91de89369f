package message

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// CreateMessageID builds the server message id ("offsetMsgId"): upper-case hex
// of the store host IP (4 or 16 bytes), its port as int32 and the commitlog
// offset as int64 — 32 characters for IPv4, 56 for IPv6
// (MessageDecoder.createMessageId). An invalid host is written as 0.0.0.0:0.
func CreateMessageID(host netip.AddrPort, phyOffset int64) string {
	var b [28]byte
	n := putHost(b[:], host)
	binary.BigEndian.PutUint64(b[n:], uint64(phyOffset))
	n += 8
	const digits = "0123456789ABCDEF"
	var out [56]byte
	for i, c := range b[:n] {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out[:2*n])
}

// DecodeMessageID parses an id made by CreateMessageID, case-insensitively
// (MessageDecoder.decodeMessageId). Anything else, a client id (UNIQ_KEY)
// included, is ErrBadMessageID.
func DecodeMessageID(id string) (netip.AddrPort, int64, error) {
	var ipLen int
	switch len(id) {
	case 32:
		ipLen = 4
	case 56:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: message id %q has length %d, want 32 or 56", ErrBadMessageID, id, len(id))
	}
	var b [28]byte
	if _, err := hex.Decode(b[:len(id)/2], []byte(id)); err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: message id %q: %v", ErrBadMessageID, id, err)
	}
	var addr netip.Addr
	if ipLen == 4 {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(b[:16]))
	}
	port := binary.BigEndian.Uint32(b[ipLen:])
	if port > 0xFFFF {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: message id %q: port %d out of range", ErrBadMessageID, id, port)
	}
	off := int64(binary.BigEndian.Uint64(b[ipLen+4:]))
	return netip.AddrPortFrom(addr, uint16(port)), off, nil
}
