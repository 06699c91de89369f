package conf

import (
	"bytes"
	"slices"
	"strings"
)

// PropertyKeys lists the keys of a Java properties text in order: per
// non-blank line that is not a comment, the text up to the first unescaped
// '=', ':' or blank. Continuation lines (after a trailing backslash) belong
// to their key's value.
func PropertyKeys(body []byte) []string {
	var keys []string
	continued := false
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		wasContinued := continued
		continued = trailingBackslashes(line)%2 == 1
		if wasContinued {
			continue
		}
		line = strings.TrimLeft(line, " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continued = false
			continue
		}
		end := len(line)
		for i := 0; i < len(line); i++ {
			if line[i] == '\\' {
				i++
				continue
			}
			if strings.IndexByte("=: \t\f", line[i]) >= 0 {
				end = i
				break
			}
		}
		if k := line[:end]; k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// RewriteKeys returns the properties text old with the logical line of
// each of keys replaced by its current value in src (as PrintKeys writes
// it), and the keys old lacks appended: what UPDATE_*_CONFIG writes back to
// a config file, keeping the operator's comments, order and other keys
// (Java's Configuration.persist rewrites the whole file instead). A key's
// later duplicates are dropped, since Properties.load keeps the last one.
func RewriteKeys(old []byte, keys []string, src ...any) []byte {
	var lines strings.Builder
	PrintKeys(&lines, keys, src...)
	return replaceLines(old, strings.SplitAfter(lines.String(), "\n"))
}

// replaceLines is RewriteKeys over ready "key=value\n" lines.
func replaceLines(old []byte, repl []string) []byte {
	byKey := map[string]string{}
	var order []string
	for _, l := range repl {
		if k := PropertyKeys([]byte(l)); len(k) == 1 {
			byKey[k[0]] = l
			order = append(order, k[0])
		}
	}
	var out bytes.Buffer
	done := map[string]bool{}
	cont := false // the previous physical line continues its logical line
	skip := false // and that logical line is a replaced key's
	for _, line := range strings.SplitAfter(string(old), "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimRight(line, "\r\n")
		if cont {
			// A continuation line belongs to its key, whatever it looks like.
			cont = trailingBackslashes(body)%2 == 1
			if !skip {
				writeLine(&out, line)
			}
			continue
		}
		trimmed := strings.TrimLeft(body, " \t\f")
		comment := trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!'
		cont = !comment && trailingBackslashes(body)%2 == 1
		skip = false
		if k := PropertyKeys([]byte(line)); len(k) == 1 && byKey[k[0]] != "" {
			if !done[k[0]] {
				out.WriteString(byKey[k[0]])
				done[k[0]] = true
			}
			skip = true
			continue
		}
		writeLine(&out, line)
	}
	if cont && !skip {
		// The text ends inside a continuation: end it with an empty line,
		// or the first appended key would be read as part of its value.
		out.WriteByte('\n')
	}
	for _, k := range order {
		if !done[k] {
			out.WriteString(byKey[k])
		}
	}
	return out.Bytes()
}

// writeLine writes one physical line, ending it with a newline.
func writeLine(out *bytes.Buffer, line string) {
	out.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		out.WriteByte('\n')
	}
}
