package namesrv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// brokerAddrsObjects returns the raw text of every brokerAddrs object in a
// route body, as a substring, the way the Go client takes it before parsing.
func brokerAddrsObjects(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	const key = `"brokerAddrs":`
	for rest := body; ; {
		i := strings.Index(rest, key)
		if i < 0 {
			return out
		}
		rest = rest[i+len(key):]
		end := strings.IndexByte(rest, '}')
		if !strings.HasPrefix(rest, "{") || end < 0 {
			t.Fatalf("brokerAddrs is not an object in %s", body)
		}
		out = append(out, rest[:end+1])
		rest = rest[end+1:]
	}
}

// parseLikeGoClient applies the Go client's brokerAddrs rules (remoting-protocol.md
// §4.1): drop the outer braces, split on ',', split each part at its first ':',
// delete every '"', and parse the key as an integer (a failure silently means 0).
func parseLikeGoClient(obj string) map[int64]string {
	out := map[int64]string{}
	for _, part := range strings.Split(obj[1:len(obj)-1], ",") {
		i := strings.IndexByte(part, ':')
		if i < 0 {
			continue
		}
		id, _ := strconv.ParseInt(strings.ReplaceAll(part[:i], `"`, ""), 10, 64)
		out[id] = strings.ReplaceAll(part[i+1:], `"`, "")
	}
	return out
}

// whitespaceOutsideStrings reports the first whitespace byte outside a JSON string.
func whitespaceOutsideStrings(b []byte) int {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return i
		}
	}
	return -1
}

func TestEncodeRoute(t *testing.T) {
	route := &remoting.TopicRouteData{
		BrokerDatas: []*remoting.BrokerData{
			{BrokerName: "broker-a", Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911", 10: "10.0.0.3:10911"}},
			{BrokerName: "broker-b", Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{}},
		},
		QueueDatas: []*remoting.QueueData{qd("broker-a", 4, 6), qd("broker-b", 8, 7)},
	}
	withOrder := *route
	withOrder.OrderTopicConf = "broker-a:4;broker-b:8"
	tests := []struct {
		name     string
		route    *remoting.TopicRouteData
		standard bool
		want     string
	}{
		{
			name:  "bare keys for old clients",
			route: route,
			want: `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911",10:"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},` +
				`{"brokerAddrs":{},"brokerName":"broker-b","cluster":"DefaultCluster"}],"filterServerTable":{},` +
				`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`,
		},
		{
			name:     "quoted keys and order conf",
			route:    &withOrder,
			standard: true,
			want: `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911","10":"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},` +
				`{"brokerAddrs":{},"brokerName":"broker-b","cluster":"DefaultCluster"}],"filterServerTable":{},"orderTopicConf":"broker-a:4;broker-b:8",` +
				`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`,
		},
		{
			name:  "nil slices and maps still come out as [] and {}",
			route: &remoting.TopicRouteData{},
			want:  `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeRoute(tt.route, tt.standard)
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			checkRouteBody(t, got, tt.route)
		})
	}
}

// checkRouteBody checks a route body against what stock clients need:
// compact, brokerAddrs present, queueDatas an array of numeric fields, and the
// Go client's brokerAddrs parsing giving back the addresses.
func checkRouteBody(t *testing.T, body []byte, want *remoting.TopicRouteData) {
	t.Helper()
	if i := whitespaceOutsideStrings(body); i >= 0 {
		t.Errorf("whitespace at %d in %s", i, body)
	}
	objs := brokerAddrsObjects(t, string(body))
	if len(objs) != len(want.BrokerDatas) {
		t.Fatalf("%d brokerAddrs objects for %d brokers", len(objs), len(want.BrokerDatas))
	}
	for i, obj := range objs {
		got := parseLikeGoClient(obj)
		if !reflect.DeepEqual(got, orEmpty(want.BrokerDatas[i].BrokerAddrs)) {
			t.Errorf("Go-client parse of %s = %v, want %v", obj, got, want.BrokerDatas[i].BrokerAddrs)
		}
	}
	std, err := fastjson.Normalize(body)
	if err != nil {
		t.Fatalf("not fastjson: %v\n%s", err, body)
	}
	var parsed struct {
		QueueDatas []*remoting.QueueData `json:"queueDatas"`
		Brokers    []struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	dec := json.NewDecoder(bytes.NewReader(std))
	if err := dec.Decode(&parsed); err != nil {
		t.Fatalf("not JSON once keys are quoted: %v\n%s", err, std)
	}
	if parsed.QueueDatas == nil || (len(want.QueueDatas) > 0 && !reflect.DeepEqual(parsed.QueueDatas, want.QueueDatas)) {
		t.Errorf("queueDatas = %v, want %v", parsed.QueueDatas, want.QueueDatas)
	}
	for i, b := range parsed.Brokers {
		if b.BrokerAddrs == nil {
			t.Errorf("brokerDatas[%d].brokerAddrs is null", i)
		}
	}
}
