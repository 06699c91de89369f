package filter

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// smallStack caps the goroutine stack for one test so that a parser
// recursing once per input byte dies at once (a fatal stack overflow, which
// fails the test binary) instead of after gigabytes.
func smallStack(t *testing.T) {
	old := debug.SetMaxStack(8 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

func wantLimit(t *testing.T, expr string, want string) {
	t.Helper()
	_, err := Compile(expr)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("Compile(%d bytes starting %.20q): %.200v, want ErrLimit", len(expr), expr, err)
	}
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %T, want *Error", err)
	}
	msg := err.Error()
	if len(msg) > 400 || !strings.Contains(msg, want) {
		t.Fatalf("message %q (%d bytes): want < 400 bytes containing %q", msg[:min(len(msg), 400)], len(msg), want)
	}
}

// A million nested parentheses (issue 42 defect 1) is refused, not a fatal
// stack overflow.
func TestDeepNestingRefused(t *testing.T) {
	smallStack(t)
	n := 1_000_000
	deep := strings.Repeat("(", n) + "a = 1" + strings.Repeat(")", n)
	wantLimit(t, deep, "the limit is 65536 bytes")
	// Within the length but past the depth, each recursive form.
	deepForm := map[string]string{
		"parentheses": strings.Repeat("(", 10_000) + "a = 1" + strings.Repeat(")", 10_000),
		"minus":       strings.Repeat("- ", 10_000) + "1 = 1",
		"plus":        strings.Repeat("+", 10_000) + "1 = 1",
		"NOT":         strings.Repeat("NOT ", 10_000) + "TRUE",
		"equal chain": "a" + strings.Repeat(" = a", 10_000),
		"AND in OR":   strings.Repeat("(a = 1 OR (b = 1 AND ", 1_000) + "c = 1" + strings.Repeat("))", 1_000),
	}
	for name, expr := range deepForm {
		t.Run(name, func(t *testing.T) {
			wantLimit(t, expr, fmt.Sprintf("the limit of %d levels", MaxExpressionDepth))
		})
	}
}

// Right at the limits an expression compiles and evaluates.
func TestLimitsAccepted(t *testing.T) {
	d := MaxExpressionDepth - 2 // the root comparison and its operand are levels too
	for _, expr := range []string{
		strings.Repeat("(", MaxExpressionDepth) + "a = 1" + strings.Repeat(")", MaxExpressionDepth),
		strings.Repeat("NOT ", MaxExpressionDepth-1) + "TRUE",
		"a = " + strings.Repeat("- ", d) + "1",
	} {
		e, err := Compile(expr)
		if err != nil {
			t.Fatalf("Compile(%.40q...): %v", expr, err)
		}
		e.Evaluate(Map{"a": "1"})
	}
	pad := "a = '" + strings.Repeat("x", MaxExpressionLength-6) + "'"
	if len(pad) != MaxExpressionLength {
		t.Fatal(len(pad))
	}
	if _, err := Compile(pad); err != nil {
		t.Fatalf("%d bytes: %v", len(pad), err)
	}
	wantLimit(t, pad+" ", "the limit is 65536 bytes")
}

// A long OR list is one node: it neither counts against the depth nor makes
// evaluation recurse per term, and it evaluates as Java's left-deep chain.
func TestLongOrListFlat(t *testing.T) {
	var b strings.Builder
	b.WriteString("a = '0'")
	for i := 1; i < 4000; i++ {
		fmt.Fprintf(&b, " OR a = '%d'", i)
	}
	b.WriteString(" OR b IS NULL AND c = 1")
	e, err := Compile(b.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		props Map
		want  Result
	}{
		{Map{"a": "3999", "b": "x"}, True},
		{Map{"a": "4000", "b": "x"}, False},
		{Map{"a": "4000", "c": "1"}, True},
		{Map{"a": "4000"}, Unknown},          // c = 1 is null
		{Map{"a": "4000", "c": "z"}, Failed}, // Integer.valueOf("z") throws
		{Map{"a": "7", "c": "z"}, True},      // decided before c is read
	} {
		if got := e.Evaluate(c.props); got != c.want {
			t.Errorf("%v: %v, want %v", c.props, got, c.want)
		}
	}
}

// steps compiles expr and returns the bytes its lexer examined.
func steps(t *testing.T, expr string) int {
	t.Helper()
	_, n, _ := compile(expr)
	return n
}

// A chain of minus signs is lexed in linear work (issue 42 defect 2: each
// "--" searched the rest of the text for the line end that would make it a
// comment, so '-'×100 000 took seconds). Counted in bytes examined, not
// timed: for n and 2n the work doubles, and it stays within a few bytes per
// input byte, for a chain the parser accepts and for one it refuses at the
// depth limit.
func TestMinusChainLinear(t *testing.T) {
	for _, tail := range []string{"1=1", "1=1\n", "a = 1 -- comment\n AND b = 2"} {
		n := MaxExpressionDepth / 4
		s1 := steps(t, strings.Repeat("-", n)+tail)
		s2 := steps(t, strings.Repeat("-", 2*n)+tail)
		if s2 > 2*s1+len(tail) || s1 > 4*(n+len(tail)) {
			t.Errorf("tail %q: %d bytes examined for %d signs, %d for %d: not linear", tail, s1, n, s2, 2*n)
		}
		long := strings.Repeat("-", MaxExpressionLength-len(tail)) + tail
		if s := steps(t, long); s > 4*len(long) {
			t.Errorf("tail %q: %d bytes examined for %d", tail, s, len(long))
		}
	}
	// Comments that do end, and strings: every byte once or twice.
	for _, expr := range []string{
		strings.Repeat("--x\n", MaxExpressionLength/4-8) + "a = 1",
		"a IN (" + strings.Repeat("'x''y', ", MaxExpressionLength/9) + "'z')",
		"a = '" + strings.Repeat("''", MaxExpressionLength/2-8),
		strings.Repeat("/* - */ ", MaxExpressionLength/8-4) + "a = 1",
	} {
		if s := steps(t, expr); s > 4*len(expr) {
			t.Errorf("%.20q...: %d bytes examined for %d", expr, s, len(expr))
		}
	}
}

// Footprint grows with what the expression holds, so a cache can bound
// itself in bytes.
func TestFootprint(t *testing.T) {
	small, err := Compile("a = 1")
	if err != nil {
		t.Fatal(err)
	}
	in := "a IN (" + strings.Repeat("'x', ", 2000) + "'y')"
	big, err := Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	if small.Footprint() < len("a = 1") || small.Footprint() > 1024 {
		t.Errorf("small: %d", small.Footprint())
	}
	if big.Footprint() < len(in)+2000*16 {
		t.Errorf("IN list of 2001: %d", big.Footprint())
	}
}
