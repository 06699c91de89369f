package filter

import (
	"errors"
	"strings"
	"testing"
)

// FuzzCompile: Compile never panics, and a compiled expression evaluates
// without panic, deterministically, with Match agreeing with Evaluate. The
// properties come from the input: "k=v;k=v".
func FuzzCompile(f *testing.F) {
	for _, c := range loadCases(f) {
		props := ""
		if len(c.Checks) > 0 {
			var kv []string
			for k, v := range c.Checks[0].Props {
				kv = append(kv, k+"="+v)
			}
			props = strings.Join(kv, ";")
		}
		f.Add(c.Expr, props)
	}
	// Deep and long inputs (issue 42): each recursive form at and past the
	// depth limit, a minus chain near the length limit, and past it.
	d := MaxExpressionDepth
	for _, s := range []string{
		strings.Repeat("(", d) + "a = 1" + strings.Repeat(")", d),
		strings.Repeat("(", d+1) + "a = 1" + strings.Repeat(")", d+1),
		strings.Repeat("(", 100_000),
		strings.Repeat("-", d) + "1 = 1",
		strings.Repeat("- ", d+1) + "1 = 1",
		strings.Repeat("-", MaxExpressionLength-3) + "1=1",
		strings.Repeat("-", MaxExpressionLength) + "1=1",
		strings.Repeat("NOT ", d) + "TRUE",
		"a" + strings.Repeat(" = a", d+1),
		"a = 1" + strings.Repeat(" OR a = 1", 5000),
		"a IN (" + strings.Repeat("'x', ", 5000) + "'y')",
	} {
		f.Add(s, "a=1")
	}
	f.Fuzz(func(t *testing.T, expr, props string) {
		e, err := Compile(expr)
		if len(expr) > MaxExpressionLength && !errors.Is(err, ErrLimit) {
			t.Fatalf("Compile of %d bytes: %v, want ErrLimit", len(expr), err)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Compile(%q): error %T, want *Error", expr, err)
			}
			return
		}
		m := Map{}
		for _, kv := range strings.Split(props, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		r := e.Evaluate(m)
		if r2 := e.Evaluate(m); r2 != r {
			t.Fatalf("%q on %v: %v then %v", expr, m, r, r2)
		}
		if e.Match(m) != (r == True) {
			t.Fatalf("%q on %v: Match disagrees with Evaluate %v", expr, m, r)
		}
		// Every name present with the same value, and no name present.
		all := Func(func(string) (string, bool) { return props, true })
		e.Evaluate(all)
		e.Evaluate(nil)
	})
}

// FuzzCompileRepeated builds deep and long inputs the byte-level fuzzer
// would take long to reach: head, then unit repeated n times (up to 70 000,
// past MaxExpressionLength for any unit of more than one byte), then tail.
// Compile must answer within linear work (checked by the lexer's count of
// bytes examined), never panic, never overflow the stack, and a compiled
// expression must evaluate.
func FuzzCompileRepeated(f *testing.F) {
	for _, s := range []struct {
		head, unit, tail string
		n                uint32
	}{
		{"", "(", "a = 1", 1_000_000},
		{"", "-", "1=1", 100_000},
		{"", "- ", "1=1", 300},
		{"", "NOT ", "TRUE", 300},
		{"a", " = a", "", 300},
		{"", "(a = 1 OR ", "TRUE", 300},
		{"a = 1", " AND b = 2", "", 5000},
		{"a IN (", "'x''y', ", "'z')", 5000},
		{"", "--x\n", "a = 1", 5000},
		{"", "/* -- */", "a = 1", 5000},
		{"a = '", "''", "", 30000},
	} {
		f.Add(s.head, s.unit, s.tail, s.n)
	}
	f.Fuzz(func(t *testing.T, head, unit, tail string, n uint32) {
		if len(unit) == 0 || len(unit) > 64 {
			return
		}
		n %= 70_000
		expr := head + strings.Repeat(unit, int(n)) + tail
		e, steps, err := compile(expr)
		if len(expr) > MaxExpressionLength && !errors.Is(err, ErrLimit) {
			t.Fatalf("Compile of %d bytes: %v, want ErrLimit", len(expr), err)
		}
		if steps > 4*len(expr)+16 {
			t.Fatalf("%d bytes examined for %d", steps, len(expr))
		}
		if err == nil {
			e.Evaluate(Map{"a": "1", "b": "2"})
			e.Evaluate(nil)
		}
	})
}
