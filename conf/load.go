package conf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
)

// LoadFile reads the properties file at path into every dst (see Load).
func LoadFile(path string, dst ...any) (warnings []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conf: %w", err)
	}
	defer f.Close()
	return Load(f, path, dst...)
}

// Load reads a properties stream and sets each key on every field tagged with
// it in any of dst, each of which must be a non-nil pointer to a struct. name
// (usually the file path) prefixes positions in warnings and errors.
//
// Values that do not parse are all reported, joined, as *ValueError; the other
// keys are still applied. Unknown and repeated keys are returned as warnings.
// A destination error (ErrTarget) is returned before anything is read.
func Load(r io.Reader, name string, dst ...any) ([]string, error) {
	if len(dst) == 0 {
		return nil, fmt.Errorf("%w: no destination", ErrTarget)
	}
	byKey := make(map[string][]field)
	for _, d := range dst {
		fs, err := fieldsOf(d, true)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			byKey[f.key] = append(byKey[f.key], f)
		}
	}
	entries, err := parse(r, name)
	if err != nil {
		return nil, err
	}
	var (
		warnings []string
		errs     []error
		seen     = make(map[string]int) // key -> line of its previous entry
	)
	for _, e := range entries {
		if prev, ok := seen[e.key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s:%d: key %q repeats line %d; the last value wins", name, e.line, e.key, prev))
		}
		seen[e.key] = e.line
		fs, ok := byKey[e.key]
		if !ok {
			// Stock ignores an unknown key without a word; rmq warns, and
			// names the key a typo most likely meant (listenPot: listenPort).
			w := fmt.Sprintf("%s:%d: unknown key %q", name, e.line, e.key)
			if near := Closest(e.key, keysOf(byKey)); near != "" {
				w += fmt.Sprintf("; did you mean %q?", near)
			}
			warnings = append(warnings, w)
			continue
		}
		if fs[0].v.Kind() == reflect.Bool && fs[0].v.Type() != durationType && !isBoolText(e.value) {
			// Boolean.parseBoolean reads anything but "true" as false, and
			// so does rmq, as stock; "yes" or "1" was surely meant as true.
			warnings = append(warnings, fmt.Sprintf("%s:%d: key %q: %q is neither true nor false; read as false, as stock does", name, e.line, e.key, e.value))
		}
		for _, f := range fs {
			if err := f.set(e.value); err != nil {
				errs = append(errs, &ValueError{File: name, Line: e.line, Key: e.key, Value: e.value, Type: typeName(f), Cause: err})
				break // every field of one key shares the error; report it once
			}
		}
	}
	return warnings, errors.Join(errs...)
}

func isBoolText(s string) bool { return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") }

// keysOf lists the keys of byKey, sorted so that a tie picks the same key
// every time.
func keysOf(byKey map[string][]field) []string {
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
