package brokeradmin_test

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
)

func queryExt(topic, key string, maxNum int, begin, end int64) map[string]string {
	return map[string]string{
		"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10),
	}
}

func TestQueryMessage(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	var uniq []string
	for i := range 40 {
		u := "UNIQ-" + strconv.Itoa(i)
		uniq = append(uniq, u)
		keys := "order-" + strconv.Itoa(i) + " common"
		tb.MustSend(brokertest.Send{Topic: "QM", Body: []byte("m" + strconv.Itoa(i)), Props: brokertest.Props("KEYS", keys, "UNIQ_KEY", u)})
	}
	tb.MustSend(brokertest.Send{Topic: "QMOther", Body: []byte("other"), Props: brokertest.Props("KEYS", "order-1", "UNIQ_KEY", "UNIQ-1")})
	tb.WaitDispatched()

	unique := func(ext map[string]string) map[string]string {
		ext["_UNIQUE_KEY_QUERY"] = "true" // MixAll.UNIQUE_MSG_QUERY_FLAG
		return ext
	}
	without := func(ext map[string]string, k string) map[string]string {
		delete(ext, k)
		return ext
	}
	cases := []struct {
		name       string
		ext        map[string]string
		wantCode   int32
		wantBodies []string
	}{
		{name: "by key", ext: queryExt("QM", "order-7", 32, 0, math.MaxInt64), wantBodies: []string{"m7"}},
		{name: "by unique key", ext: unique(queryExt("QM", "UNIQ-3", 1, 0, math.MaxInt64)), wantBodies: []string{"m3"}},
		{name: "key of another topic is not returned", ext: queryExt("QMOther", "order-1", 32, 0, math.MaxInt64), wantBodies: []string{"other"}},
		{name: "maxNum keeps the newest", ext: queryExt("QM", "common", 2, 0, math.MaxInt64), wantBodies: []string{"m38", "m39"}},
		{name: "unique-key flag overrides maxNum with 32", ext: unique(queryExt("QM", "common", 1, 0, math.MaxInt64)), wantBodies: func() []string {
			var out []string
			for i := 8; i < 40; i++ {
				out = append(out, "m"+strconv.Itoa(i))
			}
			return out
		}()},
		{name: "unknown key", ext: queryExt("QM", "nope", 32, 0, math.MaxInt64), wantCode: remoting.QueryNotFound},
		{name: "time range before everything", ext: queryExt("QM", "order-7", 32, 0, 1000), wantCode: remoting.QueryNotFound},
		{name: "missing key", ext: without(queryExt("QM", "x", 32, 0, 1), "key"), wantCode: remoting.SystemError},
		{name: "missing endTimestamp", ext: without(queryExt("QM", "x", 32, 0, 1), "endTimestamp"), wantCode: remoting.SystemError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cli := range []*remoting.Client{tb.JSON, tb.Bin} {
				resp := tb.InvokeWith(cli, remoting.QueryMessage, tc.ext, nil)
				if resp.Code != tc.wantCode {
					t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
				}
				if tc.wantCode == remoting.SystemError {
					continue
				}
				if brokertest.ExtInt(t, resp, "indexLastUpdatePhyoffset") <= 0 || brokertest.ExtInt(t, resp, "indexLastUpdateTimestamp") <= 0 {
					t.Fatalf("index position headers missing: %v", resp.ExtFields)
				}
				var bodies []string
				for _, m := range brokertest.Records(t, resp.Body) {
					bodies = append(bodies, string(m.Body))
				}
				if !slices.Equal(bodies, tc.wantBodies) {
					t.Fatalf("bodies %v, want %v", bodies, tc.wantBodies)
				}
			}
		})
	}

	// The index survives a restart.
	tb = tb.Restart()
	resp := tb.Invoke(remoting.QueryMessage, unique(queryExt("QM", uniq[20], 32, 0, math.MaxInt64)), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("after restart: code %d %q", resp.Code, resp.Remark)
	}
	if got := brokertest.Records(t, resp.Body); len(got) != 1 || string(got[0].Body) != "m20" {
		t.Fatalf("after restart: %d records", len(got))
	}
}
