package conf

import "time"

// KeyInfo describes one bound key for documentation: its name, its value
// in the source (the default when the source holds the defaults), as -p
// prints it, and its type as the binder parses it.
type KeyInfo struct {
	Key     string
	Default string
	Type    string
}

// Describe lists the keys bound in the srcs like Keys (deduplicated, first
// source wins, declaration order) with their values and types. A duration
// field's type names the unit a bare number is read in ("duration (ms)").
func Describe(src ...any) []KeyInfo {
	var out []KeyInfo
	for _, f := range boundFields(src) {
		typ := typeName(f)
		if f.v.Type() == durationType {
			typ = "duration (" + unitName(f.unit) + ")"
		}
		out = append(out, KeyInfo{Key: f.key, Default: f.format(), Type: typ})
	}
	return out
}

// unitName is the tag option of unit (the inverse of units).
func unitName(unit time.Duration) string {
	for name, u := range units {
		if u == unit {
			return name
		}
	}
	return "?"
}
