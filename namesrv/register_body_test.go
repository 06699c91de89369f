package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// compressBody builds the compressed RegisterBrokerBody the way a Java broker
// with compressedRegister=true does (layout in doc.go).
func compressBody(t *testing.T, dv string, lines []string, filterServers string, trailer []byte) []byte {
	t.Helper()
	var raw bytes.Buffer
	field := func(b []byte) {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(b)))
		raw.Write(b)
	}
	field([]byte(dv))
	_ = binary.Write(&raw, binary.BigEndian, int32(len(lines)))
	for _, l := range lines {
		field([]byte(l))
	}
	field([]byte(filterServers))
	raw.Write(trailer)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	return z.Bytes()
}

func TestDecodeRegisterBody(t *testing.T) {
	j5Trailer := []byte{0, 0, 0, 1, 0, 0, 0, 2, '{', '}'}
	tests := []struct {
		name        string
		body        []byte
		compressed  bool
		wantErr     bool
		wantDV      remoting.DataVersion
		wantTopics  map[string]*topicgroup.TopicConfig
		wantFilters []string
	}{
		{
			name:        "json",
			body:        []byte(`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":17},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}`),
			wantDV:      remoting.DataVersion{Counter: 3, Timestamp: 17},
			wantTopics:  map[string]*topicgroup.TopicConfig{"T": {Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4, TopicFilterType: "SINGLE_TAG", TopicName: "T"}},
			wantFilters: []string{},
		},
		{
			name:        "json with fastjson bare keys elsewhere (J5 static topic mapping)",
			body:        []byte(`{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{},"topicQueueMappingDetailMap":{"T":{"hostedQueues":{0:[{"bname":"x"}]}}}}}`),
			wantDV:      remoting.DataVersion{Counter: 1, Timestamp: 2},
			wantTopics:  map[string]*topicgroup.TopicConfig{},
			wantFilters: []string{"f:1"},
		},
		{
			name:       "compressed J4",
			compressed: true,
			body:       compressBody(t, `{"counter":9,"timestamp":100}`, []string{"T 4 8 6 SINGLE_TAG", "%RETRY%g 1 1 6 MULTI_TAG"}, `[]`, nil),
			wantDV:     remoting.DataVersion{Counter: 9, Timestamp: 100},
			wantTopics: map[string]*topicgroup.TopicConfig{
				"T":        {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"},
				"%RETRY%g": {TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "MULTI_TAG"},
			},
			wantFilters: []string{},
		},
		{
			name:        "compressed J5 with attributes and mapping trailer",
			compressed:  true,
			body:        compressBody(t, `{"counter":2,"stateVersion":0,"timestamp":5}`, []string{`T 4 4 6 SINGLE_TAG {"+a":"b c"}`}, `["fs:1"]`, j5Trailer),
			wantDV:      remoting.DataVersion{Counter: 2, Timestamp: 5},
			wantTopics:  map[string]*topicgroup.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
			wantFilters: []string{"fs:1"},
		},
		{
			name:        "compressed with bad filter server JSON keeps an empty list",
			compressed:  true,
			body:        compressBody(t, `{"counter":2,"timestamp":5}`, nil, `nope`, nil),
			wantDV:      remoting.DataVersion{Counter: 2, Timestamp: 5},
			wantTopics:  map[string]*topicgroup.TopicConfig{},
			wantFilters: []string{},
		},
		{name: "bad json", body: []byte(`{"topicConfigSerializeWrapper":`), wantErr: true},
		{name: "not zlib", compressed: true, body: []byte("plain"), wantErr: true},
		{name: "truncated stream", compressed: true, body: compressBody(t, `{"counter":2,"timestamp":5}`, nil, `[]`, nil)[:12], wantErr: true},
		{name: "too few fields", compressed: true, body: compressBody(t, `{}`, []string{"T 4 4 6"}, `[]`, nil), wantErr: true},
		{name: "bad number", compressed: true, body: compressBody(t, `{}`, []string{"T four 4 6 SINGLE_TAG"}, `[]`, nil), wantErr: true},
		{name: "bad filter type", compressed: true, body: compressBody(t, `{}`, []string{"T 4 4 6 ANY"}, `[]`, nil), wantErr: true},
		{name: "bad data version", compressed: true, body: compressBody(t, `{"counter":`, nil, `[]`, nil), wantErr: true},
		{name: "huge length", compressed: true, body: func() []byte {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			_, _ = zw.Write([]byte{0x7f, 0xff, 0xff, 0xff})
			_ = zw.Close()
			return z.Bytes()
		}(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := decodeRegisterBody(tt.body, tt.compressed)
			if tt.wantErr {
				if !errors.Is(err, ErrRegisterBody) {
					t.Fatalf("err = %v, want ErrRegisterBody", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := body.TopicConfigSerializeWrapper
			if w.DataVersion != tt.wantDV {
				t.Errorf("dataVersion = %+v, want %+v", w.DataVersion, tt.wantDV)
			}
			if !reflect.DeepEqual(w.TopicConfigTable, tt.wantTopics) {
				t.Errorf("topics = %s, want %s", remoting.MarshalBody(w.TopicConfigTable), remoting.MarshalBody(tt.wantTopics))
			}
			if !reflect.DeepEqual(body.FilterServerList, tt.wantFilters) {
				t.Errorf("filter servers = %#v, want %#v", body.FilterServerList, tt.wantFilters)
			}
		})
	}
}
