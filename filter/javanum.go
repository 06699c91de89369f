package filter

import (
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/rmqio/rmq/internal/javastr"
)

// The conversions the Java filter applies to property strings: Integer.valueOf,
// Long.valueOf, Double.valueOf and Boolean.valueOf, with exactly the syntax each
// one accepts. None of them allocates.

// javaParseInt is Integer.valueOf(s) (bits 32) or Long.valueOf(s) (bits 64):
// an optional '+' or '-', then one or more decimal digits, nothing else. A
// digit is any BMP character of Unicode category Nd, as Character.digit(ch, 10)
// accepts it ("٤٢" and fullwidth "４２" are 42); a character outside the BMP is
// a surrogate pair in Java and never a digit. No spaces, no '_', no suffix.
func javaParseInt(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	limit := int64(-math.MaxInt64) // accumulate negatively, as Java does
	if bits == 32 {
		limit = -math.MaxInt32
	}
	neg := false
	i := 0
	if s[0] < '0' {
		switch s[0] {
		case '-':
			neg = true
			if bits == 32 {
				limit = math.MinInt32
			} else {
				limit = math.MinInt64
			}
		case '+':
		default:
			return 0, false
		}
		if len(s) == 1 {
			return 0, false
		}
		i = 1
	}
	multmin := limit / 10
	var result int64
	for i < len(s) {
		d, size := javaDigit(s[i:])
		if d < 0 || result < multmin {
			return 0, false
		}
		result *= 10
		if result < limit+int64(d) {
			return 0, false
		}
		result -= int64(d)
		i += size
	}
	if neg {
		return result, true
	}
	return -result, true
}

// javaDigit is Character.digit(ch, 10) for the character at the start of s,
// and its length in bytes; -1 when it is not a decimal digit.
func javaDigit(s string) (int, int) {
	if c := s[0]; c < utf8.RuneSelf {
		if '0' <= c && c <= '9' {
			return int(c - '0'), 1
		}
		return -1, 1
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || r > 0xFFFF {
		return -1, size
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) < rg.Lo {
			break
		}
		if uint16(r) <= rg.Hi {
			// Nd ranges are runs of ten consecutive digits 0..9 (some runs
			// adjoin and share one range entry).
			return int(uint16(r)-rg.Lo) % 10, size
		}
	}
	return -1, size
}

// javaParseDouble is Double.valueOf(s) (FloatingDecimal.readJavaFormatString):
// after String.trim, an optional sign, then "NaN", "Infinity", a hexadecimal
// float "0x1.8p3" (the binary exponent is mandatory), or a decimal "12", "1.",
// ".5", "1e3", "1.5E-3"; a decimal or hexadecimal number may end in one of
// f, F, d, D. Digits are ASCII only. The value is correctly rounded.
func javaParseDouble(s string) (float64, bool) {
	s = javastr.Trim(s)
	if s == "" {
		return 0, false
	}
	i := 0
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	switch s[i] {
	case 'N':
		if s[i:] == "NaN" {
			return math.NaN(), true
		}
		return 0, false
	case 'I':
		if s[i:] == "Infinity" {
			if neg {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		}
		return 0, false
	case '0':
		if i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
			return javaParseHexDouble(s, i+2)
		}
	}
	// Decimal: digits with at most one point, at least one digit.
	digits, points := 0, 0
	for ; i < len(s); i++ {
		c := s[i]
		if '0' <= c && c <= '9' {
			digits++
		} else if c == '.' {
			points++
			if points > 1 {
				return 0, false
			}
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		var ok bool
		if i, ok = exponentEnd(s, i+1); !ok {
			return 0, false
		}
	}
	return parseFloatTail(s, i)
}

// exponentEnd is the end of the exponent [-+]?digit+ that starts at s[i:]
// (just after 'e' or 'p'); false when it has no digit.
func exponentEnd(s string, i int) (int, bool) {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i, i > start
}

// javaParseHexDouble checks the rest of a hexadecimal float from s[i:] (just
// after "0x"): Java's pattern is
// [-+]?0[xX](hex+ "."? | hex* "." hex+)[pP][-+]?digit+[fFdD]?
func javaParseHexDouble(s string, i int) (float64, bool) {
	before, after, point := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if isHexDigit(c) {
			if point {
				after++
			} else {
				before++
			}
		} else if c == '.' && !point {
			point = true
		} else {
			break
		}
	}
	if before+after == 0 {
		return 0, false
	}
	if i == len(s) || (s[i] != 'p' && s[i] != 'P') {
		return 0, false
	}
	i, ok := exponentEnd(s, i+1)
	if !ok {
		return 0, false
	}
	return parseFloatTail(s, i)
}

// parseFloatTail accepts s[i:] when it is empty or one suffix letter, and
// converts s[:i], whose syntax has been checked already.
func parseFloatTail(s string, i int) (float64, bool) {
	if i < len(s) {
		if i != len(s)-1 {
			return 0, false
		}
		switch s[i] {
		case 'f', 'F', 'd', 'D':
		default:
			return 0, false
		}
	}
	// strconv accepts a superset of the syntax checked above; out-of-range
	// values come back as ±Inf or 0 with ErrRange, which is Java's answer too.
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// javaParseBoolean is Boolean.valueOf(s): true exactly when s equals "true"
// ignoring case, false for anything else (it never fails).
func javaParseBoolean(s string) bool {
	if len(s) != 4 {
		return false
	}
	return s[0]|0x20 == 't' && s[1]|0x20 == 'r' && s[2]|0x20 == 'u' && s[3]|0x20 == 'e'
}

// javaCompareDouble is Double.compare: NaN is above +Inf and equal to itself,
// and -0.0 is below 0.0.
func javaCompareDouble(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	ab, bb := doubleToLongBits(a), doubleToLongBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

// doubleToLongBits is Java's Double.doubleToLongBits: every NaN maps to one
// canonical pattern.
func doubleToLongBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}
