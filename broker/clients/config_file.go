package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rmqio/rmq/internal/fastjson"
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
	norm, err := fastjson.Normalize(b)
	if err == nil {
		err = decode(norm)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConfigCorrupt, path, err)
	}
	return nil
}
