package remoting

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSyncStateSetRoundTrip(t *testing.T) {
	s := SyncStateSet{SyncStateSet: []int64{3, 1, 2, 1}, SyncStateSetEpoch: 7}
	b := s.Encode()
	if string(b) != `{"syncStateSet":[1,2,3],"syncStateSetEpoch":7}` {
		t.Fatalf("encode %s", b)
	}
	got, err := DecodeSyncStateSet(b)
	if err != nil || !slices.Equal(got.SyncStateSet, []int64{1, 2, 3}) || got.SyncStateSetEpoch != 7 {
		t.Fatalf("decode %+v %v", got, err)
	}
	// fastjson's lenient forms, as a Java broker may send them.
	if got, err := DecodeSyncStateSet([]byte(`{syncStateSet:[2,1],'syncStateSetEpoch':3}`)); err != nil || got.SyncStateSetEpoch != 3 || len(got.SyncStateSet) != 2 {
		t.Fatalf("lenient %+v %v", got, err)
	}
	for _, bad := range []string{"", "{", `{"syncStateSet":"x"}`, `{"syncStateSetEpoch":99999999999}`} {
		if _, err := DecodeSyncStateSet([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	big := bytes.Repeat([]byte(" "), MaxControllerBody+1)
	if _, err := DecodeSyncStateSet(big); !errors.Is(err, ErrControllerBodyTooLarge) {
		t.Fatalf("oversized body: %v", err)
	}
	if _, err := DecodeBrokerNames(big); !errors.Is(err, ErrControllerBodyTooLarge) {
		t.Fatalf("oversized names: %v", err)
	}
	deep := strings.Repeat("[", 100000)
	if _, err := DecodeBrokerNames([]byte(deep)); err == nil {
		t.Fatal("deep nesting decoded")
	}
}

func TestElectMasterBodyIsFastjson(t *testing.T) {
	e := ElectMasterResponseBody{
		BrokerMemberGroup: &BrokerMemberGroup{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{2: "h:2", 1: "h:1"}},
		SyncStateSet:      []int64{2},
	}
	b := e.Encode()
	if string(b) != `{"brokerMemberGroup":{"brokerAddrs":{1:"h:1",2:"h:2"},"brokerName":"b","cluster":"c"},"syncStateSet":[2]}` {
		t.Fatalf("encode %s", b)
	}
	got, err := DecodeElectMasterResponseBody(b)
	if err != nil || got.BrokerMemberGroup.BrokerAddrs[1] != "h:1" || got.SyncStateSet[0] != 2 {
		t.Fatalf("decode %+v %v", got, err)
	}
	if string(EncodeBrokerNames([]string{"a", `q"`})) != `["a","q\""]` {
		t.Fatal("names")
	}
}

// FuzzControllerBodies: no body crashes a decoder, and what decodes
// re-encodes to something that decodes to the same value.
func FuzzControllerBodies(f *testing.F) {
	for _, s := range []string{`{"syncStateSet":[1,2],"syncStateSetEpoch":1}`, `["a","b"]`, `{syncStateSet:[1]}`,
		`{"brokerMemberGroup":{"brokerAddrs":{1:"h"},"brokerName":"b","cluster":"c"},"syncStateSet":[1]}`,
		`{"replicasInfoTable":{"a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"h","brokerId":1,"brokerName":"a"}],"masterEpoch":1}}}`, "[[[", "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeSyncStateSet(b); err == nil {
			again, err := DecodeSyncStateSet(s.Encode())
			if err != nil || !slices.Equal(again.SyncStateSet, s.SyncStateSet) || again.SyncStateSetEpoch != s.SyncStateSetEpoch {
				t.Fatalf("round trip %+v -> %+v %v", s, again, err)
			}
		}
		if names, err := DecodeBrokerNames(b); err == nil {
			again, err := DecodeBrokerNames(EncodeBrokerNames(names))
			if err != nil || !slices.Equal(again, names) {
				t.Fatalf("names round trip %q -> %q %v", names, again, err)
			}
		}
		if e, err := DecodeElectMasterResponseBody(b); err == nil {
			if _, err := DecodeElectMasterResponseBody(e.Encode()); err != nil {
				t.Fatalf("elect body round trip: %v", err)
			}
		}
		_, _ = DecodeBrokerReplicasInfo(b)
	})
}
