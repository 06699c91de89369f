package message

import (
	"encoding/binary"
	"fmt"
)

// BatchEntry is one message of a SEND_BATCH_MESSAGE body.
type BatchEntry struct {
	Flag       int32
	Body       []byte // aliases the batch body
	Properties map[string]string
}

// batchEntryOverhead is TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY length and
// PROPERTIES length.
const batchEntryOverhead = 4 + 4 + 4 + 4 + 4 + 2

// DecodeBatchBody splits a SEND_BATCH_MESSAGE body: concatenated entries of
// TOTALSIZE(int32) MAGICCODE(int32, ignored) BODYCRC(int32, ignored) FLAG(int32)
// BODY(int32 length + bytes) PROPERTIES(int16 length + bytes). TOTALSIZE must
// equal 22 + body + properties; an empty body, a truncated entry or any
// inconsistent length is an error.
func DecodeBatchBody(body []byte) ([]BatchEntry, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty batch body", ErrBadBatchBody)
	}
	be := binary.BigEndian
	var out []BatchEntry
	for off := 0; off < len(body); {
		rest := body[off:]
		if len(rest) < batchEntryOverhead {
			return nil, fmt.Errorf("%w: entry at byte %d truncated (%d bytes left)", ErrBadBatchBody, off, len(rest))
		}
		total := int(int32(be.Uint32(rest)))
		if total < batchEntryOverhead || total > len(rest) {
			return nil, fmt.Errorf("%w: entry at byte %d: size %d outside [%d, %d]", ErrBadBatchBody, off, total, batchEntryOverhead, len(rest))
		}
		e := rest[:total]
		flag := int32(be.Uint32(e[12:]))
		bodyLen := int(int32(be.Uint32(e[16:])))
		if bodyLen < 0 || 20+bodyLen+2 > total {
			return nil, fmt.Errorf("%w: entry at byte %d: body length %d exceeds entry size %d", ErrBadBatchBody, off, bodyLen, total)
		}
		p := 20 + bodyLen
		propsLen := int(int16(be.Uint16(e[p:])))
		if propsLen < 0 || p+2+propsLen != total {
			return nil, fmt.Errorf("%w: entry at byte %d: properties length %d does not end the %d-byte entry", ErrBadBatchBody, off, propsLen, total)
		}
		out = append(out, BatchEntry{
			Flag:       flag,
			Body:       e[20:p:p],
			Properties: ParseProperties(string(e[p+2 : total])),
		})
		off += total
	}
	return out, nil
}
