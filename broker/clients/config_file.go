package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrConfigCorrupt is returned (wrapped) when a config file and its .bak copy
// both fail to decode.
var ErrConfigCorrupt = errors.New("broker: config file corrupt")

// loadConfigFile loads a JSON config file the way the stock ConfigManager does:
// a missing, empty or undecodable file falls back to path+".bak" (the copy
// store.WriteFileAtomic keeps). Neither file existing is a fresh start. A bad
// main file with no usable backup is an error, so a broker never starts with
// silently emptied offsets or groups.
func loadConfigFile(path string, decode func([]byte) error) error {
	if path == "" {
		return nil
	}
	mainErr := decodeConfigFile(path, decode)
	if mainErr == nil {
		return nil
	}
	bakErr := decodeConfigFile(path+".bak", decode)
	switch {
	case bakErr == nil:
		return nil
	case errors.Is(mainErr, errNoConfig) && errors.Is(bakErr, errNoConfig):
		return nil
	case errors.Is(bakErr, errNoConfig):
		return mainErr
	default:
		return fmt.Errorf("%w: %v; backup: %v", ErrConfigCorrupt, mainErr, bakErr)
	}
}

var errNoConfig = errors.New("broker: no config file")

func decodeConfigFile(path string, decode func([]byte) error) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return errNoConfig
	}
	if err != nil {
		return fmt.Errorf("broker: read %s: %w", path, err)
	}
	if err := decode(quoteBareKeys(b)); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConfigCorrupt, path, err)
	}
	return nil
}

// quoteBareKeys rewrites fastjson's bare integer map keys ({0:12,1:7}), which
// a Java broker writes in consumerOffset.json, as JSON string keys
// ({"0":12,"1":7}). Everything else, string contents included, is copied as is.
func quoteBareKeys(b []byte) []byte {
	var out []byte // allocated on the first rewrite only
	inString, escaped := false, false
	last := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != '{' && c != ',' {
			continue
		}
		j := i + 1
		for j < len(b) && isJSONSpace(b[j]) {
			j++
		}
		k := j
		if k < len(b) && b[k] == '-' {
			k++
		}
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k == j || (b[j] == '-' && k == j+1) {
			continue
		}
		colon := k
		for colon < len(b) && isJSONSpace(b[colon]) {
			colon++
		}
		if colon >= len(b) || b[colon] != ':' {
			continue
		}
		out = append(out, b[last:j]...)
		out = append(out, '"')
		out = append(out, b[j:k]...)
		out = append(out, '"')
		last = k
		i = k - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
