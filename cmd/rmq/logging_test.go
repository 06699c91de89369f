package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

func TestParseLevels(t *testing.T) {
	for _, tt := range []struct {
		in      string
		def     string
		comp    map[string]string
		wantErr bool
	}{
		{in: "debug", def: "debug"},
		{in: "store=debug,broker=warn", def: "info", comp: map[string]string{"store": "debug", "broker": "warn"}},
		{in: "warn, timer=trace", def: "warn", comp: map[string]string{"timer": "trace"}},
		{in: "", wantErr: true},
		{in: "loud", wantErr: true},
		{in: "nosuch=debug", wantErr: true},
		{in: "store=", wantErr: true},
	} {
		l, err := parseLevels(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if tt.wantErr {
			continue
		}
		got := map[string]string{}
		for k, v := range l.comp {
			got[k] = v.String()
		}
		if l.def.String() != tt.def || len(got) != len(tt.comp) {
			t.Errorf("%q: default %s components %v", tt.in, l.def, got)
		}
		for k, v := range tt.comp {
			if got[k] != v {
				t.Errorf("%q: %s=%s, want %s", tt.in, k, got[k], v)
			}
		}
	}
}

// TestJSONLogsAndComponentLevels: every line is a JSON object; a component
// logs at its own level, the rest at the default.
func TestJSONLogsAndComponentLevels(t *testing.T) {
	var buf bytes.Buffer
	s := defaultLogSettings()
	s.Format, s.Level = "json", "warn,store=debug"
	log, _, err := newLogger(&buf, s)
	if err != nil {
		t.Fatal(err)
	}
	broker := log.With().Str("component", "broker").Logger()
	store := broker.With().Str("component", "store").Logger() // as store.Open derives it
	broker.Info().Msg("broker info dropped")
	broker.Warn().Str("remoteAddr", "127.0.0.1:1").Msg("broker warn kept")
	store.Debug().Msg("store debug kept")
	store.Trace().Msg("store trace dropped")
	log.Info().Msg("plain info dropped")
	log.Error().Msg("plain error kept")
	var msgs []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if _, ok := m["time"]; !ok || m["level"] == nil {
			t.Errorf("line lacks time or level: %s", sc.Text())
		}
		msgs = append(msgs, m["message"].(string))
	}
	if want := "broker warn kept|store debug kept|plain error kept"; strings.Join(msgs, "|") != want {
		t.Errorf("logged %q, want %q", strings.Join(msgs, "|"), want)
	}
}

func TestConsoleIsTheDefault(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := newLogger(&buf, defaultLogSettings())
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("k", "v").Msg("hello")
	if out := buf.String(); !strings.Contains(out, "INF hello k=v") {
		t.Errorf("console line %q", out)
	}
	s := defaultLogSettings()
	s.Format = "xml"
	if _, _, err := newLogger(&buf, s); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("bad format: %v", err)
	}
}

// TestLogFileRotationKeepsBackups writes past the size limit several times:
// the directory ends with the live file and MaxBackups rotated ones.
func TestLogFileRotationKeepsBackups(t *testing.T) {
	dir := t.TempDir()
	s := defaultLogSettings()
	s.Format, s.File, s.MaxSizeMB, s.MaxBackups = "json", filepath.Join(dir, "rmq.log"), 1, 2
	log, closer, err := newLogger(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1000)
	for range 5 * 1100 { // about 5.5 MB: five rotations
		log.Info().Str("pad", line).Msg("fill")
	}
	count := func() int {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	// Old backups are removed by lumberjack's background goroutine.
	testutil.WaitFor(t, 10*time.Second, func() bool { return count() == 1+s.MaxBackups }, "the live file and 2 backups")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.File)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(first, &m); err != nil || m["message"] != "fill" {
		t.Errorf("log file line %q: %v", first, err)
	}
}

// TestLogKeysFromConfigFile: logFormat in the -c file applies; the flag
// overrides it.
func TestLogKeysFromConfigFile(t *testing.T) {
	cfg := writeFile(t, "broker.conf", "logFormat=json\nlogLevel=debug\nbrokerRole=SLAVE\n")
	code, _, errOut := runCLI(t, "broker", "-c", cfg, "-n", "127.0.0.1:9876", "--store-dir", t.TempDir())
	if code == 0 {
		t.Fatal("a SLAVE broker started")
	}
	first, _, _ := strings.Cut(errOut, "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(first), &m); err != nil || m["message"] != "loaded broker config" {
		t.Errorf("first stderr line %q is not the JSON config line: %v", first, err)
	}
	code, _, errOut = runCLI(t, "broker", "-c", cfg, "-n", "127.0.0.1:9876", "--store-dir", t.TempDir(), "--log-format", "console")
	if code == 0 || !strings.Contains(errOut, "INF loaded broker config") {
		t.Errorf("--log-format console over logFormat=json: %q", errOut)
	}
}
