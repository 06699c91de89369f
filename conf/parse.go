package conf

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// entry is one key/value pair of a properties file and the line its logical
// line starts on.
type entry struct {
	key, value string
	line       int
}

// parse splits a properties stream into entries in file order. name is only
// used in error messages.
func parse(r io.Reader, name string) ([]entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var (
		out     []entry
		logical strings.Builder
		start   int // line the current logical line started on; 0 = none open
		lineNo  int
	)
	flush := func() error {
		if start == 0 {
			return nil
		}
		e, ok, err := parseLogical(logical.String(), start)
		logical.Reset()
		startLine := start
		start = 0
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, startLine, err)
		}
		if ok {
			out = append(out, e)
		}
		return nil
	}
	for sc.Scan() {
		lineNo++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if lineNo == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		trimmed := strings.TrimLeft(text, " \t\f")
		if start == 0 {
			if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
				continue
			}
			start = lineNo
		}
		// A continuation line's leading blanks are dropped; so are the
		// first line's (trimmed is used in both cases).
		if strings.HasSuffix(trimmed, "\\") && trailingBackslashes(trimmed)%2 == 1 {
			logical.WriteString(trimmed[:len(trimmed)-1])
			continue
		}
		logical.WriteString(trimmed)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A file that ends inside a continuation still yields its entry, as in Java.
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// parseLogical splits one logical line (leading blanks already removed) into
// key and value. ok is false for a line that holds nothing.
func parseLogical(s string, line int) (entry, bool, error) {
	if s == "" {
		return entry{}, false, nil
	}
	// Find the end of the key: the first unescaped separator or blank.
	keyEnd := len(s)
	valStart := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++ // skip the escaped char
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valStart = i, i+1
			break
		}
		if c == ' ' || c == '\t' || c == '\f' {
			keyEnd = i
			// Blanks, then at most one '=' or ':', then blanks again.
			j := i
			for j < len(s) && isBlank(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '=' || s[j] == ':') {
				j++
			}
			valStart = j
			break
		}
	}
	key, err := unescape(s[:keyEnd])
	if err != nil {
		return entry{}, false, err
	}
	rawVal := s[valStart:]
	rawVal = strings.TrimLeft(rawVal, " \t\f")
	rawVal = trimRightUnescaped(rawVal)
	val, err := unescape(rawVal)
	if err != nil {
		return entry{}, false, fmt.Errorf("key %q: %w", key, err)
	}
	return entry{key: key, value: val, line: line}, true, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// trimRightUnescaped trims trailing blanks unless the blank is escaped ("a\ ").
func trimRightUnescaped(s string) string {
	for len(s) > 0 && isBlank(s[len(s)-1]) {
		rest := s[:len(s)-1]
		if trailingBackslashes(rest)%2 == 1 {
			break
		}
		s = rest
	}
	return s
}

// unescape resolves Java properties escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, err := hex4(s, i+1)
			if err != nil {
				return "", err
			}
			i += 4
			// Java strings are UTF-16: a high surrogate followed by an
			// escaped low surrogate is one code point.
			if utf16.IsSurrogate(r) && r < 0xDC00 && strings.HasPrefix(s[i+1:], "\\u") {
				if lo, err := hex4(s, i+3); err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
			}
			b.WriteRune(r) // a lone surrogate becomes U+FFFD
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 reads the four hex digits of a \u escape starting at s[at].
func hex4(s string, at int) (rune, error) {
	if at+4 > len(s) {
		return 0, fmt.Errorf("%w: short \\u escape %q", ErrSyntax, s[at-2:])
	}
	var r rune
	for _, h := range []byte(s[at : at+4]) {
		d, ok := hexDigit(h)
		if !ok {
			return 0, fmt.Errorf("%w: bad \\u escape %q", ErrSyntax, s[at-2:at+4])
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
