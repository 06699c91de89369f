package message

import (
	"bytes"
	"compress/zlib"
	"io"
)

// InflateBody returns the body a consumer sees (MessageDecoder.decode with
// deCompressBody): when sysFlag marks it compressed with zlib (type bits 0 or
// 0x300) it is inflated; LZ4 and zstd bodies, uncompressed bodies and bodies
// that do not inflate are returned as given, with ok false.
func InflateBody(sysFlag int32, body []byte) (out []byte, ok bool) {
	if sysFlag&SysFlagCompressed == 0 {
		return body, false
	}
	switch sysFlag & SysFlagCompressionMask {
	case 0, CompressionZlib:
	default:
		return body, false
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return body, false
	}
	defer zr.Close()
	inflated, err := io.ReadAll(zr)
	if err != nil {
		return body, false
	}
	return inflated, true
}
