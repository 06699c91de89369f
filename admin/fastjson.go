package admin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"rmq/remoting"
)

// errFastJSON reports input NormalizeJSON cannot read.
var errFastJSON = errors.New("admin: malformed JSON")

// NormalizeJSON rewrites fastjson output into standard, compact JSON:
//
//	{0:"a",1:"b"}                         -> {"0":"a","1":"b"}
//	{{"brokerName":"b","queueId":0,...}:v} -> {"{\"brokerName\":\"b\",\"queueId\":0,...}":v}
//
// Bare map keys (Long-keyed maps) are quoted, and object keys (maps keyed by
// MessageQueue) become strings holding the compact key object, which
// ParseMessageQueueKey reads back. Standard JSON passes through unchanged
// apart from insignificant whitespace.
func NormalizeJSON(in []byte) ([]byte, error) {
	p := &jsonNormalizer{in: in, out: make([]byte, 0, len(in)+16)}
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, fmt.Errorf("%w: trailing data at byte %d", errFastJSON, p.pos)
	}
	return p.out, nil
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 256

type jsonNormalizer struct {
	in  []byte
	pos int
	out []byte
}

func (p *jsonNormalizer) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonNormalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format+" at byte %d", append([]any{errFastJSON}, append(args, p.pos)...)...)
}

func (p *jsonNormalizer) value(depth int) error {
	if depth > maxJSONDepth {
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
	case '"':
		return p.str()
	default:
		tok := p.literal()
		if !validLiteral(tok) {
			return p.errorf("unexpected %q", c)
		}
		p.out = append(p.out, tok...)
		return nil
	}
}

// validLiteral accepts true, false, null and numbers in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validLiteral(tok string) bool {
	switch tok {
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

// literal consumes a number, true, false or null.
func (p *jsonNormalizer) literal() string {
	start := p.pos
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ',', ':', '}', ']', ' ', '\t', '\n', '\r', '{', '[', '"':
			return string(p.in[start:p.pos])
		}
		p.pos++
	}
	return string(p.in[start:p.pos])
}

// str reads one string token and writes it re-encoded: escapes are
// resolved (leniently: an unknown escape stands for its character, a lone
// surrogate for U+FFFD) and the text is written back in standard form, so
// raw control characters in the input come out escaped.
func (p *jsonNormalizer) str() error {
	start := p.pos
	p.pos++
	var sb []byte
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch c {
		case '"':
			p.pos++
			p.out = remoting.AppendJSONString(p.out, strings.ToValidUTF8(string(sb), "\uFFFD"))
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

// unicodeEscape reads the XXXX of a \uXXXX escape (and the low half of a
// surrogate pair); malformed or lone halves give U+FFFD.
func (p *jsonNormalizer) unicodeEscape() rune {
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

func (p *jsonNormalizer) array(depth int) error {
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

func (p *jsonNormalizer) object(depth int) error {
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
			p.skipSpace()
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
func (p *jsonNormalizer) key(depth int) error {
	p.skipSpace()
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end in object")
	}
	switch p.in[p.pos] {
	case '"':
		return p.str()
	case '{', '[':
		// Normalize the key value on its own, then quote its compact text.
		saved := p.out
		p.out = nil
		if err := p.value(depth + 1); err != nil {
			return err
		}
		inner := p.out
		p.out = remoting.AppendJSONString(saved, string(inner))
		return nil
	default:
		tok := p.literal()
		if tok == "" {
			return p.errorf("empty object key")
		}
		p.out = remoting.AppendJSONString(p.out, strings.ToValidUTF8(tok, "\uFFFD"))
		return nil
	}
}

// ParseMessageQueueKey reads a MessageQueue map key produced by NormalizeJSON.
func ParseMessageQueueKey(k string) (remoting.MessageQueue, error) {
	var mq remoting.MessageQueue
	if err := remoting.UnmarshalBody([]byte(k), &mq); err != nil {
		return mq, fmt.Errorf("%w: MessageQueue key %q: %v", ErrBadBody, k, err)
	}
	return mq, nil
}

// CompareQueues orders queues as MessageQueue.compareTo does: topic, broker
// name, queue id.
func CompareQueues(a, b remoting.MessageQueue) int {
	switch {
	case a.Topic != b.Topic:
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	case a.BrokerName != b.BrokerName:
		if a.BrokerName < b.BrokerName {
			return -1
		}
		return 1
	default:
		return int(a.QueueID) - int(b.QueueID)
	}
}
