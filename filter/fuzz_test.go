package filter

import (
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
	f.Fuzz(func(t *testing.T, expr, props string) {
		e, err := Compile(expr)
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
