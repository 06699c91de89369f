package filter

import (
	"fmt"
	"unicode/utf8"
)

// tokKind is a token of SelectorParser.jj.
type tokKind uint8

const (
	tEOF tokKind = iota
	// keywords (case-insensitive)
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	// literals and names
	tDecimal // DECIMAL_LITERAL: "0" | [1-9][0-9]*[lL]?
	tFloat   // FLOATING_POINT_LITERAL
	tString  // STRING_LITERAL: '...' with '' for a quote
	tID      // ID: [a-zA-Z_$][a-zA-Z0-9_$]*
	// punctuation
	tEq // =
	tNe // <>
	tGt // >
	tGe // >=
	tLt // <
	tLe // <=
	tLParen
	tRParen
	tComma
	tPlus
	tMinus
)

var tokNames = [...]string{
	tEOF: "<EOF>", tNot: "NOT", tAnd: "AND", tOr: "OR", tBetween: "BETWEEN", tIn: "IN",
	tTrue: "TRUE", tFalse: "FALSE", tNull: "NULL", tIs: "IS", tContains: "CONTAINS",
	tStartsWith: "STARTSWITH", tEndsWith: "ENDSWITH", tDecimal: "<DECIMAL_LITERAL>",
	tFloat: "<FLOATING_POINT_LITERAL>", tString: "<STRING_LITERAL>", tID: "<ID>",
	tEq: `"="`, tNe: `"<>"`, tGt: `">"`, tGe: `">="`, tLt: `"<"`, tLe: `"<="`,
	tLParen: `"("`, tRParen: `")"`, tComma: `","`, tPlus: `"+"`, tMinus: `"-"`,
}

func (k tokKind) String() string { return tokNames[k] }

// keywords, matched case-insensitively against a whole ID-shaped word.
var keywords = [...]struct {
	word string
	kind tokKind
}{
	{"NOT", tNot}, {"AND", tAnd}, {"OR", tOr}, {"BETWEEN", tBetween}, {"IN", tIn},
	{"TRUE", tTrue}, {"FALSE", tFalse}, {"NULL", tNull}, {"IS", tIs},
	{"CONTAINS", tContains}, {"STARTSWITH", tStartsWith}, {"ENDSWITH", tEndsWith},
}

type token struct {
	kind tokKind
	pos  int    // byte offset of the first character
	text string // the source text of the token
}

// lexer produces tokens on demand, as JavaCC's token manager does: a
// character that starts no token is an error only once the parser asks for
// the token there. This matters because the parser stops after the first
// complete expression (SelectorParser.jj has no <EOF> at the end of
// JmsSelector), so anything after it is never looked at, except the one or two
// tokens the parser peeks at to decide that the expression is complete.
type lexer struct {
	src string
	pos int
	// noEOL is where the text has no line end from on (0: not known yet).
	// A "--" with no line end after it is two minus signs, not a comment;
	// remembering where the search for one ran off the end keeps a chain of
	// minus signs from searching the rest of the text once per sign, which
	// made compiling "---...-1=1" quadratic.
	noEOL int
	steps int // bytes examined, for the test that holds the lexer linear
}

// next scans one token starting at l.pos, skipping white space and comments.
func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	s, start := l.src, l.pos
	if start == len(s) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := s[start]
	kind := tEOF
	end := start + 1
	switch {
	case isIDStart(c):
		for end < len(s) && isIDPart(s[end]) {
			end++
		}
		kind = tID
		for _, kw := range keywords {
			if equalFoldASCII(s[start:end], kw.word) {
				kind = kw.kind
				break
			}
		}
	case isDigit(c) || c == '.':
		kind, end = scanNumber(s, start)
		if kind == tEOF {
			return token{}, l.lexError(start)
		}
	case c == '\'':
		// The longest match of "'" ("''" | ~["'"])* "'": the first quote
		// that is not doubled closes; with none before the end, the first
		// quote of the last doubled pair does (so "'ab''" is 'ab' followed
		// by an unterminated "'", which is an error only if it is lexed).
		lastPair := -1
		for {
			if end == len(s) {
				l.steps += end - start // examined to the end, beyond the token
				if lastPair < 0 {
					return token{}, &Error{Pos: start, Msg: "unterminated string literal"}
				}
				end = lastPair + 1
				break
			}
			if s[end] == '\'' {
				if end+1 < len(s) && s[end+1] == '\'' {
					lastPair = end
					end += 2
					continue
				}
				end++
				break
			}
			end++
		}
		kind = tString
	case c == '=':
		kind = tEq
	case c == '<':
		kind = tLt
		if end < len(s) && s[end] == '>' {
			kind, end = tNe, end+1
		} else if end < len(s) && s[end] == '=' {
			kind, end = tLe, end+1
		}
	case c == '>':
		kind = tGt
		if end < len(s) && s[end] == '=' {
			kind, end = tGe, end+1
		}
	case c == '(':
		kind = tLParen
	case c == ')':
		kind = tRParen
	case c == ',':
		kind = tComma
	case c == '+':
		kind = tPlus
	case c == '-':
		kind = tMinus
	default:
		return token{}, l.lexError(start)
	}
	l.steps += end - start
	l.pos = end
	return token{kind: kind, pos: start, text: s[start:end]}, nil
}

// skip passes white space (" \t\n\r\f"), line comments and block comments.
// A line comment is "--" up to and including a line end; "--" with no line
// end after it is no comment but two minus signs. A block comment is
// "/*" ... "*/"; an unterminated one leaves a '/', which starts no token.
func (l *lexer) skip() error {
	s := l.src
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
			l.steps++
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-':
			i := l.pos + 2
			if l.noEOL > 0 && i >= l.noEOL {
				return nil
			}
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			l.steps += i - l.pos
			if i == len(s) {
				l.noEOL = l.pos + 2
				return nil
			}
			if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			l.pos = i + 1
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			i := l.pos + 2
			for {
				if i+1 >= len(s) {
					l.steps += i - l.pos
					return l.lexError(l.pos)
				}
				if s[i] == '*' && s[i+1] == '/' {
					break
				}
				i++
			}
			l.steps += i + 2 - l.pos
			l.pos = i + 2
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) lexError(pos int) error {
	r, _ := utf8.DecodeRuneInString(l.src[pos:])
	return &Error{Pos: pos, Msg: fmt.Sprintf("lexical error at %q", string(r))}
}

// scanNumber finds the longest of DECIMAL_LITERAL and FLOATING_POINT_LITERAL
// at s[start:] (start holds a digit or '.'), as JavaCC's longest match does:
//
//	DECIMAL_LITERAL:        "0" | [1-9][0-9]*[lL]?
//	FLOATING_POINT_LITERAL: [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP
//	EXP:                    [eE] [+-]? [0-9]+
//
// So "007" is the literal "0" followed by "07", "0L" is "0" followed by the
// name "L", and "5e" is "5" followed by the name "e". tEOF means no token.
func scanNumber(s string, start int) (tokKind, int) {
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intDigits := i - start
	if i < len(s) && s[i] == '.' {
		frac := i + 1
		for frac < len(s) && isDigit(s[frac]) {
			frac++
		}
		if intDigits == 0 && frac == i+1 {
			return tEOF, start // a lone '.'
		}
		return tFloat, scanExponent(s, frac)
	}
	if e := scanExponent(s, i); e > i {
		return tFloat, e
	}
	if s[start] == '0' {
		return tDecimal, start + 1
	}
	if i < len(s) && (s[i] == 'l' || s[i] == 'L') {
		i++
	}
	return tDecimal, i
}

// scanExponent returns the end of a complete exponent at s[i:], or i.
func scanExponent(s string, i int) int {
	if i >= len(s) || (s[i] != 'e' && s[i] != 'E') {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	d := j
	for d < len(s) && isDigit(s[d]) {
		d++
	}
	if d == j {
		return i
	}
	return d
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIDStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func equalFoldASCII(s, upper string) bool {
	if len(s) != len(upper) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// decodeString turns a STRING_LITERAL's text into its value: the quotes go,
// and each ” becomes one quote.
func decodeString(text string) string {
	inner := text[1 : len(text)-1]
	n := 0
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\'' {
			n++
			i++
		}
	}
	if n == 0 {
		return inner
	}
	b := make([]byte, 0, len(inner)-n)
	for i := 0; i < len(inner); i++ {
		b = append(b, inner[i])
		if inner[i] == '\'' {
			i++
		}
	}
	return string(b)
}
