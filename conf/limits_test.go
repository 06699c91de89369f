package conf

import (
	"bufio"
	"errors"
	"runtime/debug"
	"strings"
	"testing"
)

// Issue 42 audit: the properties parser (also fed remote bodies by
// UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG) neither recurses nor
// allocates by a declared length: a physical line over 1 MiB is an error,
// and a long chain of continuation lines builds one entry in linear work.
func TestParseHostileInput(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
	if _, err := parse(strings.NewReader("k="+strings.Repeat("x", 2<<20)), "t"); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("a 2 MiB line: %v", err)
	}
	n := 500_000
	es, err := parse(strings.NewReader("k=a\\\n"+strings.Repeat("b\\\n", n)+"c\n"+strings.Repeat("\\u0041", 1000)+"=v"), "t")
	if err != nil || len(es) != 2 || len(es[0].value) != n+2 || es[1].key != strings.Repeat("A", 1000) {
		t.Fatalf("continuations: %d entries, %v", len(es), err)
	}
}
