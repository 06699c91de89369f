package broker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/remoting"
)

// brokerConfig fetches GET_BROKER_CONFIG and parses it back with conf.
func (tb *testBroker) brokerConfig(t *testing.T) (Options, map[string]string, dataVersion) {
	t.Helper()
	resp := tb.invoke(remoting.GetBrokerConfig, nil, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_CONFIG: code %d %q", resp.Code, resp.Remark)
	}
	var o Options
	if warnings, err := conf.Load(strings.NewReader(string(resp.Body)), "GET_BROKER_CONFIG", &o); err != nil || len(warnings) > 0 {
		t.Fatalf("body does not load back: %v %v\n%s", err, warnings, resp.Body)
	}
	lines := make(map[string]string)
	for _, l := range strings.Split(strings.TrimSuffix(string(resp.Body), "\n"), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("line %q is not key=value", l)
		}
		lines[k] = v
	}
	var v dataVersion
	if err := json.Unmarshal([]byte(resp.ExtFields["version"]), &v); err != nil {
		t.Fatalf("version header %q: %v", resp.ExtFields["version"], err)
	}
	return o, lines, v
}

func TestGetBrokerConfig(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.BrokerName = "broker-cfg" })
	o, lines, v := tb.brokerConfig(t)
	if o.BrokerName != "broker-cfg" || o.ListenPort != tb.opts.ListenPort || o.MessageDelayLevel != tb.opts.MessageDelayLevel {
		t.Fatalf("config read back = %+v", o)
	}
	for _, k := range conf.Keys(&Options{}) {
		if _, ok := lines[k]; !ok {
			t.Errorf("key %s missing from the body", k)
		}
	}
	if v.Counter != 0 || v.Timestamp <= 0 {
		t.Fatalf("initial version %+v", v)
	}
}

func TestUpdateBrokerConfig(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.StartOnlyKeys = []string{"grpcServerPort"} })
	cases := []struct {
		name       string
		body       string
		wantCode   int32
		wantRemark string // substring
		check      func(t *testing.T, o Options)
	}{
		{name: "runtime key", body: "maxTransferCountOnMessageInMemory=7\n", check: func(t *testing.T, o Options) {
			if o.MaxTransferCountOnMessageInMemory != 7 {
				t.Fatalf("maxTransferCountOnMessageInMemory = %d", o.MaxTransferCountOnMessageInMemory)
			}
		}},
		{name: "several runtime keys, CRLF and a comment", body: "# set by a test\r\ntraceOn=true\r\nregionId=Region-9\r\n", check: func(t *testing.T, o Options) {
			if !o.TraceOn || o.RegionID != "Region-9" {
				t.Fatalf("traceOn %v regionId %q", o.TraceOn, o.RegionID)
			}
		}},
		{name: "unknown key refuses the whole update", body: "traceOn=false\nlistenPot=1\n", wantCode: remoting.SystemError, wantRemark: "listenPot (did you mean listenPort?)"},
		{name: "unknown key refused", body: "noSuchKey=1\n", wantCode: remoting.SystemError, wantRemark: "noSuchKey"},
		{name: "another part's key refused", body: "grpcServerPort=1\n", wantCode: remoting.SystemError, wantRemark: "grpcServerPort is read at start only"},
		{name: "black-listed key", body: "rocketmqHome=/x\n", wantCode: remoting.NoPermission, wantRemark: "Can not update config in black list."},
		{name: "a value a start refuses", body: "brokerRole=BACKUP\n", wantCode: remoting.SystemError, wantRemark: "is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE"},
		{name: "bad value", body: "maxTransferCountOnMessageInMemory=lots\n", wantCode: remoting.SystemError, wantRemark: "maxTransferCountOnMessageInMemory"},
		{name: "invalid value", body: "brokerPermission=9\n", wantCode: remoting.SystemError, wantRemark: "brokerPermission 9"},
		{name: "start-only key kept for the next start", body: "brokerName=other\n", check: func(t *testing.T, o Options) {
			if o.BrokerName != "other" {
				t.Fatalf("brokerName = %q", o.BrokerName)
			}
		}},
	}
	counter := int64(0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, before := tb.brokerConfig(t)
			resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(tc.body))
			if resp.Code != tc.wantCode || !strings.Contains(resp.Remark, tc.wantRemark) {
				t.Fatalf("code %d %q, want %d containing %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
			o, _, after := tb.brokerConfig(t)
			if tc.wantCode != remoting.Success {
				if after != before {
					t.Fatalf("a refused update changed the version: %+v -> %+v", before, after)
				}
				if o.TraceOn != (counter >= 2) || o.ListenPort != tb.opts.ListenPort {
					t.Fatalf("a refused update changed the config: %+v", o)
				}
				return
			}
			counter++
			if after.Counter != counter {
				t.Fatalf("version counter %d, want %d", after.Counter, counter)
			}
			tc.check(t, o)
		})
	}
}

func TestUpdateBrokerPermissionTakesEffect(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "Perm", body: []byte("x")})
	tb.waitDispatched()
	pull := func() int32 {
		return tb.pull(pullArgs{topic: "Perm", sysFlag: pullFlagSubscription, subscription: "*", maxMsgs: 1}).Code
	}
	if code := pull(); code != remoting.Success {
		t.Fatalf("pull before: %d", code)
	}
	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=2\n")); resp.Code != remoting.Success {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if code := pull(); code != remoting.NoPermission {
		t.Fatalf("pull from a write-only broker: %d, want %d", code, remoting.NoPermission)
	}
	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=6\n")); resp.Code != remoting.Success {
		t.Fatalf("update back: %d %q", resp.Code, resp.Remark)
	}
	if code := pull(); code != remoting.Success {
		t.Fatalf("pull after restoring the permission: %d", code)
	}
}

func TestPropertyKeys(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{name: "plain", body: "a=1\nb=2\n", want: []string{"a", "b"}},
		{name: "separators", body: "a:1\nb 2\n  c=3", want: []string{"a", "b", "c"}},
		{name: "comments and blanks", body: "#x=1\n!y=2\n\n   \nz=3", want: []string{"z"}},
		{name: "continuation line is a value", body: "a=1 \\\n  b=2\nc=3", want: []string{"a", "c"}},
		{name: "escaped separator stays in the key", body: `a\=b=1`, want: []string{`a\=b`}},
		{name: "repeats listed once", body: "a=1\na=2", want: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := conf.PropertyKeys([]byte(tc.body))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("propertyKeys = %q, want %q", got, tc.want)
			}
		})
	}
}
