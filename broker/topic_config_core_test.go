package broker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

var coreEpoch = time.Unix(1_700_000_000, 0)

func newTestTopics(t *testing.T, dir string, autoCreate bool) *TopicConfigManager {
	t.Helper()
	m, err := newTopicConfigManager(filepath.Join(dir, "topics.json"), topicConfigDefaults{
		clusterName: "C1", brokerName: "B1", autoCreate: autoCreate, defaultQueueNums: 8, clusterTopic: true, brokerTopic: true,
	}, clock.NewManual(coreEpoch), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTopicConfigDefaults(t *testing.T) {
	cases := []struct {
		topic      string
		autoCreate bool
		want       *topicgroup.TopicConfig // nil: absent
	}{
		{"SELF_TEST_TOPIC", true, &topicgroup.TopicConfig{ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		{"TBW102", true, &topicgroup.TopicConfig{ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7}},
		{"TBW102", false, nil},
		{"BenchmarkTest", true, &topicgroup.TopicConfig{ReadQueueNums: 1024, WriteQueueNums: 1024, Perm: 6}},
		{"C1", true, &topicgroup.TopicConfig{ReadQueueNums: 16, WriteQueueNums: 16, Perm: 7}},
		{"B1", false, &topicgroup.TopicConfig{ReadQueueNums: 1, WriteQueueNums: 1, Perm: 7}},
		{"OFFSET_MOVED_EVENT", true, &topicgroup.TopicConfig{ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		{"SCHEDULE_TOPIC_XXXX", true, &topicgroup.TopicConfig{ReadQueueNums: 18, WriteQueueNums: 18, Perm: 6}},
		{"C1_REPLY_TOPIC", true, &topicgroup.TopicConfig{ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
	}
	for _, tc := range cases {
		m := newTestTopics(t, t.TempDir(), tc.autoCreate)
		got := m.Get(tc.topic)
		if tc.want == nil {
			if got != nil {
				t.Errorf("%s (autoCreate=%t) exists: %+v", tc.topic, tc.autoCreate, got)
			}
			continue
		}
		tc.want.TopicName, tc.want.TopicFilterType = tc.topic, "SINGLE_TAG"
		if got == nil || !reflect.DeepEqual(*got, *tc.want) {
			t.Errorf("%s = %+v, want %+v", tc.topic, got, tc.want)
		}
		if !m.IsSystemTopic(tc.topic) {
			t.Errorf("%s is not a system topic", tc.topic)
		}
	}
}

func TestTopicConfigCreateFromDefault(t *testing.T) {
	m := newTestTopics(t, t.TempDir(), true)
	m.Update(&topicgroup.TopicConfig{TopicName: "NoInherit", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	m.Update(&topicgroup.TopicConfig{TopicName: "Parent", ReadQueueNums: 2, WriteQueueNums: 3, Perm: 5, TopicFilterType: "MULTI_TAG"})
	cases := []struct {
		name     string
		topic    string
		def      string
		nums     int32
		want     *topicgroup.TopicConfig
		wantMade bool
	}{
		{name: "from TBW102", topic: "A", def: "TBW102", nums: 4, wantMade: true,
			want: &topicgroup.TopicConfig{TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
		{name: "existing", topic: "A", def: "TBW102", nums: 1,
			want: &topicgroup.TopicConfig{TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
		{name: "inherits perm and filter", topic: "B", def: "Parent", nums: 16, wantMade: true,
			want: &topicgroup.TopicConfig{TopicName: "B", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 4, TopicFilterType: "MULTI_TAG"}},
		{name: "negative queue count", topic: "C", def: "TBW102", nums: -3, wantMade: true,
			want: &topicgroup.TopicConfig{TopicName: "C", Perm: 6, TopicFilterType: "SINGLE_TAG"}},
		{name: "default without inherit", topic: "D", def: "NoInherit", nums: 4},
		{name: "missing default", topic: "E", def: "Nope", nums: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, made := m.createFromDefault(tc.topic, tc.def, tc.nums, 0)
			if made != tc.wantMade {
				t.Errorf("created %t, want %t", made, tc.wantMade)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && !reflect.DeepEqual(*got, *tc.want)) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTopicConfigPersistence(t *testing.T) {
	dir := t.TempDir()
	m := newTestTopics(t, dir, true)
	changes := 0
	m.onChange = func() { changes++ }
	if _, made := m.CreateRetryTopic("G", 1, 6); !made {
		t.Fatal("retry topic not created")
	}
	if _, made := m.CreateRetryTopic("G", 1, 6); made {
		t.Fatal("retry topic created twice")
	}
	m.CreateSystemTopic("%DLQ%G", 1, 6)
	m.Update(&topicgroup.TopicConfig{TopicName: "U", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"})
	m.Delete("B1")
	m.setOrderTopics(map[string]string{"U": "B1:2"})
	if changes != 3 {
		t.Errorf("onChange ran %d times, want 3 (creations and updates)", changes)
	}
	wantVersion := m.DataVersion()
	if wantVersion.Counter != 5 || wantVersion.Timestamp != coreEpoch.UnixMilli() {
		t.Errorf("data version %+v, want counter 5", wantVersion)
	}

	var onDisk remoting.TopicConfigSerializeWrapper
	data, err := os.ReadFile(filepath.Join(dir, "topics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatalf("topics.json is not the wrapper JSON: %v", err)
	}
	if onDisk.DataVersion != wantVersion || len(onDisk.TopicConfigTable) != len(m.Topics()) {
		t.Errorf("file has version %+v and %d topics", onDisk.DataVersion, len(onDisk.TopicConfigTable))
	}

	re := newTestTopics(t, dir, true)
	if re.DataVersion() != wantVersion {
		t.Errorf("reloaded version %+v", re.DataVersion())
	}
	for _, name := range []string{"%RETRY%G", "%DLQ%G", "U"} {
		if !reflect.DeepEqual(*re.Get(name), *m.Get(name)) {
			t.Errorf("%s reloaded as %+v, want %+v", name, re.Get(name), m.Get(name))
		}
	}
	if !re.IsOrderTopic("U") {
		t.Error("order flag lost")
	}
	if re.Get("B1") == nil {
		t.Error("a deleted default topic is built again at start, as stock does")
	}

	// A broken file falls back to the .bak copy the previous write kept.
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	bak := newTestTopics(t, dir, true)
	if bak.Get("%RETRY%G") == nil {
		t.Error("backup not used for a broken topics.json")
	}
}

// Concurrent changes share writes of topics.json, but none returns before
// the file holds it: each writer finds its own topic on disk as soon as its
// Update returns, and a reload has every topic.
func TestTopicConfigConcurrentChangesPersisted(t *testing.T) {
	dir := t.TempDir()
	m := newTestTopics(t, dir, true)
	path := filepath.Join(dir, "topics.json")
	const writers, each = 8, 25
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				name := fmt.Sprintf("T%d_%d", w, i)
				m.Update(&topicgroup.TopicConfig{TopicName: name, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"})
				var onDisk remoting.TopicConfigSerializeWrapper
				data, err := os.ReadFile(path)
				if err == nil {
					err = json.Unmarshal(data, &onDisk)
				}
				if err == nil && onDisk.TopicConfigTable[name] == nil {
					err = fmt.Errorf("%s not in topics.json when its Update returned", name)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	re := newTestTopics(t, dir, true)
	for w := range writers {
		for i := range each {
			if re.Get(fmt.Sprintf("T%d_%d", w, i)) == nil {
				t.Fatalf("T%d_%d lost on reload", w, i)
			}
		}
	}
	if re.DataVersion() != m.DataVersion() {
		t.Fatalf("reloaded version %+v, want %+v", re.DataVersion(), m.DataVersion())
	}
}
