package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	store := log.With().Str("component", "store").Logger() // as store.Open derives it from the broker's Options.Logger
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
	cfg := writeFile(t, "broker.conf", "logFormat=json\nlogLevel=debug\nbrokerRole=BACKUP\n")
	code, _, errOut := runCLI(t, "broker", "-c", cfg, "-n", "127.0.0.1:9876", "--store-dir", t.TempDir())
	if code == 0 {
		t.Fatal("a broker with brokerRole=BACKUP started")
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

// TestLogFileThatCannotBeOpenedFailsTheStart: lumberjack would drop every
// line of a file it cannot open; the start fails instead, naming the key.
func TestLogFileThatCannotBeOpenedFailsTheStart(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := defaultLogSettings()
	s.File = filepath.Join(notDir, "rmq.log")
	if _, _, err := newLogger(nil, s); err == nil || !strings.Contains(err.Error(), "logFile") {
		t.Fatalf("newLogger with %s: %v, want an error naming logFile", s.File, err)
	}
	s.File = filepath.Join(t.TempDir(), "logs", "rmq.log")
	if _, closer, err := newLogger(nil, s); err != nil {
		t.Fatalf("newLogger with %s: %v", s.File, err)
	} else {
		closer.Close()
	}
}

// duplicateKey returns the first key that line, a JSON object, holds twice.
func duplicateKey(t *testing.T, line []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("line %q is not a JSON object", line)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		key := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
	}
	return ""
}

// TestJSONLogHasNoDuplicateKeys runs standalone with JSON logs at debug and
// checks that no line repeats a key (the timer's start-up lines carried
// "component" twice before): Elasticsearch and OpenSearch refuse a document
// that does.
func TestJSONLogHasNoDuplicateKeys(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	np := testutil.FreePort(t)
	bp := testutil.FreePortPair(t, np)
	p := startProc(t, "standalone", "standalone", "-c", smallStoreConf(t, ""), "--store-dir", store,
		"--namesrv-port", fmt.Sprint(np), "--listen-port", fmt.Sprint(bp), "--log-format", "json", "--log-level", "debug")
	p.waitLine(t, "boot success")
	if code := p.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	components := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		if !bytes.HasPrefix(sc.Bytes(), []byte("{")) {
			continue // the ready block, for a person
		}
		if k := duplicateKey(t, sc.Bytes()); k != "" {
			t.Errorf("key %q twice in %s", k, sc.Text())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if c, ok := m["component"].(string); ok {
			components[c]++
		}
	}
	for _, c := range []string{"namesrv", "broker", "timer"} {
		if components[c] == 0 {
			t.Errorf("no line of component %s (lines per component: %v)", c, components)
		}
	}
}
