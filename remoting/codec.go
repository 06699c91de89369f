package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"

	"github.com/rmqio/rmq/internal/fastjson"
)

// MaxFrameSize is the largest frame accepted, length prefix included
// (com.rocketmq.remoting.frameMaxLength, 16 MiB).
const MaxFrameSize = 16 << 20

// Sentinel errors of the frame codec. Any of them means the peer sent a broken
// frame; the server closes the connection as the Java NettyDecoder does.
var (
	ErrFrameTooLarge    = errors.New("remoting: frame exceeds 16 MiB")
	ErrFrameTooShort    = errors.New("remoting: frame shorter than its header")
	ErrBadHeaderLength  = errors.New("remoting: header length exceeds frame")
	ErrBadSerializeType = errors.New("remoting: unknown serialize type")
	ErrBadHeader        = errors.New("remoting: malformed header")
)

var json = jsoniter.ConfigCompatibleWithStandardLibrary

// FrameLength validates the 4-byte length prefix of a frame and returns the
// number of bytes that follow it.
func FrameLength(prefix []byte) (int, error) {
	n := int(int32(binary.BigEndian.Uint32(prefix)))
	if n < 4 {
		return 0, ErrFrameTooShort
	}
	if n+4 > MaxFrameSize {
		return 0, ErrFrameTooLarge
	}
	return n, nil
}

// DecodeFrame decodes the bytes after the length prefix. The body is copied, so
// the result does not alias frame.
func DecodeFrame(frame []byte) (*Command, error) { return decodeFrame(frame, nil, false) }

// decodeFrame is DecodeFrame; a binary header whose code rawExt accepts
// keeps its extFields area unparsed (checked, but not split into a map).
// With own, frame is the caller's to give away: the body is a slice of it
// rather than a copy.
func decodeFrame(frame []byte, rawExt func(code int32) bool, own bool) (*Command, error) {
	cmd, at, err := decodeHeader(frame, rawExt)
	if err != nil {
		return nil, err
	}
	if body := frame[at:]; len(body) > 0 && own {
		cmd.Body = body
	} else if len(body) > 0 {
		cmd.Body = append([]byte(nil), body...)
	}
	return cmd, nil
}

// headerEnd returns where the body of frame (the bytes after the length
// prefix, or the first of them) starts, once they hold the header length
// word; ok is false while they do not.
func headerEnd(frame []byte) (at int, ok bool) {
	if len(frame) < 4 {
		return 0, false
	}
	return 4 + int(binary.BigEndian.Uint32(frame)&0xFFFFFF), true
}

// decodeHeader decodes the header of frame (decodeFrame) and returns the
// command without its body, and where the body starts in frame.
func decodeHeader(frame []byte, rawExt func(code int32) bool) (*Command, int, error) {
	if len(frame) < 4 {
		return nil, 0, ErrFrameTooShort
	}
	word := binary.BigEndian.Uint32(frame)
	st := byte(word >> 24)
	hl := int(word & 0xFFFFFF)
	if hl > len(frame)-4 {
		return nil, 0, ErrBadHeaderLength
	}
	header := frame[4 : 4+hl]
	var cmd *Command
	var err error
	switch st {
	case SerializeJSON:
		cmd, err = decodeJSONHeader(header)
	case SerializeRocketMQ:
		cmd, err = decodeBinaryHeader(header, rawExt)
	default:
		return nil, 0, fmt.Errorf("%w: %d", ErrBadSerializeType, st)
	}
	if err != nil {
		return nil, 0, err
	}
	cmd.SerializeType = st
	return cmd, 4 + hl, nil
}

type jsonHeader struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    *string           `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

func decodeJSONHeader(b []byte) (*Command, error) {
	var h jsonHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	cmd := &Command{Code: h.Code, Language: validUTF8(h.Language), Version: h.Version, Opaque: h.Opaque, Flag: h.Flag, ExtFields: h.ExtFields}
	if h.Remark != nil {
		cmd.Remark = validUTF8(*h.Remark)
	}
	for k, v := range h.ExtFields {
		if utf8.ValidString(k) && utf8.ValidString(v) {
			continue
		}
		// Rebuild only when needed: the common header is all valid UTF-8.
		clean := make(map[string]string, len(h.ExtFields))
		for k, v := range h.ExtFields {
			clean[validUTF8(k)] = validUTF8(v)
		}
		cmd.ExtFields = clean
		break
	}
	return cmd, nil
}

// validUTF8 replaces every byte that is not part of a valid UTF-8 sequence by
// U+FFFD. The JSON parser passes such bytes through raw; Java's decoder and
// encoding/json replace them, and fastjson.AppendString writes them as \ufffd, so
// replacing them here makes a decoded JSON header re-encode to itself.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

func decodeBinaryHeader(b []byte, rawExt func(code int32) bool) (*Command, error) {
	if len(b) < 21 {
		return nil, fmt.Errorf("%w: binary header of %d bytes", ErrBadHeader, len(b))
	}
	cmd := &Command{
		Code:     int32(int16(binary.BigEndian.Uint16(b[0:]))),
		Language: LanguageName(b[2]),
		Version:  int32(int16(binary.BigEndian.Uint16(b[3:]))),
		Opaque:   int32(binary.BigEndian.Uint32(b[5:])),
		Flag:     int32(binary.BigEndian.Uint32(b[9:])),
	}
	p := 13
	rl := int(int32(binary.BigEndian.Uint32(b[p:])))
	p += 4
	if rl < 0 || rl > len(b)-p {
		return nil, fmt.Errorf("%w: remark length %d", ErrBadHeader, rl)
	}
	cmd.Remark = string(b[p : p+rl])
	p += rl
	if len(b)-p < 4 {
		return nil, fmt.Errorf("%w: missing extFields length", ErrBadHeader)
	}
	el := int(int32(binary.BigEndian.Uint32(b[p:])))
	p += 4
	if el < 0 || el > len(b)-p {
		return nil, fmt.Errorf("%w: extFields length %d", ErrBadHeader, el)
	}
	ext := b[p : p+el]
	if err := checkBinaryFields(ext); err != nil {
		return nil, err
	}
	if el == 0 {
		return cmd, nil
	}
	// Keys and values are substrings of one copy of the whole area: one
	// allocation per header instead of two per field.
	all := string(ext)
	if rawExt != nil && rawExt(cmd.Code) {
		cmd.rawExt, cmd.hasRawExt = all, true
		return cmd, nil
	}
	cmd.ExtFields = make(map[string]string, countBinaryFields(all))
	eachBinaryField(all, func(k, v string) { cmd.ExtFields[k] = v })
	return cmd, nil
}

// checkBinaryFields checks that a binary extFields area is a whole number of
// well-formed pairs.
func checkBinaryFields(ext []byte) error {
	for q := 0; q < len(ext); {
		if len(ext)-q < 2 {
			return fmt.Errorf("%w: truncated key length", ErrBadHeader)
		}
		kl := int(int16(binary.BigEndian.Uint16(ext[q:])))
		q += 2
		if kl < 0 || kl > len(ext)-q {
			return fmt.Errorf("%w: key length %d", ErrBadHeader, kl)
		}
		q += kl
		if len(ext)-q < 4 {
			return fmt.Errorf("%w: truncated value length", ErrBadHeader)
		}
		vl := int(int32(binary.BigEndian.Uint32(ext[q:])))
		q += 4
		if vl < 0 || vl > len(ext)-q {
			return fmt.Errorf("%w: value length %d", ErrBadHeader, vl)
		}
		q += vl
	}
	return nil
}

// eachBinaryField calls fn for every pair of an area checkBinaryFields
// accepted; key and value are substrings of all.
func eachBinaryField(all string, fn func(k, v string)) {
	for q := 0; q < len(all); {
		kl := int(all[q])<<8 | int(all[q+1])
		q += 2
		k := all[q : q+kl]
		q += kl
		vl := int(all[q])<<24 | int(all[q+1])<<16 | int(all[q+2])<<8 | int(all[q+3])
		q += 4
		fn(k, all[q:q+vl])
		q += vl
	}
}

// countBinaryFields counts the key/value pairs of a well-formed binary
// extFields area, to size a map once.
func countBinaryFields(all string) int {
	n := 0
	for q := 0; q < len(all); n++ {
		kl := int(all[q])<<8 | int(all[q+1])
		q += 2 + kl
		vl := int(all[q])<<24 | int(all[q+1])<<16 | int(all[q+2])<<8 | int(all[q+3])
		q += 4 + vl
	}
	return n
}

// AppendFrame appends the whole frame (length prefix included) for cmd, in
// cmd.SerializeType.
func AppendFrame(dst []byte, cmd *Command) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	if cmd.SerializeType == SerializeRocketMQ {
		dst = appendBinaryHeader(dst, cmd)
	} else {
		dst = appendJSONHeader(dst, cmd)
	}
	hl := len(dst) - start - 8
	dst = append(dst, cmd.Body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(cmd.SerializeType)<<24|uint32(hl)&0xFFFFFF)
	return dst
}

// EncodeFrame returns the whole frame for cmd.
func EncodeFrame(cmd *Command) []byte {
	return AppendFrame(make([]byte, 0, 256+len(cmd.Body)), cmd)
}

func appendBinaryHeader(dst []byte, cmd *Command) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(cmd.Code))
	dst = append(dst, LanguageCode(wireLanguage(cmd.Language)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(cmd.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(cmd.Remark)))
	dst = append(dst, cmd.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for k, v := range cmd.Ext() {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// appendJSONHeader writes the compact JSON header the way fastjson does:
// alphabetical keys, string-only extFields, no whitespace.
func appendJSONHeader(dst []byte, cmd *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Code), 10)
	if ext := cmd.Ext(); ext != nil {
		dst = append(dst, `,"extFields":{`...)
		first := true
		for k, v := range ext {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = fastjson.AppendString(dst, k)
			dst = append(dst, ':')
			dst = fastjson.AppendString(dst, v)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Flag), 10)
	dst = append(dst, `,"language":`...)
	dst = fastjson.AppendString(dst, wireLanguage(cmd.Language))
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Opaque), 10)
	if cmd.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = fastjson.AppendString(dst, cmd.Remark)
	}
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Version), 10)
	return append(dst, '}')
}

// wireLanguage is the language written for cmd: commands built without one
// are ours, so both header types say GO.
func wireLanguage(lang string) string {
	if lang == "" {
		return "GO"
	}
	return lang
}
