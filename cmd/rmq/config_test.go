package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
)

// runCLI runs the command in-process; only commands that exit before
// starting a server (-p, -m, errors, version) are run this way.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code = run(ctx, func() {}, append([]string{"rmq"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrintConfig(t *testing.T) {
	brokerConf := writeFile(t, "broker.conf", "brokerName = fromFile\nlistenPort = 30911\nstorePathRootDir = /from/file\nnamesrvAddr = 10.0.0.1:9876\nbrokerRole = SYNC_MASTER\n")
	nsConf := writeFile(t, "namesrv.conf", "listenPort=19876\norderMessageEnable=true\n")
	nsLimits := writeFile(t, "limits.conf", "bindAddress=127.0.0.1\nserverChannelMaxIdleTimeSeconds=30\nserverMaxConnections=100\nserverMaxInflightBytes=33554432\n")
	brokerLimits := writeFile(t, "broker.conf", "bindAddress=127.0.0.2\nserverChannelMaxIdleTimeSeconds=0\nserverMaxConnections=7\n")
	tests := []struct {
		name    string
		env     string // NAMESRV_ADDR
		args    []string
		want    []string // lines that must be printed
		notWant []string // substrings that must not be
		warning string   // the one expected warning ("" = none)
	}{
		{
			name: "broker defaults",
			args: []string{"broker", "-p"},
			want: []string{"brokerName=broker-a", "listenPort=10911", "storePathRootDir=" + broker.DefaultStoreDir(), "brokerClusterName=DefaultCluster", "brokerRole=ASYNC_MASTER", "deleteWhen=04", "fileReservedTime=72", "namesrvAddr="},
		},
		{
			name: "broker file",
			args: []string{"broker", "-c", brokerConf, "-p"},
			want: []string{"brokerName=fromFile", "listenPort=30911", "storePathRootDir=/from/file", "namesrvAddr=10.0.0.1:9876", "brokerRole=SYNC_MASTER"},
		},
		{
			name: "broker flags win over file",
			args: []string{"broker", "-c", brokerConf, "-n", "127.0.0.1:1234;127.0.0.2:1234", "--store-dir", "/flag/dir", "--listen-port", "20911", "-p"},
			want: []string{"brokerName=fromFile", "listenPort=20911", "storePathRootDir=/flag/dir", "namesrvAddr=127.0.0.1:1234;127.0.0.2:1234"},
		},
		{
			name: "NAMESRV_ADDR is the default",
			env:  "127.0.0.9:9876",
			args: []string{"broker", "-p"},
			want: []string{"namesrvAddr=127.0.0.9:9876"},
		},
		{
			name: "file wins over NAMESRV_ADDR",
			env:  "127.0.0.9:9876",
			args: []string{"broker", "-c", brokerConf, "-p"},
			want: []string{"namesrvAddr=10.0.0.1:9876"},
		},
		{
			name: "-n wins over NAMESRV_ADDR",
			env:  "127.0.0.9:9876",
			args: []string{"broker", "-n", "127.0.0.1:1", "-p"},
			want: []string{"namesrvAddr=127.0.0.1:1"},
		},
		{
			name:    "broker important only",
			args:    []string{"broker", "-c", brokerConf, "-m"},
			want:    []string{"brokerName=fromFile", "namesrvAddr=10.0.0.1:9876", "flushDiskType=ASYNC_FLUSH", "brokerRole=SYNC_MASTER"},
			notWant: []string{"maxMessageSize=", "longPollingEnable="},
		},
		{
			name:    "standalone",
			args:    []string{"standalone", "-c", brokerConf, "--store-dir", "/s", "--namesrv-port", "19999", "-p"},
			want:    []string{"# name server", "listenPort=19999", "kvConfigPath=/s/namesrv/kvConfig.json", "# broker", "listenPort=30911", "storePathRootDir=/s", "namesrvAddr=127.0.0.1:19999", "brokerName=fromFile"},
			warning: "ignored=10.0.0.1:9876",
		},
		{
			name: "standalone defaults",
			args: []string{"standalone", "-p"},
			want: []string{"listenPort=9876", "listenPort=10911", "storePathRootDir=" + broker.DefaultStoreDir(), "namesrvAddr=127.0.0.1:9876"},
		},
		{
			name:    "standalone file store dir",
			args:    []string{"standalone", "-c", brokerConf, "-p"},
			want:    []string{"storePathRootDir=/from/file", "kvConfigPath=/from/file/namesrv/kvConfig.json"},
			warning: "ignored=10.0.0.1:9876",
		},
		{
			name: "namesrv defaults",
			args: []string{"namesrv", "-p"},
			want: []string{"listenPort=9876", "orderMessageEnable=false", "kvConfigPath="},
		},
		{
			name: "namesrv file and flag",
			args: []string{"namesrv", "-c", nsConf, "--listen-port", "29876", "-p"},
			want: []string{"listenPort=29876", "orderMessageEnable=true"},
		},
		{
			name:    "namesrv important",
			args:    []string{"namesrv", "-c", nsConf, "-m"},
			want:    []string{"listenPort=19876", "orderMessageEnable=true"},
			notWant: []string{"#"},
		},
		{
			name: "namesrv connection defaults",
			args: []string{"namesrv", "-p"},
			want: []string{"bindAddress=0.0.0.0", "serverChannelMaxIdleTimeSeconds=120", "serverMaxConnections=0", "serverMaxInflightBytes=268435456"},
		},
		{
			name: "namesrv connection keys",
			args: []string{"namesrv", "-c", nsLimits, "-p"},
			want: []string{"bindAddress=127.0.0.1", "serverChannelMaxIdleTimeSeconds=30", "serverMaxConnections=100", "serverMaxInflightBytes=33554432"},
		},
		{
			name: "namesrv --bind-address wins over the file",
			args: []string{"namesrv", "-c", nsLimits, "--bind-address", "127.0.0.3", "-m"},
			want: []string{"bindAddress=127.0.0.3"},
		},
		{
			name: "broker connection keys and flag",
			args: []string{"broker", "-c", brokerLimits, "-p"},
			want: []string{"bindAddress=127.0.0.2", "serverChannelMaxIdleTimeSeconds=0", "serverMaxConnections=7", "serverMaxInflightBytes=268435456"},
		},
		{
			name:    "standalone: the name server binds where the broker does",
			args:    []string{"standalone", "-c", brokerLimits, "--bind-address", "127.0.0.1", "-p"},
			want:    []string{"bindAddress=127.0.0.1", "serverMaxConnections=7", "namesrvAddr=127.0.0.1:9876"},
			notWant: []string{"bindAddress=0.0.0.0", "bindAddress=127.0.0.2"},
		},
		{
			name: "standalone: a specific bind address is the registration address",
			args: []string{"standalone", "-c", brokerLimits, "-p"},
			want: []string{"namesrvAddr=127.0.0.2:9876"},
		},
		{
			name: "shipped broker.conf",
			args: []string{"broker", "-c", "../../conf/broker.conf", "-p"},
			want: []string{"brokerName=broker-a", "brokerIP1=127.0.0.1", "flushDiskType=ASYNC_FLUSH", "fileReservedTime=48"},
		},
		{
			name: "shipped namesrv.conf",
			args: []string{"namesrv", "-c", "../../conf/namesrv.conf", "-p"},
			want: []string{"listenPort=9876"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NAMESRV_ADDR", tt.env)
			code, out, errOut := runCLI(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			switch n := strings.Count(errOut, "WRN"); {
			case tt.warning == "" && n > 0:
				t.Errorf("unexpected warnings:\n%s", errOut)
			case tt.warning != "" && (n != 1 || !strings.Contains(errOut, tt.warning)):
				t.Errorf("want one warning with %q, got:\n%s", tt.warning, errOut)
			}
			lines := strings.Split(out, "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("output lacks line %q:\n%s", w, out)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(out, nw) {
					t.Errorf("output has %q:\n%s", nw, out)
				}
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	badValue := writeFile(t, "bad.conf", "brokerName=x\nbrokerId=zero\n")
	// A slave's brokerId must be > 0 (stock BrokerStartup exits with -3).
	slave := writeFile(t, "slave.conf", "brokerRole=SLAVE\nbrokerId=0\n")
	badRole := writeFile(t, "role.conf", "brokerRole=LEADER\n")
	badNs := writeFile(t, "ns.conf", "listenPort=port\n")
	// The levels parse as a string; the broker refuses them before it opens
	// the store (which is a temporary directory should it not).
	badLevels := writeFile(t, "levels.conf", "storePathRootDir="+t.TempDir()+"\nmessageDelayLevel=1s 5x\n")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "bad value with position", args: []string{"broker", "-c", badValue}, wantErr: badValue + `:2: brokerId: invalid int64 "zero"`},
		{name: "bad value even with -p", args: []string{"broker", "-c", badValue, "-p"}, wantErr: badValue + ":2: brokerId"},
		{name: "missing file", args: []string{"broker", "-c", "/nonexistent/broker.conf"}, wantErr: "no such file"},
		{name: "slave refused", args: []string{"broker", "-c", slave}, wantErr: "brokerId 0: a SLAVE's brokerId must be > 0"},
		{name: "unknown role", args: []string{"standalone", "-c", badRole}, wantErr: `brokerRole "LEADER"`},
		{name: "bad name server address", args: []string{"broker", "-n", "localhost"}, wantErr: "the name server address [localhost] is illegal"},
		{name: "bad name server port", args: []string{"broker", "-n", "127.0.0.1:1;127.0.0.1:x"}, wantErr: "[127.0.0.1:x] is illegal"},
		{name: "bad delay levels", args: []string{"broker", "-c", badLevels}, wantErr: `messageDelayLevel: schedule: bad messageDelayLevel: level 2 "5x"`},
		{name: "bad namesrv file", args: []string{"namesrv", "-c", badNs}, wantErr: badNs + `:1: listenPort: invalid int "port"`},
		{name: "bad log level", args: []string{"namesrv", "--log-level", "loud"}, wantErr: `bad --log-level "loud"`},
		{name: "unknown flag", args: []string{"broker", "--bogus"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("stderr lacks %q:\n%s", tt.wantErr, errOut)
			}
		})
	}
}

func TestUnknownKeyWarning(t *testing.T) {
	path := writeFile(t, "broker.conf", "brokerName=b\n\nmagicKnob=1\n")
	code, out, errOut := runCLI(t, "broker", "-c", path, "-p")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := path + `:3: unknown key "magicKnob"`; !strings.Contains(errOut, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut)
	}
	if !strings.Contains(out, "brokerName=b\n") {
		t.Fatalf("config not applied:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "rmq dev (RocketMQ 4.9.8 compatible") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// TestCheckBrokerIDByRole: as BrokerStartup, a master's brokerId is forced
// to 0 whatever the file says, a SLAVE keeps its own.
func TestCheckBrokerIDByRole(t *testing.T) {
	for _, c := range []struct {
		role     string
		id, want int64
	}{
		{broker.RoleAsyncMaster, 3, 0}, {broker.RoleSyncMaster, 1, 0}, {broker.RoleSlave, 2, 2},
	} {
		s := defaultBrokerSettings()
		s.opts.BrokerRole, s.opts.BrokerID = c.role, c.id
		if err := s.check(); err != nil {
			t.Fatalf("%s: %v", c.role, err)
		}
		if s.opts.BrokerID != c.want {
			t.Errorf("%s brokerId %d: checked as %d, want %d", c.role, c.id, s.opts.BrokerID, c.want)
		}
	}
}
