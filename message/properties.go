package message

import (
	"slices"
	"strings"
)

// Separators of the properties text (MessageDecoder NAME_VALUE_SEPARATOR and
// PROPERTY_SEPARATOR); see the package documentation for the format.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// MaxPropertiesLength is the largest properties text a record can hold (int16 length).
const MaxPropertiesLength = 32767

// ParseProperties decodes "k\x01v\x02k\x01v[\x02]" the way Java
// MessageDecoder.string2messageProperties does: split on \x02; a segment is
// kept only when its first \x01 is strictly inside it (non-empty name and
// value); the value is the rest of the segment (it may contain \x01); later
// duplicates win. Both the 4.9.x form without a trailing \x02 and the Go/5.x
// form with one are accepted.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string, strings.Count(s, "\x02")+1)
	for len(s) > 0 {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if k := strings.IndexByte(seg, NameValueSeparator); k > 0 && k < len(seg)-1 {
			m[seg[:k]] = seg[k+1:]
		}
	}
	return m
}

// Props is a record's properties text, read without building a map.
type Props string

// Get returns the value ParseProperties(p)[key] would have ("" if absent).
func (p Props) Get(key string) string {
	v, _ := lookupProperty(string(p), key)
	return v
}

// Lookup is Get that also reports whether key is present.
func (p Props) Lookup(key string) (string, bool) { return lookupProperty(string(p), key) }

// EditProperties returns text without the pairs whose key is in drop (and
// without malformed pairs, which ParseProperties drops too), followed by the
// pairs of set, in order: ParseProperties of the result equals
// ParseProperties(text) with drop deleted and set applied. It spares a map
// and a sorted marshal when a few keys change.
func EditProperties(text string, drop []string, set ...[2]string) string {
	n := len(text)
	for _, kv := range set {
		n += len(kv[0]) + len(kv[1]) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for s := text; len(s) > 0; {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		k := strings.IndexByte(seg, NameValueSeparator)
		if k <= 0 || k >= len(seg)-1 || slices.Contains(drop, seg[:k]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(PropertySeparator)
		}
		b.WriteString(seg)
	}
	for _, kv := range set {
		if b.Len() > 0 {
			b.WriteByte(PropertySeparator)
		}
		b.WriteString(kv[0])
		b.WriteByte(NameValueSeparator)
		b.WriteString(kv[1])
	}
	return b.String()
}

// PropertiesText returns the properties text of the record rec.
func PropertiesText(rec []byte) (string, error) {
	l, err := ParseLayout(rec)
	if err != nil {
		return "", err
	}
	return string(l.Props(rec)), nil
}

// lookupProperty returns the value ParseProperties(s)[key] would have,
// without building the map.
func lookupProperty(s, key string) (string, bool) {
	val, found := "", false
	for len(s) > 0 {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if k := strings.IndexByte(seg, NameValueSeparator); k > 0 && k < len(seg)-1 && seg[:k] == key {
			val, found = seg[k+1:], true
		}
	}
	return val, found
}

// MarshalProperties encodes m Java 4.9.x style (messageProperties2String): "k\x01v" pairs joined by \x02,
// with no trailing \x02, keys in sorted order so equal maps give equal bytes.
// Like Java it writes every entry as given; pairs with an empty name or value
// are dropped again by ParseProperties.
func MarshalProperties(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var small [16]string
	keys := small[:0]
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n - 1)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(PropertySeparator)
		}
		b.WriteString(k)
		b.WriteByte(NameValueSeparator)
		b.WriteString(m[k])
	}
	return b.String()
}
