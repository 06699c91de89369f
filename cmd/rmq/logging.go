package main

import (
	"fmt"
	"io"

	"github.com/rs/zerolog"
)

// newLogger returns a human-readable zerolog logger on w at the named level
// (trace, debug, info, warn, error, disabled).
func newLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("bad --log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	cw := zerolog.ConsoleWriter{Out: w, TimeFormat: "2006-01-02 15:04:05.000", NoColor: true}
	return zerolog.New(cw).Level(lvl).With().Timestamp().Logger(), nil
}
