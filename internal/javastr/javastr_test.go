package javastr

import "testing"

func TestTrim(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"   ":             "",
		" a b ":           "a b",
		"\t\r\n\x00x\x1f": "x",
		"\u00a0x\u00a0":   "\u00a0x\u00a0", // NBSP is not <= ' ' in Java either
		"\u3000中\u3000":   "\u3000中\u3000",
		"\x7fx":           "\x7fx", // DEL is above ' '
		"k=v\x0b":         "k=v",
	} {
		if got := Trim(in); got != want {
			t.Errorf("Trim(%q) = %q, want %q", in, got, want)
		}
	}
}
