package conf

import (
	"errors"
	"fmt"
	"io"
	"os"
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
			warnings = append(warnings, fmt.Sprintf("%s:%d: unknown key %q", name, e.line, e.key))
			continue
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
