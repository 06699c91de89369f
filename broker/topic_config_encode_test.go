package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// checkAppendTopicConfig requires appendTopicConfig's JSON to read back as
// json.Marshal's of the same config does (escapes differ: fastjson leaves
// <, > and & alone and writes \f as \u000c; invalid UTF-8 reads back as
// U+FFFD from both), with the fields in the same order.
func checkAppendTopicConfig(t testing.TB, tc *topicgroup.TopicConfig) {
	t.Helper()
	got := appendTopicConfig(nil, tc)
	want, err := json.Marshal(tc)
	if err != nil {
		t.Fatal(err)
	}
	var g, w topicgroup.TopicConfig
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("appendTopicConfig wrote %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("appendTopicConfig:\n got %s\nwant %s", got, want)
	}
	if gk, wk := jsonKeys(t, got), jsonKeys(t, want); !slices.Equal(gk, wk) {
		t.Fatalf("appendTopicConfig keys %v, want %v", gk, wk)
	}
}

// jsonKeys lists the top-level keys of the JSON object b in order.
func jsonKeys(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestAppendTopicConfigMatchesMarshal(t *testing.T) {
	for _, tc := range []*topicgroup.TopicConfig{
		{},
		newTopicConfig("TopicTest", 8, permReadWrite),
		{TopicName: "T", Order: true, Perm: -1, ReadQueueNums: 1 << 30, WriteQueueNums: -7, TopicSysFlag: 3, TopicFilterType: filterTypeMultiTag},
		{TopicName: "quote\"back\\slash\x01\x02\n<&>\xff é", TopicFilterType: "\t",
			Attributes: map[string]string{"+message.type": "DELAY", "b": "", "\x00": "\xfe<>"}},
	} {
		checkAppendTopicConfig(t, tc)
	}
}

func FuzzAppendTopicConfig(f *testing.F) {
	f.Add("TopicTest", "SINGLE_TAG", "+message.type", "FIFO", int32(6), int32(8), false)
	f.Add("a\"\\\x01\xff", "", "", "", int32(-1), int32(0), true)
	f.Fuzz(func(t *testing.T, name, filterType, key, value string, perm, queues int32, order bool) {
		tc := &topicgroup.TopicConfig{TopicName: name, TopicFilterType: filterType, Perm: perm,
			ReadQueueNums: queues, WriteQueueNums: queues ^ perm, TopicSysFlag: perm >> 3, Order: order}
		if key != "" || value != "" {
			tc.Attributes = map[string]string{key: value, key + "2": name}
		}
		checkAppendTopicConfig(t, tc)
	})
}

// topics.json reads back as the table it was written from, one topic per
// line in name order between the object's own lines.
func TestEncodeTopicsFileReadsBack(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		w := remoting.TopicConfigSerializeWrapper{
			DataVersion:      remoting.DataVersion{Counter: 42, Timestamp: 1_700_000_000_123},
			TopicConfigTable: map[string]*topicgroup.TopicConfig{"gone": nil},
		}
		for i := n - 1; i >= 0; i-- {
			name := fmt.Sprintf("T%d", i)
			w.TopicConfigTable[name] = newTopicConfig(name, int32(i+1), permReadWrite)
		}
		data, err := encodeTopicsFile(w)
		if err != nil {
			t.Fatal(err)
		}
		var back remoting.TopicConfigSerializeWrapper
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%d topics: %v\n%s", n, err, data)
		}
		delete(w.TopicConfigTable, "gone")
		if !reflect.DeepEqual(back, w) {
			t.Fatalf("%d topics: read back %+v, want %+v", n, back, w)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		wantLines := 4 + n
		if n > 0 {
			wantLines++
		}
		if len(lines) != wantLines {
			t.Fatalf("%d topics: %d lines, want %d:\n%s", n, len(lines), wantLines, data)
		}
		for i := 0; i < n; i++ {
			if l := lines[3+i]; !strings.HasPrefix(l, fmt.Sprintf("\t\t\"T%d\":{", i)) {
				t.Fatalf("line %d is %q, want topic T%d", 3+i, l, i)
			}
		}
	}
}

func BenchmarkEncodeTopicsFile(b *testing.B) {
	w := remoting.TopicConfigSerializeWrapper{TopicConfigTable: map[string]*topicgroup.TopicConfig{}}
	for i := range 2000 {
		name := fmt.Sprintf("CmpMany%05d", i)
		w.TopicConfigTable[name] = newTopicConfig(name, 8, permReadWrite)
	}
	b.Run("layout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeTopicsFile(w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalIndent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.MarshalIndent(w, "", "\t"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
