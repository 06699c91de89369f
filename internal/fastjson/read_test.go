package fastjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
)

// Bodies and files as Java writes them, as found across rmq's tests: seeds
// for the fuzz targets and cases for Normalize.
var javaSamples = []string{
	// TopicRouteData for a pre-4.9.4 client (namesrv).
	`{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"},{"brokerAddrs":{0:"127.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2"}],"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`,
	// RegisterBrokerBody of a 5.x broker (namesrv).
	`{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{},"topicQueueMappingDetailMap":{"T":{"hostedQueues":{0:[{"bname":"x"}]}}}}}`,
	// TopicStatsTable (admin).
	`{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":4,"minOffset":1},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":9,"minOffset":0}}}`,
	// ConsumeStats (admin, broker).
	`{"consumeTps":1.5,"offsetTable":{{"brokerName":"b1","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":5}}}`,
	// ConsumerRunningInfo (cmd/rmq).
	`{"mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"commitOffset":0},{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"commitOffset":1}},"properties":{}}`,
	// consumerOffset.json, pretty-printed by ConfigManager.persist (broker).
	"{\n\t\"offsetTable\":{\n\t\t\"TopicTest@G\":{0:250,1:248},\n\t\t\"%RETRY%G@G\":{0:0}\n\t}\n}",
	// delayOffset.json (schedule).
	`{"offsetTable":{1:23,2:0, 18 : 7}}`,
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "standard JSON passes", in: `{"a":[1,2,{"b":null}],"c":"x"}`, want: `{"a":[1,2,{"b":null}],"c":"x"}`},
		{name: "whitespace dropped", in: "{ \"a\" : [ 1 , true ] ,\n\t\"b\":{} }", want: `{"a":[1,true],"b":{}}`},
		{name: "bare Long keys quoted", in: `{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"}}`, want: `{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}}`},
		{name: "negative and spaced bare keys", in: `{ -1 : "a" , 2:[{3:4}]}`, want: `{"-1":"a","2":[{"3":4}]}`},
		{name: "java consumerOffset.json", in: javaSamples[5], want: `{"offsetTable":{"TopicTest@G":{"0":250,"1":248},"%RETRY%G@G":{"0":0}}}`},
		{name: "java delayOffset.json", in: javaSamples[6], want: `{"offsetTable":{"1":23,"2":0,"18":7}}`},
		{name: "pretty with spaces", in: "{\n\t\"t\":{ 0 : 1 ,\n 15:2}}", want: `{"t":{"0":1,"15":2}}`},
		{name: "quoted number keys kept", in: `{"0":12}`, want: `{"0":12}`},
		{name: "lone minus is a bare word key", in: `[{-:1}]`, want: `[{"-":1}]`},
		{name: "bare identifier keys", in: `{topic:"T",queueId:0}`, want: `{"topic":"T","queueId":0}`},
		{name: "single quotes", in: `{'a':'it"s','b':['x\'y']}`, want: `{"a":"it\"s","b":["x'y"]}`},
		{
			name: "object key becomes string",
			in:   `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":3}}}`,
			want: `{"offsetTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":{"maxOffset":3}}}`,
		},
		{
			name: "spaced object key compacted",
			in:   `{ { "brokerName" : "b" , "queueId" : 1, "topic":"T" } : 5 }`,
			want: `{"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}":5}`,
		},
		{name: "object key with bare keys inside", in: `{{1:2}:3}`, want: `{"{\"1\":2}":3}`},
		{name: "strings keep braces, colons and escapes", in: `{"k":"a{b}:c,\"d\"\\"}`, want: `{"k":"a{b}:c,\"d\"\\"}`},
		{name: "bare-key look-alikes in strings untouched", in: `{"a\"{1:":"}{2:",3:"x","s":"{0:1, 2:3}"}`, want: `{"a\"{1:":"}{2:","3":"x","s":"{0:1, 2:3}"}`},
		{name: "unicode escapes kept", in: `{"k":"\u0001x\u0002"}`, want: `{"k":"\u0001x\u0002"}`},
		{name: "escapes resolved", in: `["\u00e9\/\ud83d\ude00\ud800"]`, want: `["é/😀` + "\uFFFD" + `"]`},
		{name: "invalid UTF-8 replaced", in: "[\"a\xffb\"]", want: `["a` + "\uFFFD" + `b"]`},
		{name: "numbers kept verbatim", in: `[179769313486231570000000000000000,-0.5e-3,1.0E7]`, want: `[179769313486231570000000000000000,-0.5e-3,1.0E7]`},
		{name: "top-level array", in: ` [ {1:2} ] `, want: `[{"1":2}]`},
		{name: "empty containers", in: `{"a":{},"b":[]}`, want: `{"a":{},"b":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Normalize(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Normalize(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeJavaSamplesAreJSON(t *testing.T) {
	for _, in := range javaSamples {
		out, err := Normalize([]byte(in))
		if err != nil || !json.Valid(out) {
			t.Errorf("Normalize(%s) = %s, %v; want valid JSON", in, out, err)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "empty", in: ""},
		{name: "unterminated object", in: `{"a":1`},
		{name: "unterminated string", in: `{"a":"x}`},
		{name: "unterminated escape", in: `["x\`},
		{name: "torn java file", in: `{"offsetTable":{"TopicTest@G":{0:`},
		{name: "missing colon", in: `{"a" 1}`},
		{name: "empty key", in: `{:1}`},
		{name: "trailing comma", in: `{"a":1,}`},
		{name: "trailing data", in: `{} {}`},
		{name: "bad separator", in: `[1;2]`},
		{name: "bad number", in: `[01]`},
		{name: "bare word value", in: `{"a":b}`},
		{name: "too deep", in: strings.Repeat("[", 300) + strings.Repeat("]", 300)},
		{name: "too deep in keys", in: strings.Repeat("{", 300) + strings.Repeat("}", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Normalize([]byte(tt.in)); !errors.Is(err, ErrSyntax) {
				t.Errorf("Normalize(%q) = %q, %v; want ErrSyntax", tt.in, got, err)
			}
		})
	}
}

func TestUnmarshal(t *testing.T) {
	var route struct {
		BrokerDatas []struct {
			BrokerAddrs map[int64]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := Unmarshal([]byte(javaSamples[0]), &route); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.2:10911"}
	if len(route.BrokerDatas) != 2 || !reflect.DeepEqual(route.BrokerDatas[0].BrokerAddrs, want) {
		t.Errorf("route = %+v", route)
	}

	var std map[string]int
	if err := Unmarshal([]byte(`{"a":1}`), &std); err != nil || std["a"] != 1 {
		t.Errorf("standard JSON: %v %v", std, err)
	}
	if err := Unmarshal([]byte(`{0:`), &std); !errors.Is(err, ErrSyntax) {
		t.Errorf("torn input: err = %v, want ErrSyntax", err)
	}
	var typed map[string]int
	var typeErr *json.UnmarshalTypeError
	if err := Unmarshal([]byte(`{0:"x"}`), &typed); !errors.As(err, &typeErr) {
		t.Errorf("wrong value type: err = %v, want *json.UnmarshalTypeError", err)
	}
}

type testQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

type testOffset struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

func TestEntriesObjectKeys(t *testing.T) {
	var stats struct {
		ConsumeTps  float64                         `json:"consumeTps"`
		OffsetTable Entries[testQueue, testOffset]  `json:"offsetTable"`
		Missing     Entries[testQueue, testOffset]  `json:"missing"`
		Null        Entries[testQueue, testOffset]  `json:"null"`
		Empty       Entries[int64, json.RawMessage] `json:"empty"`
	}
	in := `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T\"x"}:{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":5},` +
		`{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":3}},"null":null,"empty":{}}`
	if err := Unmarshal([]byte(in), &stats); err != nil {
		t.Fatal(err)
	}
	want := Entries[testQueue, testOffset]{
		{Key: testQueue{"b", 1, `T"x`}, Value: testOffset{10, 7, 5}},
		{Key: testQueue{"b", 0, "T"}, Value: testOffset{BrokerOffset: 3}},
	}
	if !reflect.DeepEqual(stats.OffsetTable, want) {
		t.Errorf("offsetTable = %+v, want %+v (in body order)", stats.OffsetTable, want)
	}
	if stats.Missing != nil || stats.Null != nil || stats.Empty == nil || len(stats.Empty) != 0 {
		t.Errorf("missing %v, null %v, empty %v: want nil, nil, empty", stats.Missing, stats.Null, stats.Empty)
	}
}

func TestEntriesNumberKeys(t *testing.T) {
	var f struct {
		OffsetTable Entries[int, int64] `json:"offsetTable"`
	}
	if err := Unmarshal([]byte(javaSamples[6]), &f); err != nil {
		t.Fatal(err)
	}
	want := Entries[int, int64]{{1, 23}, {2, 0}, {18, 7}}
	if !reflect.DeepEqual(f.OffsetTable, want) {
		t.Errorf("offsetTable = %v, want %v", f.OffsetTable, want)
	}
}

func TestEntriesErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "string key", in: `{"offsetTable":{"T@G":1}}`},
		{name: "wrong key type", in: `{"offsetTable":{{"queueId":"x"}:1}}`},
		{name: "wrong value type", in: `{"offsetTable":{{"queueId":1}:"x"}}`},
		{name: "not an object", in: `{"offsetTable":[1]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f struct {
				OffsetTable Entries[testQueue, int64] `json:"offsetTable"`
			}
			if err := Unmarshal([]byte(tt.in), &f); err == nil {
				t.Errorf("Unmarshal(%s) = %+v, want an error", tt.in, f)
			}
		})
	}
}

// FuzzNormalize checks that Normalize never panics, that what it accepts
// comes out as standard JSON, and that it is idempotent.
func FuzzNormalize(f *testing.F) {
	for _, s := range javaSamples {
		f.Add(s)
	}
	f.Add(`{0:"a",1:"b"}`)
	f.Add(`[1,"x",{"y":null}]`)
	f.Add(`{'a':{b:'\u00e9'}}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Normalize([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Normalize(%q): error %v is not ErrSyntax", in, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Normalize(%q) = %q, not JSON", in, out)
		}
		again, err := Normalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, out, again, err)
		}
		if json.Valid([]byte(in)) {
			// Standard JSON keeps its meaning.
			a, errA := decodeUseNumber([]byte(in))
			b, errB := decodeUseNumber(out)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("Normalize(%q) = %q changes the value", in, out)
			}
		}
	})
}

// decodeUseNumber decodes b keeping numbers as written.
func decodeUseNumber(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// Issue 42 audit: ~2 MB of nesting is refused (maxDepth), never a stack
// overflow: json.Valid stops at its own depth limit, then Normalize at 256.
// Under a 16 MiB stack cap a per-byte recursion would be fatal.
func TestUnmarshalDeepNesting(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
	n := 1_000_000
	for _, in := range []string{
		strings.Repeat("[", n) + strings.Repeat("]", n),
		strings.Repeat("{a:", n/3) + "1" + strings.Repeat("}", n/3),
		strings.Repeat("{", n) + strings.Repeat("}", n), // object keys
		`{"x":` + strings.Repeat("[", n),
	} {
		var v any
		if err := Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%.10q...: decoded", in)
		}
	}
}
