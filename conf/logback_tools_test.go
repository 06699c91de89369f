package conf

import (
	"encoding/xml"
	"os"
	"testing"
)

// TestLogbackToolsXML checks the logback file shipped for the stock mqadmin:
// well-formed, with a root logger whose every appender is a console appender
// writing to stderr (mqadmin's stdout is its output).
func TestLogbackToolsXML(t *testing.T) {
	raw, err := os.ReadFile("logback_tools.xml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		XMLName   xml.Name `xml:"configuration"`
		Appenders []struct {
			Name   string `xml:"name,attr"`
			Class  string `xml:"class,attr"`
			Target string `xml:"target"`
		} `xml:"appender"`
		Root struct {
			Level string `xml:"level,attr"`
			Refs  []struct {
				Ref string `xml:"ref,attr"`
			} `xml:"appender-ref"`
		} `xml:"root"`
	}
	if err := xml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("logback_tools.xml: %v", err)
	}
	if cfg.Root.Level == "" || len(cfg.Root.Refs) == 0 {
		t.Fatalf("root logger %+v: want a level and an appender", cfg.Root)
	}
	for _, r := range cfg.Root.Refs {
		found := false
		for _, a := range cfg.Appenders {
			if a.Name != r.Ref {
				continue
			}
			found = true
			if a.Class != "ch.qos.logback.core.ConsoleAppender" || a.Target != "System.err" {
				t.Errorf("appender %s is %s to %q, want a ConsoleAppender to System.err", a.Name, a.Class, a.Target)
			}
		}
		if !found {
			t.Errorf("root refers to undefined appender %q", r.Ref)
		}
	}
}
