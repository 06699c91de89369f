package broker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

func TestQueueOffsetQueries(t *testing.T) {
	tb := startBroker(t, nil)
	var storeTimes []int64
	for i := range 3 {
		resp := tb.mustSend(sendArgs{topic: "QT", body: []byte("m" + strconv.Itoa(i))})
		_, phy, _ := message.DecodeMessageID(resp.ExtFields["msgId"])
		rec, err := tb.Store().LookMessageByOffset(phy)
		if err != nil {
			t.Fatal(err)
		}
		storeTimes = append(storeTimes, coreRecords(t, rec)[0].StoreTimestamp)
	}
	tb.waitDispatched()
	q := func(topic string, qid int) map[string]string {
		return map[string]string{"topic": topic, "queueId": strconv.Itoa(qid)}
	}
	withTS := func(ts int64) map[string]string {
		m := q("QT", 0)
		m["timestamp"] = strconv.FormatInt(ts, 10)
		return m
	}
	cases := []struct {
		name     string
		code     int32
		ext      map[string]string
		wantCode int32
		key      string
		want     int64
	}{
		{name: "max offset", code: remoting.GetMaxOffset, ext: q("QT", 0), key: "offset", want: 3},
		{name: "max offset of unknown queue", code: remoting.GetMaxOffset, ext: q("Nope", 0), key: "offset", want: 0},
		{name: "min offset", code: remoting.GetMinOffset, ext: q("QT", 0), key: "offset", want: 0},
		{name: "search before the first", code: remoting.SearchOffsetByTimestamp, ext: withTS(storeTimes[0] - 1000), key: "offset", want: 0},
		{name: "search after the last", code: remoting.SearchOffsetByTimestamp, ext: withTS(storeTimes[2] + 1000), key: "offset", want: 2},
		{name: "earliest store time", code: remoting.GetEarliestMsgStoretime, ext: q("QT", 0), key: "timestamp", want: storeTimes[0]},
		{name: "earliest of empty queue", code: remoting.GetEarliestMsgStoretime, ext: q("QT", 3), key: "timestamp", want: -1},
		{name: "missing queueId", code: remoting.GetMaxOffset, ext: map[string]string{"topic": "QT"}, wantCode: remoting.SystemError},
		{name: "missing timestamp", code: remoting.SearchOffsetByTimestamp, ext: q("QT", 0), wantCode: remoting.SystemError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.invoke(tc.code, tc.ext, nil)
			if resp.Code != tc.wantCode {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
			}
			if tc.wantCode != remoting.Success {
				return
			}
			if got := coreExtInt(t, resp, tc.key); got != tc.want {
				t.Fatalf("%s = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
}

func TestViewMessageByID(t *testing.T) {
	tb := startBroker(t, nil)
	resp := tb.mustSend(sendArgs{topic: "VT", body: []byte("viewed"), props: coreProps("KEYS", "k")})
	_, phy, err := message.DecodeMessageID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		ext        map[string]string
		wantCode   int32
		wantRemark string
	}{
		{name: "found", ext: map[string]string{"offset": strconv.FormatInt(phy, 10)}, wantCode: remoting.Success},
		{name: "past the end", ext: map[string]string{"offset": "999999"}, wantCode: remoting.SystemError,
			wantRemark: "can not find message by the offset, 999999"},
		{name: "missing offset", ext: nil, wantCode: remoting.SystemError, wantRemark: "the custom field <offset> is null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cli := range []*remoting.Client{tb.json, tb.bin} {
				view := tb.invokeWith(cli, remoting.ViewMessageByID, tc.ext, nil)
				if view.Code != tc.wantCode || !strings.Contains(view.Remark, tc.wantRemark) {
					t.Fatalf("got %d %q, want %d %q", view.Code, view.Remark, tc.wantCode, tc.wantRemark)
				}
				if tc.wantCode != remoting.Success {
					continue
				}
				msgs := coreRecords(t, view.Body)
				if len(msgs) != 1 || string(msgs[0].Body) != "viewed" || msgs[0].PhysicalOffset != phy || msgs[0].Properties["KEYS"] != "k" {
					t.Fatalf("view body: %d records", len(msgs))
				}
			}
		})
	}
}

func TestQueryConsumerOffset(t *testing.T) {
	cases := []struct {
		name     string
		ratio    int // accessMessageInMemoryMaxRatio
		sends    int
		commit   int64 // < 0: nothing committed
		wantCode int32
		want     int64
	}{
		{name: "committed", ratio: 40, sends: 2, commit: 1, wantCode: remoting.Success, want: 1},
		{name: "new group, first message in memory", ratio: 40, sends: 2, commit: -1, wantCode: remoting.Success, want: 0},
		{name: "new group, empty queue", ratio: 0, sends: 0, commit: -1, wantCode: remoting.Success, want: 0},
		{name: "new group, first message on disk", ratio: 0, sends: 2, commit: -1, wantCode: remoting.QueryNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, func(o *Options) { o.AccessMessageInMemoryMaxRatio = tc.ratio })
			tb.mustSend(sendArgs{topic: "OT", body: []byte("other queue"), queueID: 1})
			for range tc.sends {
				tb.mustSend(sendArgs{topic: "OT", body: []byte("x")})
			}
			tb.waitDispatched()
			if tc.commit >= 0 {
				tb.clients.Offsets.Commit("OG", "OT", 0, tc.commit)
			}
			resp := tb.invoke(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "OG", "topic": "OT", "queueId": "0"}, nil)
			if resp.Code != tc.wantCode {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
			}
			if tc.wantCode == remoting.Success {
				if got := coreExtInt(t, resp, "offset"); got != tc.want {
					t.Fatalf("offset %d, want %d", got, tc.want)
				}
			}
		})
	}
}
