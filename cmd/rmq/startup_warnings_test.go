package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestStartupWarnings: values stock takes silently start as in stock, and
// rmq says so: a boolean that is not true/false (read as false), a ratio
// outside the range stock's getter clamps to, a typo'd key (with the key it
// most likely meant). A stock 4.9.8 key rmq does not act on loads silently.
func TestStartupWarnings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.conf")
	body := "diskMaxUsedSpaceRatio=150\nautoCreateTopicEnable=yes\nlistenPot=10911\nsendMessageThreadPoolNums=16\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := loadBrokerSettings(brokerFlags{configFile: path}, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.AutoCreateTopicEnable || s.opts.DiskMaxUsedSpaceRatio != 150 || s.opts.SendMessageThreadPoolNums != 16 {
		t.Fatalf("autoCreateTopicEnable %v diskMaxUsedSpaceRatio %d sendMessageThreadPoolNums %d, want false 150 16 (as stock)",
			s.opts.AutoCreateTopicEnable, s.opts.DiskMaxUsedSpaceRatio, s.opts.SendMessageThreadPoolNums)
	}
	out := logs.String()
	for _, want := range []string{
		`key \"autoCreateTopicEnable\": \"yes\" is neither true nor false; read as false`,
		`diskMaxUsedSpaceRatio 150 is outside 10..95: used as 95`,
		`unknown key \"listenPot\"; did you mean \"listenPort\"?`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no warning %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sendMessageThreadPoolNums") {
		t.Errorf("a stock key warned:\n%s", out)
	}
	if !slices.Contains(s.opts.StartOnlyKeys, "grpcServerPort") || slices.Contains(s.opts.StartOnlyKeys, "enableTopicMessageTypeCheck") {
		t.Errorf("StartOnlyKeys %v: want the gRPC keys Options lacks, only", s.opts.StartOnlyKeys)
	}
	if err := s.check(); err != nil {
		t.Errorf("the file does not start: %v", err)
	}
}
