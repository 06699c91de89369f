package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Output helpers: the stock tools print with Java printf widths; these
// reproduce the formatting pieces they rely on.

// WriteJSON writes v as indented JSON followed by a newline (the --json
// output of every command).
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("admin: encode JSON output: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// HumanTime is UtilAll.timeMillisToHumanString2: "2006-01-02 15:04:05,000"
// in local time.
func HumanTime(ms int64) string {
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05,000")
}

// FormatDate is UtilAll.formatDate with YYYY_MM_DD_HH_MM_SS.
func FormatDate(ms int64) string {
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
}

// front is UtilAll.frontStringAtLeast: s cut to at most n characters.
func front(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// javaBrokerAddrs renders a Map<Long,String> as Java's toString does,
// in id order: {0=127.0.0.1:10911, 1=...}.
func javaBrokerAddrs(m map[int64]string) string {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10) + "=" + m[id]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// javaMap renders a string map as Java's HashMap.toString, keys sorted.
func javaMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// javaBytes renders a byte slice as Arrays.toString(byte[]): signed values.
func javaBytes(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, c := range b {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(int(int8(c))))
	}
	sb.WriteByte(']')
	return sb.String()
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
