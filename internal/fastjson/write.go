package fastjson

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal. Control characters (the
// \x01/\x02 property separators among them) are written as \u00XX, or \n, \r
// and \t, and invalid UTF-8 as \ufffd, one per bad byte, as encoding/json
// writes it, so any standard parser and fastjson read the result. Unlike
// encoding/json it leaves <, > and & alone, as fastjson does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				switch c {
				case '\n':
					dst = append(dst, '\\', 'n')
				case '\r':
					dst = append(dst, '\\', 'r')
				case '\t':
					dst = append(dst, '\\', 't')
				default:
					dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				}
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// AppendDouble appends f as fastjson writes a Java double: Double.toString's
// form, so always with a fraction or an exponent ("0.0", "12.5", "1.0E7",
// "1.0E-4"), and null for NaN and the infinities. Digits are the shortest
// that read back as f.
func AppendDouble(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if abs := math.Abs(f); abs == 0 || (abs >= 1e-3 && abs < 1e7) {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		for _, c := range dst[start:] {
			if c == '.' {
				return dst
			}
		}
		return append(dst, ".0"...)
	}
	// Computerized scientific notation: one digit before the point, at least
	// one after, and an exponent without '+' or leading zeros.
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'E', -1, 64) // e.g. -1.5E+07, 1E-05
	e := 0
	for s[e] != 'E' {
		e++
	}
	mant, exp := s[:e], s[e+1:]
	dst = append(dst, mant...)
	hasPoint := false
	for _, c := range mant {
		if c == '.' {
			hasPoint = true
		}
	}
	if !hasPoint {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}

// AppendIntKey appends an Integer/Long map key. fastjson's default writes it
// bare ({0:"a"}); with quoted (BrowserCompatible, WriteNonStringKeyAsString)
// it is a string ({"0":"a"}). The caller writes the ':' and the value.
func AppendIntKey(dst []byte, k int64, quoted bool) []byte {
	if !quoted {
		return strconv.AppendInt(dst, k, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, k, 10)
	return append(dst, '"')
}

// AppendMessageQueue appends a Java MessageQueue as fastjson writes it,
// fields in alphabetical order:
//
//	{"brokerName":"b","queueId":0,"topic":"T"}
//
// The same text is what fastjson writes for a MessageQueue map key
// (ConsumeStats, TopicStatsTable, ResetOffsetBody offset tables), bare in
// key position; the caller writes the ':' and the value.
func AppendMessageQueue(dst []byte, brokerName string, queueID int32, topic string) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = AppendString(dst, brokerName)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = AppendString(dst, topic)
	return append(dst, '}')
}
