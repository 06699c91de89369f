package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/remoting"
)

// updateValue is a value for key, different from its default def and one
// a broker runs with: a special case, a flipped boolean, an integer moved
// by one, or a string of its own.
func updateValue(t *testing.T, key, def string) string {
	special := map[string]string{
		"brokerIP1":                   "127.0.0.2",
		"brokerIP2":                   "127.0.0.3",
		"namesrvAddr":                 "127.0.0.1:9",
		"flushDiskType":               "SYNC_FLUSH",
		"brokerRole":                  "SYNC_MASTER",
		"deleteWhen":                  "05",
		"messageDelayLevel":           "1s 2s",
		"storePathRootDir":            filepath.Join(t.TempDir(), "elsewhere"),
		"storePathCommitLog":          filepath.Join(t.TempDir(), "cl"),
		"mappedFileSizeConsumeQueue":  strconv.Itoa(SmallStoreConsumeQueueSize + 20),
		"bindAddress":                 "127.0.0.1",
		"brokerPermission":            "7",
		"tls.server.mode":             "enforcing",
		"metricsExporterType":         "disable",
		"tls.server.need.client.auth": "optional",
		// Controller mode needs controllerAddr, which comes later in the
		// key order: a lone enableControllerMode=true is refused as a file
		// with it would be at start.
		"enableControllerMode": "false",
	}
	if v, ok := special[key]; ok {
		return v
	}
	switch def {
	case "true":
		return "false"
	case "false":
		return "true"
	case "0":
		return "1"
	}
	if n, err := strconv.ParseInt(def, 10, 64); err == nil {
		return strconv.FormatInt(n-1, 10)
	}
	return def + "-x"
}

// TestUpdateBrokerConfigEveryKey: every key but the black-listed ones is
// accepted by UPDATE_BROKER_CONFIG, reported by GET_BROKER_CONFIG, written
// to the -c file, and read back from it by the next start (conf.LoadFile
// and Options.Validate, what `rmq broker -c` does).
func TestUpdateBrokerConfigEveryKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(cfg, []byte("# operator's file\nbrokerName=broker-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, func(o *Options) { o.ConfigFile = cfg })
	_, start, _ := tb.brokerConfig(t)
	black := ConfigBlackList(DefaultConfigBlackList)
	want := map[string]string{}
	for _, key := range conf.Keys(&Options{}) {
		if slices.Contains(black, key) || strings.HasSuffix(key, "Path") && strings.HasPrefix(key, "tls.") {
			continue // black-listed; or rmq's tls.* file paths, which need real files (a missing one is refused as at start)
		}
		v := updateValue(t, key, start[key])
		resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(key+"="+v+"\n"))
		if resp.Code != remoting.Success {
			t.Errorf("update %s=%s: code %d %q", key, v, resp.Code, resp.Remark)
			continue
		}
		want[key] = v
	}
	_, got, _ := tb.brokerConfig(t)
	for key, v := range want {
		if got[key] != v {
			t.Errorf("GET_BROKER_CONFIG %s = %q, want %q", key, got[key], v)
		}
	}
	restarted := DefaultOptions()
	if warnings, err := conf.LoadFile(cfg, &restarted); err != nil || len(warnings) > 0 {
		t.Fatalf("the written file does not load: %v %v", err, warnings)
	}
	if err := restarted.Validate(); err != nil {
		t.Fatalf("the written file does not start: %v", err)
	}
	var b strings.Builder
	conf.Print(&b, &restarted)
	after := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		k, v, _ := strings.Cut(l, "=")
		after[k] = v
	}
	for key, v := range want {
		if after[key] != v {
			t.Errorf("after a restart %s = %q, want %q", key, after[key], v)
		}
	}
	if raw, _ := os.ReadFile(cfg); !strings.HasPrefix(string(raw), "# operator's file\n") {
		t.Errorf("the operator's comment was lost:\n%s", raw)
	}
}

func TestUpdateBrokerConfigBlackList(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.ConfigBlackList = "configBlackList;brokerConfigPath;brokerName" })
	for _, body := range []string{"brokerName=x\n", "rocketmqHome=/x\n", "configBlackList=\n", "brokerConfigPath=/x\n", "traceOn=false\nbrokerName=x\n"} {
		resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(body))
		if resp.Code != remoting.NoPermission || resp.Remark != "Can not update config in black list." {
			t.Errorf("%q: code %d %q, want NO_PERMISSION", body, resp.Code, resp.Remark)
		}
	}
	if o, _, _ := tb.brokerConfig(t); o.BrokerName != tb.opts.BrokerName || !o.TraceOn {
		t.Errorf("a refused update changed the config: brokerName %q traceOn %v", o.BrokerName, o.TraceOn)
	}
	// Without the configured entry brokerName is an ordinary key.
	tb2 := startBroker(t, nil)
	if resp := tb2.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerName=x\n")); resp.Code != remoting.Success {
		t.Errorf("brokerName refused with the default black list: %d %q", resp.Code, resp.Remark)
	}
}
