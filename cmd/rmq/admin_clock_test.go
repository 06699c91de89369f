package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
)

// queued is how many messages topic's queues hold (consume-queue units).
func (c *adminCluster) queued(t *testing.T, topic string) int64 {
	t.Helper()
	rows, err := c.adm.TopicStatus(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rows {
		n += r.MaxOffset - r.MinOffset
	}
	return n
}

// rmq admin fastForward -b / -c against a broker with clockControlEnable:
// a delay level 16 message and a 2-hour timer are delivered by the jumps
// that reach them and not before; durations parse as Go durations and
// plain milliseconds.
func TestAdminFastForward(t *testing.T) {
	c := startAdminClusterWith(t, func(o *broker.Options) { o.ClockControlEnable = true })
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := c.runAdmin(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	run("updateTopic", "-c", "DefaultCluster", "-t", "FFT", "-r", "1", "-w", "1")
	c.waitRoute(t, "FFT")
	ctx := context.Background()
	timerAt := time.Now().Add(2 * time.Hour).UnixMilli() // the message clock starts at the wall clock
	for _, p := range []map[string]string{{"DELAY": "16"}, {"TIMER_DELIVER_MS": strconv.FormatInt(timerAt, 10)}} {
		if _, err := c.adm.SendMessage(ctx, admin.SendMessageSpec{Topic: "FFT", Body: []byte("later"), QueueID: 0, BrokerName: "broker-a", Properties: p}); err != nil {
			t.Fatal(err)
		}
	}
	out := run("fastForward", "-b", c.broker, "-d", "29m")
	if !strings.Contains(out, c.broker+" fast-forwarded 29m0s: broker time ") {
		t.Fatalf("fastForward printed %q", out)
	}
	if n := c.queued(t, "FFT"); n != 0 {
		t.Fatalf("%d messages on FFT after 29 min, want none", n)
	}
	run("fastForward", "-c", "DefaultCluster", "-d", "120000") // 2 min, in ms
	if n := c.queued(t, "FFT"); n != 1 {
		t.Fatalf("%d messages on FFT after 31 min, want the delay level 16 one", n)
	}
	out = run("fastForward", "-c", "DefaultCluster", "-d", "2h", "--json")
	if !strings.Contains(out, `"brokerAddr": "`+c.broker+`"`) || !strings.Contains(out, `"clockOffsetMs"`) {
		t.Fatalf("fastForward --json printed %q", out)
	}
	if n := c.queued(t, "FFT"); n != 2 {
		t.Fatalf("%d messages on FFT after 2h31m, want both", n)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"fastForward", "-b", c.broker, "-d", "soon"}, "neither a Go duration"},
		{[]string{"fastForward", "-b", c.broker, "-d", "-5m"}, "negative"},
		{[]string{"fastForward", "-d", "5m"}, "one of -b (broker address) and -c (cluster name) is required"},
		{[]string{"fastForward", "-b", c.broker, "-c", "DefaultCluster", "-d", "5m"}, "exclude each other"},
		{[]string{"fastForward", "-b", c.broker}, `"duration"`},
		{[]string{"fastForward", "-c", "NoSuchCluster", "-d", "5m"}, "NoSuchCluster"},
	} {
		code, out, errOut := c.runAdmin(t, bad.args...)
		if code == 0 || !strings.Contains(out+errOut, bad.want) {
			t.Errorf("%v: exit %d, want an error with %q\n%s%s", bad.args, code, bad.want, out, errOut)
		}
	}
}

// Without clockControlEnable the broker refuses: NO_PERMISSION and the key
// to set, and a non-zero exit.
func TestAdminFastForwardRefused(t *testing.T) {
	c := startAdminCluster(t)
	code, out, errOut := c.runAdmin(t, "fastForward", "-b", c.broker, "-d", "30m")
	if code == 0 || !strings.Contains(errOut, "CLOCK_FAST_FORWARD(9100) with CODE 16 (NO_PERMISSION)") || !strings.Contains(errOut, "clockControlEnable=true") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// With the ACL on, a fast-forward needs a signed admin account: a global
// white address, enough for the other requests, is not.
func TestAdminFastForwardNeedsAdminWithACL(t *testing.T) {
	aclFile := writeACLFile(t, "globalWhiteRemoteAddresses:\n  - 127.0.0.1\naccounts:\n"+
		"  - accessKey: ffadmin\n    secretKey: ffsecret1\n    admin: true\n"+
		"  - accessKey: ffuser01\n    secretKey: ffsecret2\n    admin: false\n")
	c := startAdminClusterWith(t, func(o *broker.Options) { o.AclEnable, o.AclFile, o.ClockControlEnable = true, aclFile, true })
	for _, creds := range [][]string{nil, {"--access-key", "ffuser01", "--secret-key", "ffsecret2"}, {"--access-key", "ffadmin", "--secret-key", "wrong1234"}} {
		code, _, errOut := c.runAdmin(t, append([]string{"fastForward", "-b", c.broker, "-d", "1m"}, creds...)...)
		if code == 0 || !strings.Contains(errOut, "NO_PERMISSION") || !strings.Contains(errOut, "needs an admin account") {
			t.Errorf("%v: exit %d, want NO_PERMISSION for want of an admin account\n%s", creds, code, errOut)
		}
	}
	if code, out, errOut := c.runAdmin(t, "fastForward", "-b", c.broker, "-d", "1m", "--access-key", "ffadmin", "--secret-key", "ffsecret1"); code != 0 {
		t.Fatalf("signed by the admin: exit %d\n%s%s", code, out, errOut)
	}
}
