package filter

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestJavaParseInt(t *testing.T) {
	for _, c := range []struct {
		s    string
		bits int
		want int64
		ok   bool
	}{
		{"0", 32, 0, true},
		{"-0", 32, 0, true},
		{"+7", 32, 7, true},
		{"2147483647", 32, math.MaxInt32, true},
		{"-2147483648", 32, math.MinInt32, true},
		{"2147483648", 32, 0, false},
		{"-2147483649", 32, 0, false},
		{"2147483648", 64, 2147483648, true},
		{"9223372036854775807", 64, math.MaxInt64, true},
		{"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false},
		{"99999999999999999999", 64, 0, false},
		{"\u0663\u0664", 32, 34, true}, // Arabic-Indic digits
		{"\uff11\uff10", 32, 10, true}, // fullwidth digits
		{"\u09e7", 32, 1, true},        // Bengali one
		{"\U0001d7d9", 32, 0, false},   // mathematical digit: a surrogate pair in Java
		{"\u00b2", 32, 0, false},       // superscript two is No, not Nd
		{"", 32, 0, false},
		{"+", 32, 0, false},
		{"-", 64, 0, false},
		{"+-1", 32, 0, false},
		{" 1", 32, 0, false},
		{"1 ", 32, 0, false},
		{"1_000", 32, 0, false},
		{"1L", 64, 0, false},
		{"0x10", 32, 0, false},
		{"\xff", 32, 0, false},
	} {
		got, ok := javaParseInt(c.s, c.bits)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("javaParseInt(%q, %d) = %d, %v; want %d, %v", c.s, c.bits, got, ok, c.want, c.ok)
		}
	}
}

func TestJavaParseDouble(t *testing.T) {
	for _, c := range []struct {
		s    string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{"1.", 1, true},
		{".5", 0.5, true},
		{"-.5", -0.5, true},
		{"+1e3", 1000, true},
		{"1E-3", 0.001, true},
		{"1.5f", 1.5, true},
		{"1.5D", 1.5, true},
		{"\t 2 \n", 2, true},
		{"0x1p4", 16, true},
		{"-0X1.8P1", -3, true},
		{"0x.8p1", 1, true},
		{"0x1p-2d", 0.25, true},
		{"1e400", math.Inf(1), true},
		{"-1e400", math.Inf(-1), true},
		{"1e-400", 0, true},
		{"Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"", 0, false},
		{" ", 0, false},
		{".", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1..2", 0, false},
		{"1.2.3", 0, false},
		{"1ff", 0, false},
		{"1f ", 1, true}, // trimmed first
		{"0x10", 0, false},
		{"0xp1", 0, false},
		{"0x1.p", 0, false},
		{"0x_1p1", 0, false},
		{"1_0", 0, false},
		{"inf", 0, false},
		{"Inf", 0, false},
		{"nan", 0, false},
		{"NaNf", 0, false},
		{"\u00a01", 0, false},
		{"\u0661", 0, false},
	} {
		got, ok := javaParseDouble(c.s)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("javaParseDouble(%q) = %v, %v; want %v, %v", c.s, got, ok, c.want, c.ok)
		}
	}
	for _, s := range []string{"NaN", "-NaN", "+NaN", " NaN "} {
		if f, ok := javaParseDouble(s); !ok || !math.IsNaN(f) {
			t.Errorf("javaParseDouble(%q) = %v, %v; want NaN", s, f, ok)
		}
	}
	if f, _ := javaParseDouble("-0"); !math.Signbit(f) {
		t.Errorf("javaParseDouble(-0) = %v, want -0", f)
	}
}

func TestJavaCompareDouble(t *testing.T) {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	for _, c := range []struct {
		a, b float64
		want int
	}{
		{1, 2, -1}, {2, 1, 1}, {1, 1, 0},
		{nan, nan, 0}, {nan, inf, 1}, {inf, nan, -1}, {nan, -inf, 1},
		{negZero, 0, -1}, {0, negZero, 1}, {negZero, negZero, 0},
	} {
		if got := javaCompareDouble(c.a, c.b); got != c.want {
			t.Errorf("javaCompareDouble(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestCompileError(t *testing.T) {
	for _, c := range []struct {
		expr, msg string
		pos       int
	}{
		{"a = 'x", "unterminated string literal", 4},
		{"a > 0.0", "0.0 is less than", 4},
		{"a BETWEEN 3 AND 1", "must less than or equal", 2},
		{"a NOT b", `encountered <ID> "b"`, 6},
		{"a = ", "encountered <EOF>", 4},
		{"a = NULL", "'NULL' cannot be compared", 2},
		{"'x'", "will not result in a boolean value", 0},
		{"a != 1", `lexical error at "!"`, 2},
	} {
		_, err := Compile(c.expr)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q) = %v, want an *Error", c.expr, err)
			continue
		}
		if e.Expr != c.expr || e.Pos != c.pos || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("Compile(%q): %+v, want Pos %d and a message with %q", c.expr, e, c.pos, c.msg)
		}
		if !strings.HasPrefix(err.Error(), "Invalid MessageSelector") {
			t.Errorf("Compile(%q): message %q", c.expr, err)
		}
	}
}

func TestEvaluateNilProperties(t *testing.T) {
	e, err := Compile("a IS NULL AND NOT (b = 'x')")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Evaluate(nil); got != Unknown {
		t.Errorf("Evaluate(nil) = %v, want NULL", got)
	}
	e, _ = Compile("a IS NULL")
	if !e.Match(nil) {
		t.Error("a IS NULL does not match a message without properties")
	}
	if e.String() != "a IS NULL" {
		t.Errorf("String() = %q", e.String())
	}
}

// lookup is Properties as the broker will provide it: a scan over stored
// properties, here a fixed slice, so nothing is allocated per lookup.
type lookup []string // key, value, key, value, ...

func (l lookup) Get(key string) (string, bool) {
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == key {
			return l[i+1], true
		}
	}
	return "", false
}

var allocExprs = []string{
	"a = 'x' AND b <> 'y'",
	"price > 10 AND price <= 99.5 OR region IN ('eu', 'us')",
	"region IN ('a', 'b', 'c', 'd', 'e', 'f')",
	"n BETWEEN 1 AND 3000000000 AND f = TRUE",
	"a IS NOT NULL AND NOT (m = 5) AND missing IS NULL",
	"x > y AND tag CONTAINS 'ab' AND tag NOT STARTSWITH 'z' AND tag ENDSWITH 'c'",
	"n = 5 OR bad = 5", // ends in a conversion failure
}

var allocProps = lookup{"a", "x", "b", "z", "price", "42", "region", "eu", "n", "7", "f", "true",
	"m", "6", "x", "2.5", "y", "1e0", "tag", "abc", "bad", "five"}

func TestMatchDoesNotAllocate(t *testing.T) {
	for _, s := range allocExprs {
		e, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		var p Properties = allocProps
		if n := testing.AllocsPerRun(100, func() { e.Match(p) }); n != 0 {
			t.Errorf("Match(%q) allocates %v times per run", s, n)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	e, err := Compile(allocExprs[1])
	if err != nil {
		b.Fatal(err)
	}
	var p Properties = allocProps
	b.ReportAllocs()
	for b.Loop() {
		e.Match(p)
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(allocExprs[1]); err != nil {
			b.Fatal(err)
		}
	}
}
