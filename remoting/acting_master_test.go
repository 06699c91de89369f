package remoting

import (
	"maps"
	"testing"
)

// The member group answer as stock fastjson writes it (bare Long keys) and
// as a lenient peer might (quoted), both decode; the encoding round-trips.
func TestGetBrokerMemberGroupResponseBody(t *testing.T) {
	for _, s := range []string{
		`{"brokerMemberGroup":{"brokerAddrs":{0:"h:1",1:"h:2"},"brokerName":"b","cluster":"c"}}`,
		`{"brokerMemberGroup":{"brokerAddrs":{"0":"h:1","1":"h:2"},"brokerName":"b","cluster":"c"}}`,
	} {
		r, err := DecodeGetBrokerMemberGroupResponseBody([]byte(s))
		if err != nil || r.BrokerMemberGroup == nil || r.BrokerMemberGroup.BrokerName != "b" || r.BrokerMemberGroup.Cluster != "c" ||
			!maps.Equal(r.BrokerMemberGroup.BrokerAddrs, map[int64]string{0: "h:1", 1: "h:2"}) {
			t.Fatalf("%s: %+v %v", s, r, err)
		}
		if got := string(r.Encode()); got != `{"brokerMemberGroup":{"brokerAddrs":{0:"h:1",1:"h:2"},"brokerName":"b","cluster":"c"}}` {
			t.Fatalf("encode: %s", got)
		}
	}
}

// FuzzGetBrokerMemberGroupResponseBody: no body crashes the decoder, and
// what decodes re-encodes to the same members.
func FuzzGetBrokerMemberGroupResponseBody(f *testing.F) {
	for _, s := range []string{`{"brokerMemberGroup":{"brokerAddrs":{0:"h"},"brokerName":"b","cluster":"c"}}`, `{}`, `{"brokerMemberGroup":null}`, "{{", `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeGetBrokerMemberGroupResponseBody(b)
		if err != nil || r.BrokerMemberGroup == nil {
			return
		}
		again, err := DecodeGetBrokerMemberGroupResponseBody(r.Encode())
		if err != nil || again.BrokerMemberGroup == nil || !maps.Equal(again.BrokerMemberGroup.BrokerAddrs, r.BrokerMemberGroup.BrokerAddrs) ||
			again.BrokerMemberGroup.BrokerName != r.BrokerMemberGroup.BrokerName {
			t.Fatalf("round trip %+v -> %+v %v", r.BrokerMemberGroup, again, err)
		}
	})
}
