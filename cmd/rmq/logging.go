package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"gopkg.in/natefinch/lumberjack.v2"
)

// logSettings are the log options, from flags or the config file keys
// (flags win).
type logSettings struct {
	// Level is one level for everything ("info") or a default and
	// per-component levels: "info,store=debug,broker=warn" or
	// "store=debug,broker=info" (components not named log at info).
	// Components: namesrv, broker, store, timer, schedule, transaction.
	Level string `conf:"logLevel"`
	// Format is "console" (human-readable, the default) or "json" (one
	// JSON object per line).
	Format string `conf:"logFormat"`
	// File, when set, receives the logs instead of stderr, rotated by size
	// (MaxSizeMB) and age (MaxAgeDays), keeping MaxBackups old files.
	File       string `conf:"logFile"`
	MaxSizeMB  int    `conf:"logFileMaxSize"`
	MaxAgeDays int    `conf:"logFileMaxAge"`
	MaxBackups int    `conf:"logFileMaxBackups"`
}

func defaultLogSettings() logSettings {
	return logSettings{Level: "info", Format: "console", MaxSizeMB: 128, MaxAgeDays: 7, MaxBackups: 10}
}

// levels is a parsed Level: the default and the per-component levels.
type levels struct {
	def  zerolog.Level
	comp map[string]zerolog.Level
}

// logComponents are the values of the "component" field.
var logComponents = []string{"namesrv", "broker", "store", "timer", "schedule", "transaction"}

func parseLevels(s string) (levels, error) {
	l := levels{def: zerolog.InfoLevel}
	bad := fmt.Errorf("bad --log-level %q: want a level (trace, debug, info, warn, error or disabled), optionally followed by component=level pairs (components %s)",
		s, strings.Join(logComponents, ", "))
	if strings.TrimSpace(s) == "" {
		return l, bad
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, lv, isPair := strings.Cut(part, "=")
		if !isPair {
			lv = name
		}
		lvl, err := zerolog.ParseLevel(strings.TrimSpace(lv))
		if err != nil || strings.TrimSpace(lv) == "" {
			return l, bad
		}
		if !isPair {
			l.def = lvl
			continue
		}
		name = strings.TrimSpace(name)
		known := false
		for _, c := range logComponents {
			known = known || c == name
		}
		if !known {
			return l, bad
		}
		if l.comp == nil {
			l.comp = make(map[string]zerolog.Level)
		}
		l.comp[name] = lvl
	}
	return l, nil
}

// lowest is the most verbose level in l: the logger's own level.
func (l levels) lowest() zerolog.Level {
	lo := l.def
	for _, v := range l.comp {
		lo = min(lo, v)
	}
	return lo
}

// newLogger returns the process logger on stderr (or the log file) and a
// closer for the file; s has been checked by parseLevels.
func newLogger(stderr io.Writer, s logSettings) (zerolog.Logger, io.Closer, error) {
	lv, err := parseLevels(s.Level)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	var out io.Writer = stderr
	var closer io.Closer = nopCloser{}
	if s.File != "" {
		if s.MaxSizeMB <= 0 || s.MaxAgeDays < 0 || s.MaxBackups < 0 {
			return zerolog.Nop(), nil, errors.New("logFileMaxSize must be positive, logFileMaxAge and logFileMaxBackups not negative")
		}
		// lumberjack opens the file at the first line and drops every line
		// it cannot write, so a path that cannot be opened would leave the
		// broker running with no log at all: open it once now and refuse
		// to start instead.
		if err := checkLogFile(s.File); err != nil {
			return zerolog.Nop(), nil, err
		}
		lj := &lumberjack.Logger{Filename: s.File, MaxSize: s.MaxSizeMB, MaxAge: s.MaxAgeDays, MaxBackups: s.MaxBackups, LocalTime: true}
		out, closer = lj, lj
	}
	switch strings.ToLower(s.Format) {
	case "", "console":
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: "2006-01-02 15:04:05.000", NoColor: true}
	case "json":
	default:
		return zerolog.Nop(), nil, fmt.Errorf("bad --log-format %q: want console or json", s.Format)
	}
	if len(lv.comp) > 0 {
		out = &componentFilter{out: out, lv: lv}
	}
	return zerolog.New(out).Level(lv.lowest()).With().Timestamp().Logger(), closer, nil
}

// checkLogFile creates path's directory (as lumberjack does) and opens the
// file for appending.
func checkLogFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--log-file (logFile) %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("--log-file (logFile) %s: %w", path, err)
	}
	return f.Close()
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// componentFilter drops events below the level of their component: the
// value of the last "component" field of the JSON event (a subsystem's
// logger adds its own after its parent's), or the default level.
type componentFilter struct {
	out io.Writer
	lv  levels
}

var componentKey = []byte(`"component":"`)

func (f *componentFilter) Write(p []byte) (int, error) { return f.out.Write(p) }

// WriteLevel implements zerolog.LevelWriter.
func (f *componentFilter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	min := f.lv.def
	if i := bytes.LastIndex(p, componentKey); i >= 0 {
		rest := p[i+len(componentKey):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			if cl, ok := f.lv.comp[string(rest[:j])]; ok {
				min = cl
			}
		}
	}
	if l < min {
		return len(p), nil
	}
	return f.out.Write(p)
}
