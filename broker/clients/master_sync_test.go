package clients

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// TestPutAllFromMasterJavaBody: a Java master's GET_ALL_CONSUMER_OFFSET body
// (fastjson: bare queue ids) replaces the keys it has, whole, and leaves the
// others; Persist writes the result.
func TestPutAllFromMasterJavaBody(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumerOffset.json")
	m, err := NewConsumerOffsetManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m.Commit("G", "T", 0, 99)
	m.Commit("G", "T", 3, 9) // the master's entry for T@G has no queue 3: gone
	m.Commit("L", "Local", 0, 11)
	n, err := m.PutAllFromMaster([]byte(`{"offsetTable":{"T@G":{0:5,1:6},"%RETRY%G@G":{0:0}}}`))
	if err != nil || n != 2 {
		t.Fatalf("PutAllFromMaster: %d %v", n, err)
	}
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	again, err := NewConsumerOffsetManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		group, topic string
		q            int32
		want         int64
		ok           bool
	}{{"G", "T", 0, 5, true}, {"G", "T", 1, 6, true}, {"G", "T", 3, 0, false}, {"L", "Local", 0, 11, true}, {"G", "%RETRY%G", 0, 0, true}} {
		if off, ok := again.Query(c.group, c.topic, c.q); off != c.want || ok != c.ok {
			t.Errorf("%s@%s/%d: %d %v, want %d %v", c.topic, c.group, c.q, off, ok, c.want, c.ok)
		}
	}
}

// TestReplaceFromMasterByDataVersion: the master's groups replace the table
// only when its dataVersion differs, with the stock defaults under the
// fields a body leaves out.
func TestReplaceFromMasterByDataVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscriptionGroup.json")
	m, err := NewSubscriptionGroupManager(path, true, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"dataVersion":{"counter":7,"timestamp":1700000000000},"subscriptionGroupTable":{"MG":{"groupName":"MG","retryMaxTimes":3}}}`)
	if ok, err := m.ReplaceFromMaster(body); !ok || err != nil {
		t.Fatalf("first copy: %v %v", ok, err)
	}
	g := m.Find("MG")
	if g == nil || g.RetryMaxTimes != 3 || !g.ConsumeEnable || m.Find("SELF_TEST_C_GROUP") != nil {
		t.Fatalf("table after the copy: MG %+v", g)
	}
	if m.DataVersion() != (remoting.DataVersion{Counter: 7, Timestamp: 1700000000000}) {
		t.Fatalf("version %+v", m.DataVersion())
	}
	if err := m.Update(topicgroup.NewSubscriptionGroupConfig("LocalG")); err != nil {
		t.Fatal(err)
	}
	// Update moved the version on: the same body replaces again.
	if ok, err := m.ReplaceFromMaster(body); !ok || err != nil || m.Find("LocalG") != nil {
		t.Fatalf("second copy: %v %v", ok, err)
	}
	if ok, err := m.ReplaceFromMaster(body); ok || err != nil {
		t.Fatalf("same version copied again: %v %v", ok, err)
	}
	again, err := NewSubscriptionGroupManager(path, true, zerolog.Nop(), nil)
	if err != nil || again.Find("MG") == nil || again.DataVersion() != m.DataVersion() {
		t.Fatalf("not persisted: %v", err)
	}
}

// FuzzMasterSyncBodies: whatever a master answers, the copies return an
// error or apply, never panic.
func FuzzMasterSyncBodies(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{"T@G":{0:5}}}`))
	f.Add([]byte(`{"dataVersion":{"counter":1,"timestamp":2},"subscriptionGroupTable":{"G":null,"H":{}}}`))
	f.Add([]byte(`{"offsetTable":{"T@G":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		o, _ := NewConsumerOffsetManager("", zerolog.Nop())
		_, _ = o.PutAllFromMaster(body)
		_ = o.Encode()
		g, _ := NewSubscriptionGroupManager("", true, zerolog.Nop(), nil)
		_, _ = g.ReplaceFromMaster(body)
		_ = g.Wrapper()
	})
}
