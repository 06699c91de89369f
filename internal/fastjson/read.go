package fastjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is returned (wrapped, with the byte offset) for text that is
// neither JSON nor fastjson's relaxed form of it.
var ErrSyntax = errors.New("fastjson: malformed JSON")

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 256

// Normalize rewrites fastjson text into standard, compact JSON that
// encoding/json and json-iterator decode:
//
//	{0:"a",-1:"b"}                            -> {"0":"a","-1":"b"}
//	{{"brokerName":"b","queueId":0,...}:v}     -> {"{\"brokerName\":\"b\",\"queueId\":0,...}":v}
//	{topic:'T'}                               -> {"topic":"T"}
//
// Bare keys (numbers, identifiers) are quoted; an object or array key
// becomes a string holding its own normalized compact text, which
// Entries decodes back; single-quoted strings become double-quoted.
// Strings are re-encoded by AppendString: escapes are resolved (leniently:
// an unknown escape stands for its character, a lone surrogate and invalid
// UTF-8 for U+FFFD). Standard JSON passes through unchanged apart from
// insignificant whitespace and string escaping, and Normalize of its own
// output is the identity.
func Normalize(in []byte) ([]byte, error) {
	p := &normalizer{in: in, out: make([]byte, 0, len(in)+16)}
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.errorf("trailing data")
	}
	return p.out, nil
}

// Unmarshal decodes fastjson text into v with encoding/json. Standard JSON
// is decoded as is; anything else is normalized first.
func Unmarshal(in []byte, v any) error {
	if !json.Valid(in) {
		norm, err := Normalize(in)
		if err != nil {
			return err
		}
		in = norm
	}
	return json.Unmarshal(in, v)
}

type normalizer struct {
	in  []byte
	pos int
	out []byte
}

func (p *normalizer) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *normalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d", ErrSyntax, fmt.Sprintf(format, args...), p.pos)
}

func (p *normalizer) value(depth int) error {
	if depth > maxDepth {
		return p.errorf("nesting too deep")
	}
	p.skipSpace()
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end")
	}
	switch c := p.in[p.pos]; c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"', '\'':
		return p.str()
	default:
		tok := p.token()
		if !validLiteral(tok) {
			return p.errorf("unexpected %q", c)
		}
		p.out = append(p.out, tok...)
		return nil
	}
}

// validLiteral accepts true, false, null and numbers in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validLiteral(tok []byte) bool {
	switch string(tok) {
	case "true", "false", "null":
		return true
	}
	i := 0
	digits := func() int {
		n := 0
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	switch {
	case i < len(tok) && tok[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(tok)
}

// token consumes an unquoted run: a number, true, false, null, or a bare key.
func (p *normalizer) token() []byte {
	start := p.pos
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ',', ':', '}', ']', ' ', '\t', '\n', '\r', '{', '[', '"', '\'':
			return p.in[start:p.pos]
		}
		p.pos++
	}
	return p.in[start:p.pos]
}

// str reads one string token, quoted with " or ', and writes it re-encoded
// by AppendString.
func (p *normalizer) str() error {
	start := p.pos
	quote := p.in[p.pos]
	p.pos++
	var sb []byte
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch c {
		case quote:
			p.pos++
			p.out = AppendString(p.out, validUTF8(sb))
			return nil
		case '\\':
			if p.pos+1 >= len(p.in) {
				p.pos = start
				return p.errorf("unterminated string")
			}
			e := p.in[p.pos+1]
			p.pos += 2
			switch e {
			case 'b':
				sb = append(sb, '\b')
			case 'f':
				sb = append(sb, '\f')
			case 'n':
				sb = append(sb, '\n')
			case 'r':
				sb = append(sb, '\r')
			case 't':
				sb = append(sb, '\t')
			case 'u':
				sb = utf8.AppendRune(sb, p.unicodeEscape())
			default:
				sb = append(sb, e)
			}
		default:
			sb = append(sb, c)
			p.pos++
		}
	}
	p.pos = start
	return p.errorf("unterminated string")
}

// validUTF8 is b with each byte that is not part of valid UTF-8 replaced by
// U+FFFD, as encoding/json reads it; written as the character itself, it
// reads back the same, which keeps Normalize idempotent.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// unicodeEscape reads the XXXX of a \uXXXX escape (and the low half of a
// surrogate pair); malformed or lone halves give U+FFFD.
func (p *normalizer) unicodeEscape() rune {
	hex4 := func() (rune, bool) {
		if p.pos+4 > len(p.in) {
			return 0, false
		}
		n, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 16)
		if err != nil {
			return 0, false
		}
		p.pos += 4
		return rune(n), true
	}
	r, ok := hex4()
	if !ok {
		return utf8.RuneError
	}
	if !utf16.IsSurrogate(r) {
		return r
	}
	if p.pos+2 <= len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
		save := p.pos
		p.pos += 2
		if r2, ok := hex4(); ok {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return dec
			}
		}
		p.pos = save
	}
	return utf8.RuneError
}

func (p *normalizer) array(depth int) error {
	p.pos++
	p.out = append(p.out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	for {
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			return nil
		default:
			return p.errorf("want , or ] in array")
		}
	}
}

func (p *normalizer) object(depth int) error {
	p.pos++
	p.out = append(p.out, '{')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		return nil
	}
	for {
		if err := p.key(depth); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.errorf("want : after object key")
		}
		p.pos++
		p.out = append(p.out, ':')
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case '}':
			p.pos++
			p.out = append(p.out, '}')
			return nil
		default:
			return p.errorf("want , or } in object")
		}
	}
}

// key writes one object key as a JSON string.
func (p *normalizer) key(depth int) error {
	p.skipSpace()
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end in object")
	}
	switch p.in[p.pos] {
	case '"', '\'':
		return p.str()
	case '{', '[':
		// Normalize the key value on its own, then quote its compact text.
		saved := p.out
		p.out = nil
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.out = AppendString(saved, string(p.out))
		return nil
	default:
		tok := p.token()
		if len(tok) == 0 {
			return p.errorf("empty object key")
		}
		p.out = AppendString(p.out, validUTF8(tok))
		return nil
	}
}
