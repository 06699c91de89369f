// Package sdklog cleans up after the stock Go 5.x SDK
// (rocketmq-clients/golang/v5), which logs every gRPC call to a fixed file
// in /tmp: pkg/zaplog's default, used by the connections its client
// manager dials with default options, so no client option or environment
// variable moves it. The tests and the benchmark that run the SDK in
// process remove what they made.
package sdklog

import (
	"os"
	"path/filepath"
	"time"
)

// Path is the SDK's call log; rotated copies are named
// rocketmq-logger-<time>.log beside it.
const Path = "/tmp/rocketmq-logger.log"

// RemoveAfter returns a func that removes Path and the rotated copies
// written since RemoveAfter was called, unless Path existed already (then
// it is somebody else's, and the func does nothing).
func RemoveAfter() func() {
	if _, err := os.Stat(Path); err == nil {
		return func() {}
	}
	start := time.Now()
	return func() {
		_ = os.Remove(Path)
		rotated, _ := filepath.Glob(filepath.Join(filepath.Dir(Path), "rocketmq-logger-*.log"))
		for _, f := range rotated {
			if st, err := os.Stat(f); err == nil && !st.ModTime().Before(start) {
				_ = os.Remove(f)
			}
		}
	}
}
