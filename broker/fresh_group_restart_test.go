package broker

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// Issue 42 defect 10 (second part): once, a fresh consumer group created
// right after a restart started at the queue's end instead of its first
// message. A fresh group's start is decided by what the broker answers
// then: the 4.9.8 Java client (RebalancePushImpl.computePullFromWhereWithException)
// asks QUERY_CONSUMER_OFFSET; CONSUME_FROM_FIRST_OFFSET takes an answered
// offset as is and 0 for any broker error (RemoteBrokerOffsetStore.readOffset
// maps every MQBrokerException to -1), CONSUME_FROM_LAST_OFFSET asks
// GET_MAX_OFFSET on -1, CONSUME_FROM_TIMESTAMP SEARCH_OFFSET_BY_TIMESTAMP;
// the first pull then corrects an offset below the queue's minimum. So a
// FIRST group can only start at the end if, right after the restart,
// QUERY_CONSUMER_OFFSET answers an offset past 0 or the pull at 0 is moved
// to the end (a queue whose min or max is not yet rebuilt).
//
// This test restarts after a crash (the abort marker left behind: every
// record is verified and re-dispatched) and checks, in the window between
// New and Start, that recovery is complete before the port listens, then
// asks the first requests a fresh group makes. All answers are the ones a
// first-offset start needs: the store's recovery (store.Open) rebuilds every
// queue synchronously, the offsets file is loaded in New, and the server
// only listens in Start.
func TestFreshGroupAfterCrashRestartStartsAtFirst(t *testing.T) {
	const topic, n = "FreshAfterRestart", 20
	tb := startBroker(t, nil)
	for i := range n {
		tb.mustSend(sendArgs{topic: topic, body: []byte("m" + strconv.Itoa(i)), queueID: 0})
	}
	// An old group's committed offset must not leak into a new one.
	tb.pull(pullArgs{group: "OldGroup", topic: topic, queueID: 0, sysFlag: pullFlagSubscription | pullFlagCommitOffset, commitOffset: n})
	tb.stop()
	dir := tb.opts.StorePathRootDir
	if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	addr := net.JoinHostPort(tb.opts.ListenHost, strconv.Itoa(tb.opts.ListenPort))
	tb = startBrokerWith(t, tb.opts, func(b *Broker) {
		// Between New and Start: recovery is done, nothing listens yet, so
		// no request can race it.
		if c, err := net.Dial("tcp4", addr); err == nil {
			c.Close()
			t.Fatalf("%s accepts connections before Start", addr)
		}
		st := b.Store()
		if st.MinOffsetInQueue(topic, 0) != 0 || st.MaxOffsetInQueue(topic, 0) != n || st.DispatchBehind() != 0 {
			t.Fatalf("before Start: min %d max %d behind %d, want 0 %d 0",
				st.MinOffsetInQueue(topic, 0), st.MaxOffsetInQueue(topic, 0), st.DispatchBehind(), n)
		}
	})
	if got := tb.Store().RuntimeInfo()["recoveryCleanShutdown"]; got != "false" {
		t.Fatalf("recoveryCleanShutdown %s: the restart did not take the crash path", got)
	}

	// At once, with no wait for dispatch: the requests of a fresh group.
	q := map[string]string{"consumerGroup": "FreshGroup", "topic": topic, "queueId": "0"}
	if r := tb.invoke(remoting.QueryConsumerOffset, q, nil); r.Code != remoting.Success || r.ExtFields["offset"] != "0" {
		t.Fatalf("QUERY_CONSUMER_OFFSET of a fresh group: %d %v %q", r.Code, r.ExtFields, r.Remark)
	}
	if r := tb.invoke(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "OldGroup", "topic": topic, "queueId": "0"}, nil); r.Code != remoting.Success || r.ExtFields["offset"] != strconv.Itoa(n) {
		t.Fatalf("QUERY_CONSUMER_OFFSET of the old group: %d %v", r.Code, r.ExtFields)
	}
	queue := map[string]string{"topic": topic, "queueId": "0"}
	if r := tb.invoke(remoting.GetMinOffset, queue, nil); coreExtInt(t, r, "offset") != 0 {
		t.Fatalf("GET_MIN_OFFSET %v", r.ExtFields)
	}
	if r := tb.invoke(remoting.GetMaxOffset, queue, nil); coreExtInt(t, r, "offset") != n {
		t.Fatalf("GET_MAX_OFFSET %v", r.ExtFields)
	}
	search := map[string]string{"topic": topic, "queueId": "0", "timestamp": "0"}
	if r := tb.invoke(remoting.SearchOffsetByTimestamp, search, nil); coreExtInt(t, r, "offset") != 0 {
		t.Fatalf("SEARCH_OFFSET_BY_TIMESTAMP(0) %v", r.ExtFields)
	}
	resp := tb.pull(pullArgs{group: "FreshGroup", topic: topic, queueID: 0, offset: 0, maxMsgs: 32, sysFlag: pullFlagSubscription})
	if resp.Code != remoting.Success {
		t.Fatalf("first pull of the fresh group: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	msgs := coreRecords(t, resp.Body)
	if len(msgs) != n || string(msgs[0].Body) != "m0" || msgs[0].QueueOffset != 0 {
		t.Fatalf("first pull: %d messages, first %q at %d", len(msgs), msgs[0].Body, msgs[0].QueueOffset)
	}
}
