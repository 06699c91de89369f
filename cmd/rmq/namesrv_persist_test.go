package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
)

// TestNamesrvConfigPersisted: UPDATE_NAMESRV_CONFIG writes the changed keys
// to the -c file (configStorePath, as NamesrvStartup sets it), keeping the
// operator's lines, and the next start reads them.
func TestNamesrvConfigPersisted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv.conf")
	if err := os.WriteFile(path, []byte("# mine\nlistenPort=9876\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := loadNamesrvSettings(namesrvFlags{configFile: path}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if opts.ConfigStorePath != path {
		t.Fatalf("configStorePath %q, want the -c file", opts.ConfigStorePath)
	}
	opts.ListenHost = "127.0.0.1"
	s, err := namesrv.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	resp := s.ServeRemoting(nil, remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true\n")))
	if resp.Code != remoting.Success {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(raw), "# mine\nlistenPort=9876\n") || !strings.Contains(string(raw), "orderMessageEnable=true\n") {
		t.Fatalf("file after the update:\n%s", raw)
	}
	again, err := loadNamesrvSettings(namesrvFlags{configFile: path}, zerolog.Nop())
	if err != nil || !again.OrderMessageEnable {
		t.Fatalf("after a restart orderMessageEnable = %v (%v), want true", again != nil && again.OrderMessageEnable, err)
	}
}
