package broker

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/remoting"
)

// The retention keys change while the broker runs, on a manual clock: the
// next cleanup round and the next send see them, GET_BROKER_CONFIG shows
// them, the config file the broker started with keeps them, and values the
// store cannot run with are refused and change nothing.
func TestUpdateBrokerConfigRetentionIsLive(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(cfgFile, []byte("# the operator's file\nbrokerName=broker-a\nfileReservedTime = 72\ndeleteWhen=04\\\n;16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, clk, disk := startRetentionBroker(t, func(o *Options) {
		o.FileReservedTimeMinutes = 0 // the stock 72 h
		o.ConfigFile = cfgFile
	})
	fillFiles(t, tb, 3)
	clk.Advance(2 * time.Minute) // 03:02

	if n := tb.Store().CleanNow(); n != 0 {
		t.Fatalf("deleted %d files inside 72 h", n)
	}
	tb.updateConfig(t, "fileReservedTimeMinutes=1\n")
	if n := tb.Store().CleanNow(); n != 0 {
		t.Fatalf("deleted %d files at 03:00 with deleteWhen 04", n)
	}
	tb.updateConfig(t, "deleteWhen=03;15\ncleanResourceInterval=500\ndeleteCommitLogFilesInterval=0\nredeleteHangedFileInterval=30000\n")
	if n := tb.Store().CleanNow(); n == 0 {
		t.Fatal("no file deleted once deleteWhen named the hour")
	}
	r := tb.Store().Retention()
	if r.FileReservedTime != time.Minute || r.DeleteWhen != "03;15" || r.CleanResourceInterval != 500*time.Millisecond ||
		r.DeleteCommitLogFilesInterval >= 0 || r.RedeleteHangedFileInterval != 30*time.Second || r.DiskUsage != disk {
		t.Fatalf("store retention after the updates: %+v", r)
	}

	// The warning level: 85% used is fine at 90 and full at 80.
	disk.set(0.85)
	tb.Store().CleanNow()
	tb.mustSend(sendArgs{topic: "RetLive", body: []byte("at 90")})
	tb.updateConfig(t, "diskSpaceWarningLevelRatio=80\n")
	if resp := tb.send(sendArgs{topic: "RetLive", body: []byte("at 80")}); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send over the lowered warning level: %d %q", resp.Code, resp.Remark)
	}
	tb.updateConfig(t, "diskSpaceWarningLevelRatio=95\ndiskSpaceCleanForciblyRatio=90\ncleanFileForciblyEnable=false\n")
	tb.mustSend(sendArgs{topic: "RetLive", body: []byte("at 95")})
	// diskMaxUsedSpaceRatio takes any number and is clamped where it is
	// used, as Java's getter clamps it; the config shows what was set.
	tb.updateConfig(t, "diskMaxUsedSpaceRatio=99\n")
	r = tb.Store().Retention()
	if r.DiskMaxUsedSpaceRatio != 95 || r.DiskSpaceWarningLevelRatio != 0.95 || r.DiskSpaceCleanForciblyRatio != 0.90 || !r.CleanFileForciblyDisable {
		t.Fatalf("store retention after the ratio updates: %+v", r)
	}

	before, _, v := tb.brokerConfig(t)
	for _, body := range []string{
		"deleteWhen=4pm\n",
		"deleteWhen=24\n",
		"fileReservedTime=lots\n",
		"fileReservedTime=0\nfileReservedTimeMinutes=0\n",
		"diskSpaceWarningLevelRatio=150\n",
		"diskSpaceCleanForciblyRatio=0\n",
	} {
		resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(body))
		key, _, _ := strings.Cut(body, "=")
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, key) {
			t.Errorf("update %q: %d %q, want SYSTEM_ERROR naming %s", body, resp.Code, resp.Remark, key)
		}
	}
	after, lines, v2 := tb.brokerConfig(t)
	if after.RetentionConfig != before.RetentionConfig || v2.Counter != v.Counter {
		t.Fatalf("refused updates changed the config: %+v → %+v (version %d → %d)", before.RetentionConfig, after.RetentionConfig, v.Counter, v2.Counter)
	}
	want := map[string]string{
		"fileReservedTime": "72", "fileReservedTimeMinutes": "1", "deleteWhen": "03;15", "cleanResourceInterval": "500",
		"deleteCommitLogFilesInterval": "0", "redeleteHangedFileInterval": "30000", "diskSpaceWarningLevelRatio": "95",
		"diskSpaceCleanForciblyRatio": "90", "cleanFileForciblyEnable": "false", "diskMaxUsedSpaceRatio": "99",
	}
	for k, w := range want {
		if lines[k] != w {
			t.Errorf("GET_BROKER_CONFIG %s=%s, want %s", k, lines[k], w)
		}
	}
	if got := tb.Store().Retention(); got.FileReservedTime != time.Minute || got.DeleteWhen != "03;15" {
		t.Fatalf("refused updates reached the store: %+v", got)
	}

	// The config file: the operator's lines stay, the changed keys hold
	// their new values once each, and a start reads them back.
	text, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"# the operator's file\n", "brokerName=broker-a\n", "fileReservedTime = 72\n", "deleteWhen=03;15\n", "fileReservedTimeMinutes=1\n"} {
		if !bytes.Contains(text, []byte(l)) {
			t.Errorf("config file lacks %q:\n%s", l, text)
		}
	}
	if n := bytes.Count(text, []byte("deleteWhen")); n != 1 || bytes.Contains(text, []byte(";16")) {
		t.Errorf("config file has %d deleteWhen lines or the old continuation:\n%s", n, text)
	}
	reread := DefaultOptions()
	if _, err := conf.LoadFile(cfgFile, &reread); err != nil {
		t.Fatal(err)
	}
	wantFile := after.RetentionConfig
	// Set by startRetentionBroker's options, never by an update.
	wantFile.DeleteConsumeQueueFilesInterval = DefaultOptions().DeleteConsumeQueueFilesInterval
	if reread.RetentionConfig != wantFile {
		t.Fatalf("config file reads back as %+v, want %+v", reread.RetentionConfig, wantFile)
	}
}

func TestReplaceProperties(t *testing.T) {
	old := "a=1\n# c\nb=2\\\n  still b\nc : 3\nb=dup\nlast=x"
	src := struct {
		B int `conf:"b"`
		D int `conf:"d"`
	}{20, 4}
	got := string(conf.RewriteKeys([]byte(old), []string{"b", "d"}, &src))
	want := "a=1\n# c\nb=20\nc : 3\nlast=x\nd=4\n"
	if got != want {
		t.Fatalf("RewriteKeys = %q, want %q", got, want)
	}
}
