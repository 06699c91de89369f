package message

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// Issue 42 audit: DecodeBatchBody allocates nothing by a declared length
// (each length is checked against the bytes left first) and does not
// recurse; the broker caps the body at maxMessageSize before decoding. A
// 4 MiB body of minimal entries decodes entry by entry, and declared lengths
// past the body are refused.
func TestDecodeBatchBodyHostile(t *testing.T) {
	entry := func(total, bodyLen int32, props string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(total))
		b = append(b, make([]byte, 12)...)
		b = binary.BigEndian.AppendUint32(b, uint32(bodyLen))
		if bodyLen > 0 && bodyLen <= 64 { // a hostile length is only declared
			b = append(b, make([]byte, bodyLen)...)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(props)))
		return append(b, props...)
	}
	min := entry(22, 0, "")
	n := (4 << 20) / len(min)
	all := []byte(strings.Repeat(string(min), n))
	es, err := DecodeBatchBody(all)
	if err != nil || len(es) != n {
		t.Fatalf("%d minimal entries: %d, %v", n, len(es), err)
	}
	for name, body := range map[string][]byte{
		"total past the body":     entry(0x7fffffff, 0, ""),
		"negative total":          entry(-1, 0, ""),
		"body length past entry":  entry(22, 0x7fffffff, "")[:22],
		"negative body length":    entry(22, -1, "")[:22],
		"properties past entry":   append(entry(22, 0, "")[:20], 0x7f, 0xff),
		"entry cut after a valid": append(append([]byte{}, min...), min[:10]...),
	} {
		if _, err := DecodeBatchBody(body); !errors.Is(err, ErrBadBatchBody) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
