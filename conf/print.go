package conf

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Print writes key=value for every tagged field of each src (a struct or a
// pointer to one), in declaration order, like the Java -p flag. A key bound
// in more than one src is printed once, from the first. Values are escaped so
// that Load reads the output back to the same values. Sources that are not
// structs are skipped, and so are write errors (the output is a terminal).
func Print(w io.Writer, src ...any) {
	_ = printFields(w, nil, src)
}

// PrintKeys is Print restricted to keys, in the order of keys (the Java -m
// flag prints the important subset). Keys no src knows are skipped.
func PrintKeys(w io.Writer, keys []string, src ...any) {
	if len(keys) == 0 {
		return
	}
	_ = printFields(w, keys, src)
}

// Keys lists the keys bound in the srcs, deduplicated, in declaration order.
func Keys(src ...any) []string {
	var out []string
	for _, f := range boundFields(src) {
		out = append(out, f.key)
	}
	return out
}

// boundFields lists the fields bound in the srcs in declaration order, a key
// once: the first source that binds it wins. A src that is not a struct (or
// a pointer to one) is skipped.
func boundFields(src []any) []field {
	var out []field
	seen := make(map[string]bool)
	for _, s := range src {
		fs, err := fieldsOf(s, false)
		if err != nil {
			continue
		}
		for _, f := range fs {
			if !seen[f.key] {
				seen[f.key] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func printFields(w io.Writer, only []string, src []any) error {
	all := boundFields(src)
	if only != nil {
		first := make(map[string]field, len(all))
		for _, f := range all {
			first[f.key] = f
		}
		all = all[:0]
		for _, k := range only {
			if f, ok := first[k]; ok {
				all = append(all, f)
			}
		}
	}
	var b strings.Builder
	for _, f := range all {
		b.WriteString(escape(f.key, true))
		b.WriteByte('=')
		b.WriteString(escape(f.format(), false))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("conf: %w", err)
	}
	return nil
}

// escape makes s safe for one properties line: backslashes, control chars,
// comment starters at the front, separators in keys, and the blanks that Load
// would trim.
func escape(s string, isKey bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(s[i]) // not UTF-8: kept as is, Load reads bytes
			i++
			continue
		}
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (isKey || i == 0 || i == len(s)-1):
			b.WriteString(`\ `)
		case (r == '=' || r == ':') && isKey:
			b.WriteByte('\\')
			b.WriteRune(r)
		case (r == '#' || r == '!') && i == 0 && isKey:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}
