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
