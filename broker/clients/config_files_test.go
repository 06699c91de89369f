package clients

import (
	"encoding/json"
	"errors"
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

func TestConsumerOffsetManagerPersistence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "consumerOffset.json")
	m, err := NewConsumerOffsetManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Query("G", "T", 0); ok {
		t.Fatal("offset found in an empty table")
	}
	m.Commit("G", "T", 0, 12)
	m.Commit("G", "T", 1, 7)
	m.Commit("G", "T", 1, 9)
	m.Commit("H", "T", 0, 3)
	m.Commit("G", "%RETRY%G", 0, 1)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk map[string]map[string]map[string]int64
	if err := json.Unmarshal(raw, &onDisk); err != nil {
		t.Fatalf("file is not the Java offset JSON: %v\n%s", err, raw)
	}
	if got := onDisk["offsetTable"]["T@G"]; !reflect.DeepEqual(got, map[string]int64{"0": 12, "1": 9}) {
		t.Fatalf(`offsetTable["T@G"] = %v`, got)
	}

	again, err := NewConsumerOffsetManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		group, topic string
		queue        int32
		want         int64
		wantOK       bool
	}{
		{group: "G", topic: "T", queue: 0, want: 12, wantOK: true},
		{group: "G", topic: "T", queue: 1, want: 9, wantOK: true},
		{group: "H", topic: "T", queue: 0, want: 3, wantOK: true},
		{group: "H", topic: "T", queue: 1, wantOK: false},
		{group: "G", topic: "%RETRY%G", queue: 0, want: 1, wantOK: true},
	}
	for _, c := range checks {
		if got, ok := again.Query(c.group, c.topic, c.queue); ok != c.wantOK || got != c.want {
			t.Errorf("Query(%s, %s, %d) = %d, %v; want %d, %v", c.group, c.topic, c.queue, got, ok, c.want, c.wantOK)
		}
	}
	if got := again.TopicsByGroup("G"); !reflect.DeepEqual(got, []string{"%RETRY%G", "T"}) {
		t.Errorf("TopicsByGroup(G) = %v", got)
	}
	if got := again.GroupsByTopic("T"); !reflect.DeepEqual(got, []string{"G", "H"}) {
		t.Errorf("GroupsByTopic(T) = %v", got)
	}

	again.RemoveTopic("T")
	if got := again.GroupsByTopic("T"); len(got) != 0 {
		t.Errorf("after RemoveTopic: GroupsByTopic(T) = %v", got)
	}
	again.RemoveGroup("G")
	if got := again.TopicsByGroup("G"); len(got) != 0 {
		t.Errorf("after RemoveGroup: TopicsByGroup(G) = %v", got)
	}
	if err := again.Persist(); err != nil {
		t.Fatal(err)
	}
	third, err := NewConsumerOffsetManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(third.Encode()); got != `{"offsetTable":{}}` {
		t.Fatalf("after removals the table is %s", got)
	}
}

func TestConsumerOffsetManagerLoad(t *testing.T) {
	javaFile := "{\n\t\"offsetTable\":{\n\t\t\"TopicTest@G\":{0:250,1:248},\n\t\t\"%RETRY%G@G\":{0:0}\n\t}\n}"
	tests := []struct {
		name    string
		main    *string // nil: no file
		bak     *string
		wantErr error
		want    map[int32]int64 // offsets of TopicTest@G
	}{
		{name: "fresh start", want: nil},
		{name: "java file with bare keys", main: &javaFile, want: map[int32]int64{0: 250, 1: 248}},
		{name: "empty main falls back to bak", main: clPtr(""), bak: &javaFile, want: map[int32]int64{0: 250, 1: 248}},
		{name: "corrupt main falls back to bak", main: clPtr(`{"offsetTable":{"TopicTest@G":{0:`), bak: &javaFile, want: map[int32]int64{0: 250, 1: 248}},
		{name: "corrupt main without bak", main: clPtr(`{"offsetTable":[`), wantErr: ErrConfigCorrupt},
		{name: "corrupt main and bak", main: clPtr(`{`), bak: clPtr(`}`), wantErr: ErrConfigCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "consumerOffset.json")
			if tc.main != nil {
				clWriteFile(t, path, *tc.main)
			}
			if tc.bak != nil {
				clWriteFile(t, path+".bak", *tc.bak)
			}
			m, err := NewConsumerOffsetManager(path, zerolog.Nop())
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.QueryAll("G", "TopicTest"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("offsets = %v, want %v", got, tc.want)
			}
		})
	}
}

func clPtr[T any](v T) *T { return &v }

func clWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSubscriptionGroupManagerDefaults(t *testing.T) {
	tests := []struct {
		name       string
		autoCreate bool
		group      string
		wantNil    bool
	}{
		{name: "auto-create on", autoCreate: true, group: "G"},
		{name: "auto-create off", autoCreate: false, group: "G", wantNil: true},
		{name: "system group with auto-create off", autoCreate: false, group: "CID_RMQ_SYS_TRANS"},
		{name: "built-in group", autoCreate: false, group: "TOOLS_CONSUMER"},
		{name: "empty name", autoCreate: true, group: "", wantNil: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewSubscriptionGroupManager(filepath.Join(t.TempDir(), "subscriptionGroup.json"), tc.autoCreate, zerolog.Nop(), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := m.FindOrCreate(tc.group)
			if tc.wantNil {
				if cfg != nil {
					t.Fatalf("FindOrCreate(%q) = %+v, want nil", tc.group, cfg)
				}
				return
			}
			want := topicgroup.NewSubscriptionGroupConfig(tc.group)
			if cfg == nil || !reflect.DeepEqual(cfg, want) {
				t.Fatalf("FindOrCreate(%q) = %+v, want %+v", tc.group, cfg, want)
			}
			if m.Find(tc.group) != cfg {
				t.Fatal("second lookup returned another config")
			}
		})
	}
}

func TestSubscriptionGroupManagerPersistence(t *testing.T) {
	clk := clock.NewManual(clientTestEpoch)
	path := filepath.Join(t.TempDir(), "subscriptionGroup.json")
	m, err := NewSubscriptionGroupManager(path, true, zerolog.Nop(), clk)
	if err != nil {
		t.Fatal(err)
	}
	start := m.DataVersion()
	clk.Advance(time.Second)
	m.FindOrCreate("auto")
	custom := topicgroup.NewSubscriptionGroupConfig("custom")
	custom.RetryMaxTimes, custom.NotifyConsumerIdsChangedEnable, custom.ConsumeEnable = 3, false, false
	if err := m.Update(custom); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(&topicgroup.SubscriptionGroupConfig{}); !errors.Is(err, ErrEmptyGroupName) {
		t.Fatalf("nameless update: err = %v", err)
	}
	m.FindOrCreate("doomed")
	if deleted, err := m.Delete("doomed"); !deleted || err != nil {
		t.Fatalf("Delete = %v, %v", deleted, err)
	}
	if deleted, _ := m.Delete("never-there"); deleted {
		t.Fatal("deleted an unknown group")
	}
	v := m.DataVersion()
	if v.Counter != start.Counter+4 || v.Timestamp != clk.Now().UnixMilli() {
		t.Fatalf("data version %+v after 4 changes from %+v", v, start)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w remoting.SubscriptionGroupWrapper
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("file is not a SubscriptionGroupWrapper: %v", err)
	}

	again, err := NewSubscriptionGroupManager(path, false, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.DataVersion(); got != v {
		t.Fatalf("reloaded data version %+v, want %+v", got, v)
	}
	if got := again.Find("custom"); !reflect.DeepEqual(got, custom) {
		t.Fatalf("reloaded custom = %+v, want %+v", got, custom)
	}
	if again.Find("auto") == nil || again.Find("TOOLS_CONSUMER") == nil {
		t.Fatal("auto-created or built-in group lost on reload")
	}
	if again.Find("doomed") != nil {
		t.Fatal("a deleted group came back on reload")
	}
}

func TestSubscriptionGroupConfigDecodeKeepsDefaults(t *testing.T) {
	// A Java admin sends every field; a terser client may not. Absent fields
	// keep Java's initialisers, present ones win, unknown ones are ignored.
	cfg, err := decodeSubscriptionGroupConfig([]byte(`{"groupName":"G","retryMaxTimes":5,"consumeEnable":false,"groupSysFlag":0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := topicgroup.NewSubscriptionGroupConfig("G")
	want.RetryMaxTimes, want.ConsumeEnable = 5, false
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("decoded %+v, want %+v", cfg, want)
	}
	if cfg, err := decodeSubscriptionGroupConfig([]byte("null")); cfg != nil || err != nil {
		t.Fatalf("null body: %+v, %v", cfg, err)
	}
	if _, err := decodeSubscriptionGroupConfig([]byte(`{"groupName":`)); err == nil {
		t.Fatal("truncated body decoded")
	}
}
