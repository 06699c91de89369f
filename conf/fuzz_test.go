package conf

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLoad checks that no input panics, and that whatever loads prints back
// to text that loads to the same values.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"s=a\ni=1\nb=true\n",
		"s = x\\\n  y\n# c\n! d\n",
		"s: \\u0041\\t\\ \n",
		"s=\\uD83D\\uDE00\nds=1m\n",
		"\ufeffk\\=e\\ y=v\r\n",
		"s=a\\",
		"s=\\u12",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got allTypes
		if _, err := Load(strings.NewReader(in), "fuzz", &got); err != nil {
			return
		}
		var out bytes.Buffer
		Print(&out, &got)
		var back allTypes
		if _, err := Load(&out, "printed", &back); err != nil {
			t.Fatalf("printed config does not load: %v\n%s", err, out.String())
		}
		if back != got {
			t.Fatalf("round trip changed values:\n got %+v\nwant %+v\n%s", back, got, out.String())
		}
	})
}

// FuzzRewriteKeys checks that rewriting the lines of a key in any text
// never panics and that the result loads with the rewritten value: what
// UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG write back to a -c file.
func FuzzRewriteKeys(f *testing.F) {
	for _, seed := range []string{
		"s=a\ni=1\n",
		"# c\ns = x\\\n  y\ns=dup\nlast",
		"i\\=x=1\ns",
		"\\\n\\\n",
	} {
		f.Add(seed, "new value")
	}
	f.Fuzz(func(t *testing.T, old, value string) {
		_ = PropertyKeys([]byte(old))
		src := struct {
			S string `conf:"s"`
		}{value}
		out := RewriteKeys([]byte(old), []string{"s"}, &src)
		var back struct {
			S string `conf:"s"`
		}
		if _, err := Load(bytes.NewReader(out), "rewritten", &back); err != nil {
			if _, oldErr := Load(strings.NewReader(old), "old", &back); oldErr != nil {
				return // the old text did not load either
			}
			t.Fatalf("rewritten text does not load: %v\n%q", err, out)
		}
		if back.S != value {
			t.Fatalf("s = %q after the rewrite, want %q\n%q", back.S, value, out)
		}
	})
}
