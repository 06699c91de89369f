package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/metrics"
	"github.com/rmqio/rmq/remoting"
)

// consoleFixture is a name server and broker holding: topic ConsoleT with 5
// messages on queue 0 and a level-1 delayed one delivered to queue 1, group
// ConsoleG that committed 2 of them on queue 0 (lag 4), a level-3 delayed
// message and two timer messages due in 30 minutes and 2
// hours (within the roll window, so each counts at its due time), served with the console on a free port.
type consoleFixture struct {
	url    string
	msgID  string // offset message id of the first ConsoleT message
	uniq   string // its UNIQ_KEY
	broker *testbroker.Broker
}

func newFixture(t *testing.T) *consoleFixture {
	t.Helper()
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.TimerWheelEnable = true })
	b := tc.Broker
	var f consoleFixture
	f.broker = b
	for i := range 5 {
		uniq := fmt.Sprintf("C0A8000100002A9F00000000000000%02d", i)
		resp := b.Client.Send(brokertest.Send{Topic: "ConsoleT", QueueID: 0, Body: []byte(fmt.Sprintf("console body %d", i)),
			Props: brokertest.Props("UNIQ_KEY", uniq, "KEYS", fmt.Sprintf("order-%d", i), "TAGS", "TagC")})
		if resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
		if i == 0 {
			f.msgID, f.uniq = resp.ExtFields["msgId"], uniq
		}
	}
	now := time.Now()
	for _, props := range []string{
		brokertest.Props("DELAY", "1", "UNIQ_KEY", "C0A8000100002A9F00000000000000FF"),
		brokertest.Props("DELAY", "16"), // 30 min: still pending however slowly the browser starts
		brokertest.Props(message.PropTimerDeliverMs, fmt.Sprint(now.Add(30*time.Minute).UnixMilli())),
		brokertest.Props(message.PropTimerDeliverMs, fmt.Sprint(now.Add(2*time.Hour).UnixMilli())),
	} {
		if resp := b.Client.Send(brokertest.Send{Topic: "ConsoleT", QueueID: 1, Body: []byte("later"), Props: props}); resp.Code != remoting.Success {
			t.Fatalf("send delayed: %d %s", resp.Code, resp.Remark)
		}
	}
	b.WaitDispatched()
	b.Broker.Clients().SubGroups.FindOrCreate("ConsoleG")
	b.Broker.Clients().Offsets.Commit("ConsoleG", "ConsoleT", 0, 2)
	testutil.WaitFor(t, 10*time.Second, func() bool { return b.Broker.Timers().Stats().Pending == 2 }, "two pending timers")
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(b.Broker.Schedule().Deliveries().Recent.List()) == 1 }, "the level-1 delivery")
	b.WaitDispatched()

	c := New(b.Broker, nil)
	s, err := metrics.Start(b.Broker, metrics.Options{Addr: "127.0.0.1:0", Routes: c.Routes, OnClose: c.Close, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	f.url = "http://" + s.Addr()
	return &f
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// checkConsole checks the page content a browser shows or the server sends.
func checkConsole(t *testing.T, f *consoleFixture, page string) {
	t.Helper()
	for what, re := range map[string]string{
		"the cluster's broker":           `<td>DefaultCluster</td><td>broker-a</td><td class="n">0</td><td>` + regexp.QuoteMeta(f.broker.Broker.Addr()) + `</td>`,
		"the topic with 6 messages held": `<tr data-topic="ConsoleT"><td>ConsoleT</td>(?:<td[^>]*>[^<]*</td>){4}<td class="n">6</td>`,
		"queue 0's offsets":              `<td>#0</td><td class="n">0</td><td class="n">5</td>`,
		"the group's lag of 4":           `<tr data-group="ConsoleG" data-topic="ConsoleT">.*?<td class="n lag">4</td>`,
		"the level-1 delivery":           `<tr><td>level 1</td><td>ConsoleT</td><td>C0A8000100002A9F00000000000000FF</td>`,
		"level 16 pending 1":             `<tr><td class="n">16</td><td>30m0s</td><td class="n">1</td></tr>`,
		"2 pending timers":               `<p id="timer-pending">2 timer messages pending</p>`,
		"a timer due within 1 h":         `<title>≤ 1h: 1</title>`,
		"a timer due within 6 h":         `<title>≤ 6h: 1</title>`,
		"the SVG chart":                  `<svg id="timer-chart"`,
		"its role, no slave":             `<td class="role">ASYNC_MASTER</td><td class="n replag">-</td><td class="n epoch">-</td><td class="sss">-</td>`,
	} {
		if !regexp.MustCompile(re).MatchString(page) {
			t.Errorf("page lacks %s (%s)", what, re)
		}
	}
}

func TestConsolePage(t *testing.T) {
	f := newFixture(t)
	checkConsole(t, f, fetch(t, f.url+"/"))

	byID := fetch(t, f.url+"/console?id="+f.msgID)
	if !strings.Contains(byID, "console body 0") || !strings.Contains(byID, "order-0") {
		t.Errorf("lookup by offset id %s does not show the message", f.msgID)
	}
	byKey := fetch(t, f.url+"/console?topic=ConsoleT&key=order-3")
	if !strings.Contains(byKey, "console body 3") || strings.Contains(byKey, "console body 2") {
		t.Error("lookup by key order-3 shows the wrong messages")
	}
	byUniq := fetch(t, f.url+"/console?topic=ConsoleT&id="+f.uniq)
	if !strings.Contains(byUniq, "console body 0") {
		t.Error("lookup by UNIQ_KEY does not show the message")
	}
	if none := fetch(t, f.url+"/console?topic=ConsoleT&key=nope"); !strings.Contains(none, `id="lookup-error">no message found`) {
		t.Error("a lookup without a match says nothing")
	}
	if noTopic := fetch(t, f.url+"/console?key=order-1"); !strings.Contains(noTopic, "a key lookup needs the topic") {
		t.Error("a key without a topic is not refused")
	}
}

// findChromium returns a headless-capable Chromium, installing Debian's
// package when it is missing and the test runs as root with apt-get; "" if
// none can be had.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "chromium")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("apt-get install chromium failed: %v\n%s", err, out[max(0, len(out)-2000):])
		return ""
	}
	p, _ := exec.LookPath("chromium")
	return p
}

// TestConsoleInChromium loads the console in headless Chromium: the DOM it
// builds shows the topic, the group's lag and the pending timers, the
// browser logs no console error, and a screenshot is kept.
func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	chrome := findChromium(t)
	if chrome == "" {
		t.Skip("no Chromium: install Debian's chromium package (apt-get install -y chromium chromium-driver) to run this test")
	}
	f := newFixture(t)
	dir := t.TempDir()
	run := func(args ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}
		cmd := exec.CommandContext(ctx, chrome, append(base, args...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	dom, logs := run("--dump-dom", f.url+"/")
	checkConsole(t, f, dom)
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "Uncaught") || strings.Contains(l, ":CONSOLE") && strings.Contains(strings.ToLower(l), "error") {
			t.Errorf("browser console error: %s", l)
		}
	}
	shot := filepath.Join(dir, "console.png")
	run("--screenshot="+shot, "--window-size=1280,2200", "--hide-scrollbars", f.url+"/")
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %v)", shot, err, st)
	}
	t.Logf("console screenshot: %s", shot)
	if os.Getenv("RMQ_CONSOLE_SCREENSHOT") != "" { // keep a copy outside the temp dir
		if b, err := os.ReadFile(shot); err == nil {
			_ = os.WriteFile(os.Getenv("RMQ_CONSOLE_SCREENSHOT"), b, 0o644)
		}
	}
}

// With aclEnable the console answers only an admin account of
// plain_acl.yml (HTTP basic: accessKey, secretKey); 401 otherwise, so that
// message bodies stay behind the ACL the broker's ports enforce.
func TestConsoleBehindACL(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(`accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    admin: false
  - accessKey: rocketmq2
    secretKey: "87654321"
    admin: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := testbroker.Options(t, func(o *broker.Options) { o.AclEnable, o.AclFile = true, aclFile })
	b := testbroker.Start(t, o)
	c := New(b.Broker, nil)
	s, err := metrics.Start(b.Broker, metrics.Options{Addr: "127.0.0.1:0", Routes: c.Routes, OnClose: c.Close, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	get := func(path, user, pass string) int {
		req, err := http.NewRequest("GET", "http://"+s.Addr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, user, pass string
		want             int
	}{
		{"/", "", "", http.StatusUnauthorized},
		{"/console", "", "", http.StatusUnauthorized},
		{"/", "RocketMQ", "12345678", http.StatusUnauthorized}, // not an admin
		{"/", "rocketmq2", "wrong", http.StatusUnauthorized},
		{"/", "rocketmq2", "87654321", http.StatusOK},
		{"/console", "rocketmq2", "87654321", http.StatusOK},
		{"/metrics", "", "", http.StatusOK}, // Prometheus scrapes without credentials, as from the stock exporter
	} {
		if got := get(tc.path, tc.user, tc.pass); got != tc.want {
			t.Errorf("GET %s as %q: %d, want %d", tc.path, tc.user, got, tc.want)
		}
	}
}

// A replicated pair: the master's console lists both brokers of broker-a
// with their roles, the slave's lag once it caught up (0) and the master's
// (its slave's), read from both runtime tables.
func TestConsoleShowsRolesAndLag(t *testing.T) {
	tc := testbroker.StartCluster(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	m := tc.Broker
	s := testbroker.Start(t, testbroker.Options(t, func(o *broker.Options) {
		o.NamesrvAddr = tc.NamesrvAddr()
		o.BrokerRole = "SLAVE"
		o.BrokerID = 1
		o.ListenPort = testutil.FreePortPair(t, m.Opts.ListenPort)
	}))
	testutil.WaitFor(t, 10*time.Second, func() bool { st, _ := m.Broker.HAMasterStats(); return st.Connections == 1 }, "the slave to connect")
	for i := range 3 {
		if r := m.Client.Send(brokertest.Send{Topic: "ConsoleHA", Body: []byte("replicated"), QueueID: 0}); r.Code != remoting.Success {
			t.Fatalf("send %d: %d %q", i, r.Code, r.Remark)
		}
	}
	srv := serveConsole(t, m.Broker)
	row := func(id int, addr, role, lag string) *regexp.Regexp {
		return regexp.MustCompile(`<td>DefaultCluster</td><td>broker-a</td><td class="n">` + fmt.Sprint(id) + `</td><td>` +
			regexp.QuoteMeta(addr) + `</td><td class="role">` + role + `</td><td class="n replag">` + lag + `</td>`)
	}
	var page string
	testutil.WaitFor(t, 10*time.Second, func() bool {
		page = fetch(t, "http://"+srv.Addr()+"/")
		return row(1, s.Broker.Addr(), "SLAVE", "0").MatchString(page)
	}, "the slave's row")
	if !row(0, m.Broker.Addr(), "SYNC_MASTER", "0").MatchString(page) {
		t.Fatalf("the master's row is missing:\n%s", page)
	}
	// The slave gone: its row stays while the name server routes it, without
	// a lag, and the page names the broker that did not answer.
	s.Stop()
	page = fetch(t, "http://"+srv.Addr()+"/")
	if row(1, s.Broker.Addr(), "SLAVE", "0").MatchString(page) {
		t.Fatalf("a stopped slave still shows a lag:\n%s", page)
	}
}

// A controller-mode pair: the master's console lists both members of set
// bs with the role the controller gave (not the configured SLAVE), the
// master epoch on both rows and the sync state set's ids on the master's
// row ("-" on the slave's, which keeps none); a classic broker's row shows
// "-" in both (checkConsole's fixture, TestConsoleShowsRolesAndLag).
func TestConsoleShowsControllerModeRoles(t *testing.T) {
	m, s := testbroker.StartControllerPair(t)
	ms, _ := m.Broker.ControllerState()
	ss, _ := s.Broker.ControllerState()
	srv := serveConsole(t, m.Broker)
	row := func(id int64, addr, role, epoch, set string) *regexp.Regexp {
		return regexp.MustCompile(`<td>c</td><td>bs</td><td class="n">` + fmt.Sprint(id) + `</td><td>` +
			regexp.QuoteMeta(addr) + `</td><td class="role">` + role + `</td><td class="n replag">[^<]*</td><td class="n epoch">` +
			epoch + `</td><td class="sss">` + set + `</td>`)
	}
	epoch := fmt.Sprint(ms.MasterEpoch)
	var page string
	testutil.WaitFor(t, 10*time.Second, func() bool {
		page = fetch(t, "http://"+srv.Addr()+"/")
		return row(ss.BrokerID, s.Broker.Addr(), "SLAVE", epoch, "-").MatchString(page) &&
			row(0, m.Broker.Addr(), "SYNC_MASTER", epoch, "1,2").MatchString(page)
	}, "both members' rows")
}

// serveConsole serves b's console on a free port until the test ends.
func serveConsole(t *testing.T, b *broker.Broker) *metrics.Server {
	t.Helper()
	c := New(b, nil)
	t.Cleanup(c.Close)
	srv, err := metrics.Start(b, metrics.Options{Addr: "127.0.0.1:0", Routes: c.Routes, Logger: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}
