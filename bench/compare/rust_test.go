package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// tomlTables reads the "key = value" lines of the flat TOML rustBrokerTOML
// writes, by table name.
func tomlTables(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	table := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			table = strings.Trim(l, "[]")
			if _, dup := out[table]; dup {
				t.Fatalf("table [%s] twice", table)
			}
			out[table] = map[string]string{}
		default:
			k, v, ok := strings.Cut(l, " = ")
			if !ok || table == "" {
				t.Fatalf("line %q is not a key = value line of a table", l)
			}
			if _, dup := out[table][k]; dup {
				t.Fatalf("key %s twice in [%s]", k, table)
			}
			out[table][k] = v
		}
	}
	return out
}

func TestRustBrokerTOML(t *testing.T) {
	got := tomlTables(t, rustBrokerTOML("/tmp/w", 40001, 40010, syncFlush))
	want := map[string]map[string]string{
		"broker": {
			"listenPort": "40010", "brokerIp1": `"127.0.0.1"`, "namesrvAddr": `"127.0.0.1:40001"`,
			"storePathRootDir": `"/tmp/w/store"`, "autoCreateTopicEnable": "true",
		},
		"broker.brokerIdentity":     {"brokerName": `"broker-a"`, "brokerClusterName": `"DefaultCluster"`, "brokerId": "0"},
		"broker.brokerServerConfig": {"bindAddress": `"127.0.0.1"`},
		"store": {
			"storePathRootDir": `"/tmp/w/store"`, "brokerRole": `"ASYNC_MASTER"`, "flushDiskType": `"SYNC_FLUSH"`,
			"deleteWhen": "4", "fileReservedTime": "48", "haListenAddress": `"127.0.0.1"`, "haListenPort": "40011",
		},
	}
	if len(got) != len(want) {
		t.Fatalf("tables %v, want %d", got, len(want))
	}
	for table, kv := range want {
		if len(got[table]) != len(kv) {
			t.Errorf("[%s] = %v, want %v", table, got[table], kv)
		}
		for k, v := range kv {
			if got[table][k] != v {
				t.Errorf("[%s] %s = %q, want %q", table, k, got[table][k], v)
			}
		}
	}
}

func TestRustBrokerArgvRefusesExtraLines(t *testing.T) {
	tg := &target{name: rustName, rust: "/nowhere"}
	if _, _, err := tg.brokerArgv(t.TempDir(), 1, 5, asyncFlush, []string{"enablePropertyFilter=true"}); err == nil {
		t.Fatal("broker.conf lines without a TOML mapping were accepted")
	}
	argv, _, err := tg.brokerArgv(t.TempDir(), 1, 5, asyncFlush, nil)
	if err != nil || argv[0] != "/nowhere/"+rustBroker {
		t.Fatalf("argv %v, %v", argv, err)
	}
}

func TestWorkloadID(t *testing.T) {
	for in, want := range map[string]string{
		"4 delay levels 2-3, 100000 msgs at 10000/s": "4",
		"a drain a 1000000-message backlog":          "a",
		"7":                                          "7",
		"":                                           "",
	} {
		if got := workloadID(in); got != want {
			t.Errorf("workloadID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFillRust(t *testing.T) {
	nan := math.NaN()
	r := &runner{cfg: &config{}, log: &strings.Builder{}, m: map[string]measures{rustName: {"w1.tps": 20000}}}
	rows := []row{
		{workload: "1 send 1 KiB", metric: "throughput", rmq: 50000, java: 25000, key: "w1.tps"},
		{workload: "1 send 1 KiB", metric: "p99", rmq: 1, java: 2, key: "w1.p99"},
		{workload: "4 delay levels", metric: "lateness p99", rmq: 3, java: 30, key: "w4.p99"},
		{workload: "g no-op", metric: "computed", rmq: 1, java: nan},
	}
	r.rustFailed(&target{name: rustName}, "4", errors.New("compare: no delivery\nsecond line"))
	if r.failed["4"] != "compare: no delivery" {
		t.Errorf("failure recorded as %q", r.failed["4"])
	}
	r.fillRust(rows, &target{name: rustName})
	want := [][]string{{"20000", "2.50×"}, {"—", "—"}, {"failed", "—"}, {"—", "—"}}
	for i, w := range want {
		got := rows[i].rustCells()
		if got[0] != w[0] || got[1] != w[1] {
			t.Errorf("row %d: rust cells %v, want %v", i, got, w)
		}
	}
	var md strings.Builder
	writeMarkdown(&md, rows)
	lines := strings.Split(md.String(), "\n")
	if !strings.HasSuffix(lines[0], "| met | Rust | rmq/Rust |") || !strings.HasSuffix(lines[1], "|---|---:|---:|") {
		t.Errorf("markdown header:\n%s\n%s", lines[0], lines[1])
	}

	plain := []row{{workload: "1", metric: "m", rmq: 1, java: 1, key: "w1.tps"}}
	r.fillRust(plain, nil)
	var txt strings.Builder
	writeText(&txt, plain)
	if strings.Contains(txt.String(), "Rust") {
		t.Errorf("a table without rocketmq-rust has its columns:\n%s", txt.String())
	}
}

func TestUndelivered(t *testing.T) {
	tg := &target{name: rustName}
	r := &runner{cfg: &config{}, log: &strings.Builder{}, m: map[string]measures{rustName: {
		"w6.lost": 10, "w6.received": 0, "w6.p99": 0, "w6.max": 0, "w6.drain": 0, "w6.cpu": 1,
		"w5.lost": 2, "w5.received": 8, "w5.p99": 3,
	}}}
	if err := r.undelivered(tg, "w5"); err != nil {
		t.Fatalf("partly delivered: %v", err)
	}
	if _, ok := r.m[rustName]["w5.p99"]; !ok {
		t.Error("the lateness of a partly delivered workload was dropped")
	}
	if err := r.undelivered(tg, "w6"); !errors.Is(err, errUndelivered) {
		t.Fatalf("nothing delivered: %v", err)
	}
	for _, k := range []string{"w6.p99", "w6.max", "w6.drain"} {
		if _, ok := r.m[rustName][k]; ok {
			t.Errorf("%s kept though nothing was delivered", k)
		}
	}
	if r.m[rustName]["w6.lost"] != 10 || r.m[rustName]["w6.cpu"] != 1 {
		t.Errorf("lost or CPU dropped: %v", r.m[rustName])
	}
}
