package broker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// TestPullStatuses maps every store outcome a client can cause to the
// stock pull code, with all four header fields on each.
func TestPullStatuses(t *testing.T) {
	tb := startBroker(t, nil)
	for i, tag := range []string{"a", "b", "a"} {
		tb.mustSend(sendArgs{topic: "PullT", body: []byte("m" + strconv.Itoa(i)), props: coreProps("TAGS", tag)})
	}
	tb.mustSend(sendArgs{topic: "Empty", body: []byte("x"), queueID: 1}) // queue 0 of Empty stays empty
	tb.waitDispatched()

	const subFlag = pullFlagSubscription
	cases := []struct {
		name       string
		args       pullArgs
		wantCode   int32
		wantNext   int64
		wantBodies []string
	}{
		{name: "found all", args: pullArgs{topic: "PullT", sysFlag: subFlag, subscription: "*"},
			wantCode: remoting.Success, wantNext: 3, wantBodies: []string{"m0", "m1", "m2"}},
		{name: "max messages", args: pullArgs{topic: "PullT", sysFlag: subFlag, maxMsgs: 2},
			wantCode: remoting.Success, wantNext: 2, wantBodies: []string{"m0", "m1"}},
		{name: "tag filter", args: pullArgs{topic: "PullT", sysFlag: subFlag, subscription: "a || c"},
			wantCode: remoting.Success, wantNext: 3, wantBodies: []string{"m0", "m2"}},
		{name: "all filtered out", args: pullArgs{topic: "PullT", offset: 1, maxMsgs: 1, sysFlag: subFlag, subscription: "zzz"},
			wantCode: remoting.PullRetryImmediately, wantNext: 3},
		{name: "caught up", args: pullArgs{topic: "PullT", offset: 3, sysFlag: subFlag},
			wantCode: remoting.PullNotFound, wantNext: 3},
		{name: "overflow badly", args: pullArgs{topic: "PullT", offset: 10, sysFlag: subFlag},
			wantCode: remoting.PullOffsetMoved, wantNext: 3},
		{name: "empty queue at 0", args: pullArgs{topic: "Empty", sysFlag: subFlag},
			wantCode: remoting.PullNotFound, wantNext: 0},
		{name: "empty queue past 0", args: pullArgs{topic: "Empty", offset: 5, sysFlag: subFlag},
			wantCode: remoting.PullOffsetMoved, wantNext: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.pull(tc.args)
			if resp.Code != tc.wantCode {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
			}
			if got := coreExtInt(t, resp, "nextBeginOffset"); got != tc.wantNext {
				t.Errorf("nextBeginOffset %d, want %d", got, tc.wantNext)
			}
			if coreExtInt(t, resp, "suggestWhichBrokerId") != 0 || coreExtInt(t, resp, "minOffset") != 0 {
				t.Errorf("header %v", resp.ExtFields)
			}
			coreExtInt(t, resp, "maxOffset")
			if tc.wantCode != remoting.Success {
				if len(resp.Body) != 0 {
					t.Errorf("body of %d bytes on code %d", len(resp.Body), resp.Code)
				}
				return
			}
			var got []string
			for _, m := range coreRecords(t, resp.Body) {
				got = append(got, string(m.Body))
			}
			if strings.Join(got, ",") != strings.Join(tc.wantBodies, ",") {
				t.Errorf("bodies %v, want %v", got, tc.wantBodies)
			}
		})
	}
}

// TestPullRefusals covers the checks before the store is read.
func TestPullRefusals(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.AutoCreateSubscriptionGroup = false })
	tb.mustSend(sendArgs{topic: "PullT", body: []byte("x")})
	tb.Topics().Update(&topicgroup.TopicConfig{TopicName: "WriteOnly", ReadQueueNums: 1, WriteQueueNums: 1, Perm: topicgroup.PermWrite, TopicFilterType: filterTypeSingleTag})
	open := startBroker(t, nil)
	open.mustSend(sendArgs{topic: "PullT", body: []byte("x")})
	open.Topics().Update(&topicgroup.TopicConfig{TopicName: "WriteOnly", ReadQueueNums: 1, WriteQueueNums: 1, Perm: topicgroup.PermWrite, TopicFilterType: filterTypeSingleTag})

	cases := []struct {
		name       string
		tb         *testBroker
		args       pullArgs
		drop       string
		wantCode   int32
		wantRemark string
	}{
		{name: "missing field", tb: open, args: pullArgs{topic: "PullT"}, drop: "commitOffset",
			wantCode: remoting.SystemError, wantRemark: "the custom field <commitOffset> is null"},
		{name: "unknown group", tb: tb, args: pullArgs{topic: "PullT", sysFlag: pullFlagSubscription},
			wantCode: remoting.SubscriptionGroupNotExist, wantRemark: "subscription group [CG] does not exist"},
		{name: "unknown topic", tb: open, args: pullArgs{topic: "Nope", sysFlag: pullFlagSubscription},
			wantCode: remoting.TopicNotExist, wantRemark: "topic[Nope] not exist, apply first please!"},
		{name: "not readable", tb: open, args: pullArgs{topic: "WriteOnly", sysFlag: pullFlagSubscription},
			wantCode: remoting.NoPermission, wantRemark: "the topic[WriteOnly] pulling message is forbidden"},
		{name: "bad queue", tb: open, args: pullArgs{topic: "PullT", queueID: 4, sysFlag: pullFlagSubscription},
			wantCode: remoting.SystemError, wantRemark: "queueId[4] is illegal, topic:[PullT] topicConfig.readQueueNums:[4]"},
		{name: "no heartbeat subscription", tb: open, args: pullArgs{topic: "PullT"},
			wantCode: remoting.SubscriptionNotExist, wantRemark: "the consumer's subscription not exist"},
		{name: "sql92", tb: open, args: pullArgs{topic: "PullT", sysFlag: pullFlagSubscription, subscription: "a > 1"},
			wantCode: remoting.SystemError, wantRemark: "The broker does not support consumer to filter message by SQL92"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ext := tc.args.ext()
			delete(ext, tc.drop)
			if tc.name == "sql92" {
				ext["expressionType"] = "SQL92"
			}
			resp := tc.tb.invoke(remoting.PullMessage, ext, nil)
			if resp.Code != tc.wantCode || !strings.Contains(resp.Remark, tc.wantRemark) {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
		})
	}
}

// TestPullHeartbeatSubscription filters by the subscription a heartbeat
// registered and refuses pulls newer than it.
func TestPullHeartbeatSubscription(t *testing.T) {
	tb := startBroker(t, nil)
	for _, tag := range []string{"x", "y"} {
		tb.mustSend(sendArgs{topic: "HB", body: []byte(tag), props: coreProps("TAGS", tag)})
	}
	tb.waitDispatched()
	hb := remoting.HeartbeatData{ClientID: "c1", ConsumerDataSet: []*remoting.ConsumerData{{
		GroupName: "HG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		SubscriptionDataSet: []*remoting.SubscriptionData{{
			Topic: "HB", SubString: "y", TagsSet: []string{"y"}, CodeSet: []remoting.FlexInt64{remoting.FlexInt64(message.TagsHash("y"))},
			ExpressionType: "TAG", SubVersion: 100,
		}},
	}}}
	if resp := tb.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	resp := tb.pull(pullArgs{group: "HG", topic: "HB", subVersion: 100})
	if resp.Code != remoting.Success {
		t.Fatalf("pull: %d %q", resp.Code, resp.Remark)
	}
	if msgs := coreRecords(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "y" {
		t.Fatalf("got %d messages, want only y", len(msgs))
	}
	if resp := tb.pull(pullArgs{group: "HG", topic: "HB", subVersion: 101}); resp.Code != remoting.SubscriptionNotLatest {
		t.Fatalf("newer subVersion: %d %q", resp.Code, resp.Remark)
	}
}

// TestPullCommitsOffset stores commitOffset only when the flag is set.
func TestPullCommitsOffset(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "CT", body: []byte("x")})
	tb.waitDispatched()
	tb.pull(pullArgs{group: "G", topic: "CT", sysFlag: pullFlagSubscription, commitOffset: 9})
	if off, ok := tb.clients.Offsets.Query("G", "CT", 0); ok {
		t.Fatalf("offset %d committed without the flag", off)
	}
	tb.pull(pullArgs{group: "G", topic: "CT", sysFlag: pullFlagSubscription | pullFlagCommitOffset, commitOffset: 1})
	if off, ok := tb.clients.Offsets.Query("G", "CT", 0); !ok || off != 1 {
		t.Fatalf("committed %d %t, want 1", off, ok)
	}
}

// pullAsync sends a pull and delivers its response (or nil on error) later.
func (tb *testBroker) pullAsync(a pullArgs) <-chan *remoting.Command {
	ch := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := tb.json.Invoke(ctx, tb.Addr(), remoting.NewRequest(remoting.PullMessage, a.ext(), nil))
		if err != nil {
			resp = nil
		}
		ch <- resp
	}()
	return ch
}

func coreAwait(t *testing.T, ch <-chan *remoting.Command, within time.Duration) *remoting.Command {
	t.Helper()
	select {
	case resp := <-ch:
		if resp == nil {
			t.Fatal("pull failed")
		}
		return resp
	case <-time.After(within):
		t.Fatalf("no pull answer within %v", within)
		return nil
	}
}

// TestLongPollWokenBySend parks a pull on an empty queue and answers it as
// soon as a matching message arrives; a non-matching one keeps it parked.
func TestLongPollWokenBySend(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "LP", body: []byte("first")})
	tb.waitDispatched()

	start := time.Now()
	ch := tb.pullAsync(pullArgs{topic: "LP", offset: 1, sysFlag: pullFlagSubscription | pullFlagSuspend,
		suspendMillis: 15000, subscription: "want"})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.pullHold.held() == 1 }, "the pull to be held")

	tb.mustSend(sendArgs{topic: "LP", body: []byte("other"), props: coreProps("TAGS", "other")})
	tb.mustSend(sendArgs{topic: "LP", body: []byte("wanted"), props: coreProps("TAGS", "want")})
	resp := coreAwait(t, ch, 10*time.Second)
	if resp.Code != remoting.Success {
		// A wake-up by the "other" message would re-run the pull before
		// "wanted" exists and answer PULL_RETRY_IMMEDIATELY.
		t.Fatalf("code %d %q, want SUCCESS with the wanted message", resp.Code, resp.Remark)
	}
	if msgs := coreRecords(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "wanted" {
		t.Fatalf("got %d messages", len(msgs))
	}
	if next := coreExtInt(t, resp, "nextBeginOffset"); next != 3 {
		t.Errorf("nextBeginOffset %d, want 3", next)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("answered after %v: not woken by the send", elapsed)
	}
	if tb.pullHold.held() != 0 {
		t.Errorf("%d pulls still held", tb.pullHold.held())
	}
}

// TestLongPollTimesOut answers PULL_NOT_FOUND when the hold time ends.
func TestLongPollTimesOut(t *testing.T) {
	cases := []struct {
		name        string
		longPolling bool
		suspend     int64
		wantHold    time.Duration
	}{
		{name: "long polling", longPolling: true, suspend: 300, wantHold: 300 * time.Millisecond},
		{name: "short polling", longPolling: false, suspend: 15000, wantHold: 200 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, func(o *Options) {
				o.LongPollingEnable = tc.longPolling
				o.ShortPollingTimeMills = 200
			})
			tb.mustSend(sendArgs{topic: "TO", body: []byte("x")})
			tb.waitDispatched()
			start := time.Now()
			ch := tb.pullAsync(pullArgs{topic: "TO", offset: 1, sysFlag: pullFlagSubscription | pullFlagSuspend | pullFlagCommitOffset,
				suspendMillis: tc.suspend, commitOffset: 1})
			resp := coreAwait(t, ch, 10*time.Second)
			elapsed := time.Since(start)
			if resp.Code != remoting.PullNotFound || coreExtInt(t, resp, "nextBeginOffset") != 1 {
				t.Fatalf("code %d next %s", resp.Code, resp.ExtFields["nextBeginOffset"])
			}
			if elapsed < tc.wantHold || elapsed > tc.wantHold+5*time.Second {
				t.Errorf("answered after %v, want about %v", elapsed, tc.wantHold)
			}
			if off, ok := tb.clients.Offsets.Query("CG", "TO", 0); !ok || off != 1 {
				t.Errorf("offset %d %t: the first pass must commit", off, ok)
			}
		})
	}
}

// TestLongPollDroppedOnClose forgets pulls whose connection closed.
func TestLongPollDroppedOnClose(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "DC", body: []byte("x")})
	tb.waitDispatched()
	cli := remoting.NewClient(remoting.ClientOptions{})
	go func() {
		a := pullArgs{topic: "DC", offset: 1, sysFlag: pullFlagSubscription | pullFlagSuspend, suspendMillis: 15000}
		_, _ = cli.InvokeTimeout(tb.Addr(), remoting.NewRequest(remoting.PullMessage, a.ext(), nil), 20*time.Second)
	}()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.pullHold.held() == 1 }, "the pull to be held")
	cli.Close()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.pullHold.held() == 0 }, "the held pull to be dropped")
}
