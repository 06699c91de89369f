package admin

import (
	"encoding/json"
	"errors"
	"testing"

	"rmq/remoting"
)

func TestNormalizeJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "standard JSON passes", in: `{"a":[1,2,{"b":null}],"c":"x"}`, want: `{"a":[1,2,{"b":null}],"c":"x"}`},
		{name: "whitespace dropped", in: "{ \"a\" : [ 1 , true ] ,\n\t\"b\":{} }", want: `{"a":[1,true],"b":{}}`},
		{name: "bare Long keys quoted", in: `{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"}}`, want: `{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}}`},
		{name: "negative bare key", in: `{-1:"x"}`, want: `{"-1":"x"}`},
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
		{name: "strings keep braces, colons and escapes", in: `{"k":"a{b}:c,\"d\"\\"}`, want: `{"k":"a{b}:c,\"d\"\\"}`},
		{name: "unicode escapes kept", in: `{"k":"\u0001x\u0002"}`, want: `{"k":"\u0001x\u0002"}`},
		{name: "top-level array", in: ` [ {1:2} ] `, want: `[{"1":2}]`},
		{name: "empty containers", in: `{"a":{},"b":[]}`, want: `{"a":{},"b":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeJSON([]byte(tt.in))
			if err != nil {
				t.Fatalf("NormalizeJSON(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("NormalizeJSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "empty", in: ""},
		{name: "unterminated object", in: `{"a":1`},
		{name: "unterminated string", in: `{"a":"x}`},
		{name: "missing colon", in: `{"a" 1}`},
		{name: "trailing data", in: `{} {}`},
		{name: "bad separator", in: `[1;2]`},
		{name: "too deep", in: string(make([]byte, 0)) + deepArray(300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := NormalizeJSON([]byte(tt.in)); !errors.Is(err, errFastJSON) {
				t.Errorf("NormalizeJSON(%q) = %q, %v; want errFastJSON", tt.in, got, err)
			}
		})
	}
}

func deepArray(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(b)
}

func TestParseMessageQueueKeyRoundTrip(t *testing.T) {
	norm, err := NormalizeJSON([]byte(`{{"brokerName":"broker-a","queueId":7,"topic":"T\"x"}:1}`))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int
	if err := remoting.UnmarshalBody(norm, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		mq, err := ParseMessageQueueKey(k)
		if err != nil {
			t.Fatal(err)
		}
		want := remoting.MessageQueue{BrokerName: "broker-a", QueueID: 7, Topic: `T"x`}
		if mq != want {
			t.Errorf("ParseMessageQueueKey(%s) = %+v, want %+v", k, mq, want)
		}
	}
	if _, err := ParseMessageQueueKey("not json"); !errors.Is(err, ErrBadBody) {
		t.Errorf("bad key: err = %v, want ErrBadBody", err)
	}
}

func FuzzNormalizeJSON(f *testing.F) {
	f.Add(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":3}}}`)
	f.Add(`{0:"a",1:"b"}`)
	f.Add(`[1,"x",{"y":null}]`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeJSON([]byte(in))
		if err != nil {
			return
		}
		// Output is standard JSON, and normalizing it again changes nothing.
		if !json.Valid(out) {
			t.Fatalf("NormalizeJSON(%q) = %q, not JSON", in, out)
		}
		again, err := NormalizeJSON(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, out, again, err)
		}
	})
}
