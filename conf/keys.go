package conf

import "io"

// ReadKeys returns the keys of a properties stream in file order, repeats
// included, without binding them anywhere (UPDATE_*_CONFIG checks them
// against a black list first).
func ReadKeys(r io.Reader) ([]string, error) {
	entries, err := parse(r, "")
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.key
	}
	return keys, nil
}
